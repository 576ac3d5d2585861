#!/usr/bin/env bash
# One-shot set-up for a fresh Debian/Ubuntu machine (idempotent; safe to re-run).
#   ./setup.sh          runtime: ROCm hiprtc packages (apt, as root), .venv with hipexplore[hip,cuda,notebook]
#   ./setup.sh --dev    also the test tools: pytest and pytest-xdist (the tests run in parallel), Playwright (driving
#                       Debian's chromium), pyelftools,
#                       redis-py and Debian's redis-server (the tests start their own on a loopback port),
#                       the extra cluster (Dask distributed: the cluster tests start real workers; cryptography:
#                       local:N clusters speak TLS under a key of their own), and
#                       the extra docs (MkDocs + mkdocstrings), then builds the docs with --strict
# Environment: HIPEXPLORE_VENV (default .venv), HIPEXPLORE_PYTHON (default python3),
#              HIPEXPLORE_SKIP_APT=1 to never call apt-get.
set -euo pipefail
cd "$(dirname "$0")"
DEV=0
for a in "$@"; do case "$a" in --dev) DEV=1 ;; *) echo "setup.sh: unknown argument '$a' (expected --dev)" >&2; exit 2 ;; esac; done
VENV=${HIPEXPLORE_VENV:-.venv}
PY=${HIPEXPLORE_PYTHON:-python3}
say() { echo "[setup] $*"; }
# 3.11: hipexplore starts its kernel and JupyterLab with -P (hipexplore/interpreter.py; pyproject.toml)
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
  || { say "HIPEXPLORE_PYTHON=$PY is not a Python 3.11 or newer; hipexplore needs >= 3.11"; exit 2; }

APT_PKGS=()
rocm_version=""
if [ -r /opt/rocm/.info/version ]; then
  rocm_version=$(cut -d- -f1 /opt/rocm/.info/version)
  say "found ROCm $rocm_version in /opt/rocm: using it"
elif ! ldconfig -p 2>/dev/null | grep 'libamdhip64.so.5' >/dev/null; then  # no -q: an early exit would SIGPIPE ldconfig under pipefail
  APT_PKGS+=(libamdhip64-5 libamd-comgr2 rocm-device-libs libhiprtc-builtins5)
fi
if [ "$DEV" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || APT_PKGS+=(chromium)
  command -v llvm-objdump >/dev/null 2>&1 || ls /usr/bin/llvm-objdump-* >/dev/null 2>&1 || APT_PKGS+=(llvm)   # AMDGPU disassembly in tests
  command -v redis-server >/dev/null 2>&1 || APT_PKGS+=(redis-server)   # the Redis cache tier's tests (a real server)
fi
if ! "$PY" -c 'import venv, ensurepip' >/dev/null 2>&1; then APT_PKGS+=(python3-venv); fi

if [ ${#APT_PKGS[@]} -gt 0 ]; then
  if [ "${HIPEXPLORE_SKIP_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "apt-get install ${APT_PKGS[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || say "apt-get update failed; trying the install with the lists at hand"
    apt-get install -y -qq --no-install-recommends "${APT_PKGS[@]}" >/dev/null
  else
    say "MISSING (not installed: not root, no apt-get, or HIPEXPLORE_SKIP_APT=1): ${APT_PKGS[*]}"
    say "  the hiprtc compiler will report itself unavailable; NVRTC and the host compiler still work"
  fi
fi

# hip-python: a release matching the installed ROCm (>= 6); ROCm 5 (Debian) has none, so 7.2.2 is
# used with hip.chiprtc.DLL pointed at libamdhip64.so.5 (hipexplore/compile/hiprtc.py does that).
HIP_SPEC="hip-python==7.2.2.562.43"
if [ -n "$rocm_version" ]; then
  maj=${rocm_version%%.*}; rest=${rocm_version#*.}; min=${rest%%.*}
  if [ "$maj" -ge 6 ] 2>/dev/null; then HIP_SPEC="hip-python>=${maj}.${min},<${maj}.$((min+1))"; fi
fi

if [ ! -x "$VENV/bin/python" ]; then say "creating $VENV"; "$PY" -m venv "$VENV"; fi
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
EXTRAS="cuda,notebook"; [ "$DEV" = 1 ] && EXTRAS="$EXTRAS,remote,cluster,dev,triton,docs,interop"
say "pip install -e .[$EXTRAS] '$HIP_SPEC'"
"${PIP[@]}" -e ".[$EXTRAS]" "$HIP_SPEC" 2>&1 | grep -v "^WARNING: Location" || true
"$VENV/bin/python" -c 'import hipexplore' || { say "hipexplore failed to import"; exit 1; }
# the package's bytecode, written once: an editable install compiles nothing, and under PYTHONDONTWRITEBYTECODE
# no process writes it, so every process that imports hipexplore (each CLI, sweep and compile worker, Jupyter
# kernel: hundreds in the test suite) compiled its modules from source again (~0.2 s of CPU for `hipexplore bench`)
"$VENV/bin/python" -m compileall -q hipexplore >/dev/null || say "could not write hipexplore's bytecode (it still runs)"
if [ "$DEV" = 1 ] && [ ! -d .hip-python-10/rocm ]; then  # tests run hiprtc/HIP through hip-python 10's rocm.bindings too
  say "hip-python 10 (rocm.bindings layout) into .hip-python-10 for tests/compile/test_hip_bindings.py"
  "${PIP[@]}" --no-deps --target .hip-python-10 "hip-python==10.0.0.0.1.2" "rocm-bindings-hip==10.0.0.0.1.2" \
    "rocm-bindings-core==10.0.0.0.1.2" 2>&1 | grep -v "^WARNING" || true
fi
say "Jupyter kernel 'hipexplore' (your own python3 kernel is left alone)"
scripts/install_kernel.sh "$VENV/bin/python" >/dev/null || say "could not install the Jupyter kernel hipexplore (notebooks need it; 'hipexplore report' does not)"
if [ "$DEV" = 1 ]; then  # the docs site, warnings as errors (a broken link or a vanished API name fails)
  say "docs: mkdocs build --strict"
  site=$(mktemp -d)
  "$VENV/bin/python" -m mkdocs build --strict --quiet --site-dir "$site" || { rm -rf "$site"; say "the docs do not build (mkdocs build --strict, warnings above)"; exit 1; }
  rm -rf "$site"
fi
if [ "$DEV" = 1 ]; then  # the test suite needs every compiler and tool: say which is missing, by name
  "$VENV/bin/python" - <<'PY' || { say "the test suite cannot run here: see the MISSING lines above"; exit 1; }
import shutil, sys
from hipexplore.compile.registry import get_compiler
bad = []
for name in ("hiprtc", "nvrtc", "host", "triton"):
    c = get_compiler(name)
    if not c.available():
        bad.append(f"compiler {name}: {c.unavailable_reason()}")
if not any(shutil.which(n) for n in ("llvm-objdump", "llvm-objdump-14", "llvm-objdump-15", "llvm-objdump-16", "llvm-objdump-19")):
    bad.append("tool llvm-objdump (Debian package llvm)")
if not shutil.which("chromium"):
    bad.append("tool chromium (Debian package chromium)")
if not shutil.which("redis-server"):
    bad.append("tool redis-server (Debian package redis-server)")
for b in bad:
    print(f"[setup] MISSING for the tests: {b}")
sys.exit(1 if bad else 0)
PY
fi
say "done: $("$VENV/bin/python" -c 'import hipexplore; print(hipexplore.__version__)') in $VENV"
