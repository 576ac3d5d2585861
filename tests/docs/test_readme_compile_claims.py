"""The compile side's claims in README.md, each checked against what the code really does, with the
real CLI (a child process), the real compilers and the real libraries of this machine.

  * ``hipexplore info``: compilers with versions and targets, devices, the cache's location and size;
  * errors: one line and exit status 2; ``HIPEXPLORE_DEBUG=1`` shows the traceback;
  * the compile-worker default: ``HIPEXPLORE_COMPILE_WORKERS``, else min(4, CPUs), counted in processes;
  * the hiprtc library search order and the ``HIPEXPLORE_HIPRTC_LIBRARY`` override;
  * NVRTC located through cuda-pathfinder first;
  * hip-python >= 10 (no ``hip.chiprtc``) detected and refused with a clear message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import cliproc
from conftest import TRIAD_HIP, require_compiler, slow_c_source
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache

REPO = Path(__file__).resolve().parents[2]


def run_cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """``python -m hipexplore ARGS`` in a child process, as a user runs it (forked from a preloaded
    interpreter: tests/cliproc.py)."""
    full = dict(os.environ)
    full.pop("HIPEXPLORE_DEBUG", None)
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
    full.update(env or {})
    return cliproc.run(args, cwd=REPO, env=full, timeout=timeout)


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=full, timeout=timeout
    )


# ----------------------------------------------------------------------------------- hipexplore info
def _populated_cache_dir(tmp_path: Path) -> tuple[Path, int, int]:
    """A disk cache with two real host compiles in it: (dir, entries, bytes of the entry files)."""
    require_compiler("host")
    root = tmp_path / "cache"
    cache = CompileCache(disk_dir=root)
    for v in (1, 2):
        cache.get_or_compile(CompileRequest(Source("a.c", f"int a(void) {{ return {v}; }}\n"), "host", "host"))
    files = [p for p in root.rglob("*.hxc")]
    return root, len(files), sum(p.stat().st_size for p in files)


def test_info_json_describes_compilers_devices_and_the_cache(tmp_path):
    from hipexplore.compile.registry import backend_class

    root, entries, nbytes = _populated_cache_dir(tmp_path)
    assert entries == 2
    proc = run_cli(
        ["info", "--json"],
        env={
            "HIPEXPLORE_CACHE_DIR": str(root),
            "HIPEXPLORE_CACHE_MAX_ENTRIES": "77",
            "HIPEXPLORE_CACHE_DISK_MAX_BYTES": "123456789",
        },
    )
    assert proc.returncode == 0, proc.stderr
    # strict JSON: a NaN (an unknown peak bandwidth) is not JSON and breaks jq and browsers
    info = json.loads(proc.stdout, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c} in info --json"))
    import hipexplore

    assert info["hipexplore"] == hipexplore.__version__
    rows = {c["name"]: c for c in info["compilers"]}
    assert list(rows) == ["hiprtc", "nvrtc", "host", "triton"]
    for name in ("hiprtc", "nvrtc", "host", "triton"):
        comp = require_compiler(name)  # each is installed here (and required in CI)
        backend = backend_class(name)()
        ident = backend.identity()
        row = rows[name]
        assert row["available"] is True and row["reason"] == ""
        assert row["version"] == ident.version and row["library"] == ident.library and row["stamp"] == ident.stamp
        assert row["targets"] == list(backend.targets()) and row["targets"]
        assert row["isolated_by_default"] is (name in ("hiprtc", "triton"))
        assert comp.name == name
    assert {"gfx90a", "gfx908"} <= set(rows["hiprtc"]["targets"]) and "sm_90" in rows["nvrtc"]["targets"]
    assert rows["host"]["targets"] == ["host"]
    crashing = backend_class("hiprtc")().crashing_targets()  # read from this comgr, not assumed
    notes = " ".join(rows["hiprtc"]["notes"])
    if crashing:
        assert all(t in notes for t in crashing) and "CompilerCrashed" in notes
    else:
        assert notes == ""
    devices = {d["kind"]: d for d in info["devices"]}
    assert list(devices) == ["hip", "cuda", "host"]
    host = devices["host"]
    assert host["available"] is True and host["target"] == "host" and host["compiler"] == "host"
    assert host["compute_units"] == os.cpu_count() and host["llc_bytes"] > 0
    for kind in ("hip", "cuda"):
        d = devices[kind]
        if d["available"]:  # a GPU machine: a named device with a target for its compiler
            assert d["name"] and d["target"]
        else:
            assert d["reason"] and kind.upper() in d["reason"]
    assert info["cache"] == {
        "disk_dir": str(root),
        "max_entries": 77,
        "max_bytes": 256 * 1024**2,
        "disk_max_bytes": 123456789,
        "disk_entries": entries,
        "disk_bytes": nbytes,
        "shared": "private",
        "remote": "",
    }


def test_info_text_names_the_same_things(tmp_path):
    root, entries, nbytes = _populated_cache_dir(tmp_path)
    proc = run_cli(["info"], env={"HIPEXPLORE_CACHE_DIR": str(root)})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    from hipexplore.compile.registry import backend_class

    for name in ("hiprtc", "nvrtc", "host"):
        require_compiler(name)
        backend = backend_class(name)()
        assert f"  {name:<7} {backend.identity().version}  [{backend.identity().library}]" in out
        targets = list(backend.targets())
        # every target, wrapped (#26.12: the list was cut before gfx90a): read back whole from the wrapped lines
        block = out[out.index(f"  {name:<7} ") :]
        head = block.index(f"targets ({len(targets)}): ")
        listed = " ".join(ln.strip() for ln in block[head:].split("\n") if ln.strip())
        listed = listed.split("): ", 1)[1]
        assert all(t in listed.replace(",", " ").split() for t in targets), listed[:400]
    assert f"disk dir: {root}" in out and f"disk: {entries} entries, {nbytes} bytes" in out


# ----------------------------------------------------------------------------------- errors and HIPEXPLORE_DEBUG
BAD = ["tune-replay", "--compiler", "host", "--target", "gfx90a", "--limit", "1"]


@pytest.mark.parametrize("debug", [None, "0", "off"])
def test_library_error_is_one_line_and_exit_2(debug):
    proc = run_cli(BAD, env={"HIPEXPLORE_DEBUG": debug} if debug is not None else None)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hipexplore tune-replay: error: ") and "'gfx90a'" in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_hipexplore_debug_shows_the_traceback():
    proc = run_cli(BAD, env={"HIPEXPLORE_DEBUG": "1"})
    assert proc.returncode == 1  # the exception escaped main(): Python's own exit status
    assert "Traceback (most recent call last)" in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("hipexplore.errors.ConfigError: ") and "'gfx90a'" in last
    assert "check_target" in proc.stderr  # the frames down to where it was raised


# ----------------------------------------------------------------------------------- compile workers
def _peak_workers(comp, tasks: int) -> tuple[int, int]:
    """Run ``tasks`` concurrent compiles of ~1 s through ``comp``; (peak busy workers, workers started)."""
    peak = 0
    pids: set[int] = set()
    done = threading.Event()
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            comp.compile(CompileRequest(Source("slow.c", slow_c_source(60) + f"int tag{i};\n"), "host", "host"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(tasks)]
    for t in threads:
        t.start()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            busy = comp.busy_pids()
            pids.update(comp.worker_pids())
            peak = max(peak, len(busy))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    for t in threads:
        t.join(300)
    done.set()
    watcher.join()
    assert not errors, errors
    return peak, len(pids)


@pytest.mark.parametrize("env,expected", [(None, "default"), ("3", 3)])
def test_compile_worker_default_is_env_else_min_4_cpus(monkeypatch, env, expected):
    """The isolated compiler really runs that many worker processes at once, and no more."""
    from hipexplore.compile.registry import new_compiler

    require_compiler("host")
    if env is None:
        monkeypatch.delenv("HIPEXPLORE_COMPILE_WORKERS", raising=False)
        expected = min(4, os.cpu_count() or 1)
    else:
        monkeypatch.setenv("HIPEXPLORE_COMPILE_WORKERS", env)
    comp = new_compiler("host", isolated=True)
    try:
        assert comp.workers == expected
        peak, started = _peak_workers(comp, expected + 2)
        assert peak == expected and started == expected
    finally:
        comp.close()


def test_hiprtc_registry_default_is_isolated_with_the_default_workers(monkeypatch):
    from hipexplore.compile.registry import get_compiler

    monkeypatch.setenv("HIPEXPLORE_COMPILE_WORKERS", "2")
    assert get_compiler("hiprtc").workers == 2
    monkeypatch.delenv("HIPEXPLORE_COMPILE_WORKERS")
    assert get_compiler("hiprtc").workers == min(4, os.cpu_count() or 1)


# ----------------------------------------------------------------------------------- hiprtc library search
def _stand_in_library(tmp_path: Path, soname: str, with_symbol: bool) -> Path:
    """A real shared library built by cc under a hiprtc library name, with or without the
    ``hiprtcCreateProgram`` symbol the probe looks for (it is never called: only loaded)."""
    host = require_compiler("host")
    body = "int hiprtcCreateProgram(void) { return 0; }\n" if with_symbol else "int hx_not_hiprtc(void) { return 0; }\n"
    code = host.compile(CompileRequest(Source("lib.c", body), "host", "host"))
    path = tmp_path / soname
    path.write_bytes(code.binary)
    return path


PROBE = """
import json
from hipexplore.compile.hiprtc import DEFAULT_LIBRARIES, probe_library
name, real, failures = probe_library(DEFAULT_LIBRARIES)
print(json.dumps({"name": name, "real": real, "failures": failures}))
"""


def test_hiprtc_search_order_on_this_machine():
    """README: ``libhiprtc.so``, ``.so.7``, ``.so.6``, then ROCm 5's ``libamdhip64.so.5``. Here
    (Debian ROCm 5.2) the first three are absent and were tried, in that order, before the fourth."""
    from hipexplore.compile.hiprtc import DEFAULT_LIBRARIES, HiprtcCompiler, probe_library

    require_compiler("hiprtc")
    assert DEFAULT_LIBRARIES == ("libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libamdhip64.so.5")
    name, real, failures = probe_library(DEFAULT_LIBRARIES)
    tried = [f.split(":", 1)[0] for f in failures]
    assert tried == list(DEFAULT_LIBRARIES[: DEFAULT_LIBRARIES.index(name)])
    assert HiprtcCompiler().identity().library == real and os.path.exists(real)


def test_hiprtc_search_takes_the_first_candidate_with_the_symbol(tmp_path):
    """Stand-ins under the ROCm >= 6 names, found through LD_LIBRARY_PATH by the real dlopen:
    ``libhiprtc.so`` without the symbol is passed over, ``.so.7`` wins over ``.so.6`` and over
    the ROCm 5 library."""
    _stand_in_library(tmp_path, "libhiprtc.so", with_symbol=False)
    seven = _stand_in_library(tmp_path, "libhiprtc.so.7", with_symbol=True)
    _stand_in_library(tmp_path, "libhiprtc.so.6", with_symbol=True)
    proc = run_python(PROBE, env={"LD_LIBRARY_PATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["name"] == "libhiprtc.so.7" and got["real"] == str(seven.resolve())
    assert got["failures"] == ["libhiprtc.so: loads but has no hiprtcCreateProgram symbol"]
    (tmp_path / "libhiprtc.so.7").unlink()
    got = json.loads(run_python(PROBE, env={"LD_LIBRARY_PATH": str(tmp_path)}).stdout)
    assert got["name"] == "libhiprtc.so.6"
    assert [f.split(":", 1)[0] for f in got["failures"]] == ["libhiprtc.so", "libhiprtc.so.7"]


def test_hiprtc_library_override(monkeypatch, tmp_path):
    """HIPEXPLORE_HIPRTC_LIBRARY replaces the search with one name or path."""
    from hipexplore.compile.hiprtc import DEFAULT_LIBRARIES, HiprtcCompiler, probe_library

    require_compiler("hiprtc")
    _, real, _ = probe_library(DEFAULT_LIBRARIES)
    monkeypatch.setenv("HIPEXPLORE_HIPRTC_LIBRARY", real)
    c = HiprtcCompiler()
    assert c.available() and c.identity().library == real
    obj = c.compile(CompileRequest(Source("t.hip", TRIAD_HIP), "hiprtc", "gfx90a", kernels=("triad",)))
    from elfcheck import assert_amdgpu_code_object

    assert_amdgpu_code_object(obj.binary, "gfx90a", "triad")
    # an override is the only candidate: a library without hiprtc is refused by name, not searched past
    bogus = _stand_in_library(tmp_path, "libhiprtc.so.99", with_symbol=False)
    monkeypatch.setenv("HIPEXPLORE_HIPRTC_LIBRARY", str(bogus))
    c = HiprtcCompiler()
    assert not c.available()
    reason = c.unavailable_reason()
    assert "$HIPEXPLORE_HIPRTC_LIBRARY" in reason and str(bogus) in reason and "no hiprtcCreateProgram" in reason
    assert "libamdhip64.so.5" not in reason


# ----------------------------------------------------------------------------------- NVRTC through cuda-pathfinder
NVRTC_TWO_COPIES = """
import ctypes, json, shutil, sys
from hipexplore.compile.nvrtc import NvrtcCompiler
from hipexplore.compile._common import loaded_libraries
c = NvrtcCompiler()
c.library_path()  # cuda-bindings loads its libnvrtc (the first call does)
real = [p for p in loaded_libraries(r"^libnvrtc\\.so")][0]
copy = sys.argv[1] + "/libnvrtc.so.13"
shutil.copy(real, copy)
ctypes.CDLL(copy)  # a second libnvrtc mapped, as when torch brings its own
print(json.dumps({"mapped": sorted(set(loaded_libraries(r"^libnvrtc\\.so"))), "library": c.identity().library}))
"""


def test_nvrtc_library_comes_from_cuda_pathfinder_first(tmp_path):
    """With two libnvrtc files mapped, /proc/self/maps cannot say which one compiles; the identity
    still names the one cuda-pathfinder resolves (what cuda-bindings loads)."""
    require_compiler("nvrtc")
    from cuda.pathfinder import load_nvidia_dynamic_lib

    expected = os.path.realpath(load_nvidia_dynamic_lib("nvrtc").abs_path)
    proc = run_python(NVRTC_TWO_COPIES.replace("sys.argv[1]", repr(str(tmp_path))))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert len(got["mapped"]) == 2 and expected in got["mapped"]
    assert got["library"] == expected


# ----------------------------------------------------------------------------------- hip-python >= 10
def test_hip_python_without_chiprtc_is_refused_with_a_clear_message(tmp_path):
    """A ``hip`` package without ``chiprtc`` placed first on sys.path (an empty package, nothing that
    pretends to compile) and no ``rocm.bindings``: neither layout is there (hip-python 10.x itself,
    whose ``rocm.bindings`` is used, is tested in tests/compile/test_hip_bindings.py). The backend must say
    unavailable, naming both layouts, and never reach a dlopen."""
    require_compiler("hiprtc")  # the real one works here: only the layout differs in the child
    pkg = tmp_path / "newlayout" / "hip"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1])\n"
        "from hipexplore.compile.hiprtc import HiprtcCompiler\n"
        "import hip; assert hip.__file__.startswith(sys.argv[1]), hip.__file__\n"
        "c = HiprtcCompiler()\n"
        "print(json.dumps({'available': c.available(), 'reason': c.unavailable_reason()}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "newlayout")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))),
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["available"] is False
    assert "hip.chiprtc is not importable" in got["reason"] and "rocm.bindings" in got["reason"]
    assert "hip-python 6.x-7.x" in got["reason"]


def test_installed_hip_python_layout_is_the_supported_one(monkeypatch):
    """The decision on the installed hip-python (7.x): ``hip.chiprtc`` with a DLL switch, which the
    backend points at the library its own search found before anything loads."""
    monkeypatch.delenv("HIPEXPLORE_HIPRTC_LIBRARY", raising=False)
    from hipexplore.compile.hiprtc import DEFAULT_LIBRARIES, HiprtcCompiler, probe_library

    comp = HiprtcCompiler()
    require_compiler("hiprtc")
    from hip import chiprtc

    assert comp.available()
    assert hasattr(chiprtc, "DLL")
    name, _, _ = probe_library(DEFAULT_LIBRARIES)
    assert chiprtc.DLL == name.encode()
    assert dict(comp.identity().extra)["hip_python"].split(".")[0] in {"6", "7"}


# ----------------------------------------------------------------------------------- registry environment
def test_registry_follows_cc_and_the_hiprtc_library_setting(monkeypatch):
    """A shared compiler is built for the environment it read: changing ``CC`` or
    ``HIPEXPLORE_HIPRTC_LIBRARY`` (as in a notebook) gives another instance, going back gives the
    first one again."""
    from hipexplore.compile.registry import get_compiler

    require_compiler("host")
    monkeypatch.delenv("CC", raising=False)
    host = get_compiler("host")
    monkeypatch.setenv("CC", "/nonexistent/hipexplore-cc")
    other = get_compiler("host")
    assert other is not host and not other.available() and "hipexplore-cc" in other.unavailable_reason()
    monkeypatch.delenv("CC")
    assert get_compiler("host") is host
    require_compiler("hiprtc")
    monkeypatch.delenv("HIPEXPLORE_HIPRTC_LIBRARY", raising=False)
    hip = get_compiler("hiprtc")
    monkeypatch.setenv("HIPEXPLORE_HIPRTC_LIBRARY", "libhipexplore-no-such-hiprtc.so.0")
    bogus = get_compiler("hiprtc")
    assert bogus is not hip and not bogus.available()
    monkeypatch.delenv("HIPEXPLORE_HIPRTC_LIBRARY")
    assert get_compiler("hiprtc") is hip


@pytest.mark.parametrize("value", ["0", "-1", "0.0"])
def test_a_non_positive_compile_timeout_is_refused(monkeypatch, value):
    from hipexplore.compile.registry import get_compiler
    from hipexplore.errors import ConfigError

    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", value)
    with pytest.raises(ConfigError, match=r"HIPEXPLORE_COMPILE_TIMEOUT=.* is invalid: expected a positive"):
        get_compiler("host")
