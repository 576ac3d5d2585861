"""Shared fixtures: small real kernels, guards for the real compilers, and a temporary HOME.

**Requirements** (``need`` below, the one place a test skips): a compiler, tool, Python extra, data
file or GPU that is not here skips its tests with the reason; under a CI flag that is a failure
naming what is missing. ``REQUIREMENT_RULES`` says which flag makes what mandatory. Every test that
needs something goes through ``need`` / ``need_tool`` / ``need_module`` (``require_compiler``,
``require_tool``, ``missing`` and the ``cuda`` fixture are built on it): no test-local
``pytest.skip`` or ``pytest.importorskip`` (tests/suite/test_hermetic_home.py checks the whole directory).

**Hermetic HOME** (issue 26.7): before any test module is imported or any process is spawned,
``_hermetic_environment`` points HOME, the XDG directories, IPython's, Jupyter's, npm's,
matplotlib's and hipexplore's cache at a fresh temporary tree (subprocesses inherit it), and drops
the user's own ``HIPEXPLORE_*`` settings (a team cache server, a shared cache, a dump folder...).
At the end of the session the real HOME is checked for anything changed since the session
started (``pytest_sessionfinish``; tests/suite/test_hermetic_home.py proves it on a fresh fake HOME).
Without a GPU the host's LLC is ``SUITE_HOST_LLC_BYTES``. **Bounds**: each test has its own (below).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

# -- hermetic HOME ------------------------------------------------------------------------------------
#: Set in the environment of a session (and so of every process it starts): the real HOME, and the
#: temporary tree that stands in for it.
REAL_HOME_VAR = "HIPEXPLORE_TEST_REAL_HOME"
TREE_VAR = "HIPEXPLORE_TEST_HOME_TREE"
#: The user's ``HIPEXPLORE_*`` settings kept in the tests: the CI flags, the test switches, and where
#: this machine's ROCm lives (an installation, like PATH). Every other one (cache dir, team server,
#: shared cache, secret, dump dir, limits, workers, LLC size...) is a preference that would make the
#: suite read or write the user's state or depend on it, and is dropped.
KEPT_SETTINGS = (
    "HIPEXPLORE_REQUIRE_COMPILERS",
    "HIPEXPLORE_REQUIRE_GPU",
    "HIPEXPLORE_HIPRTC_LIBRARY",
    "HIPEXPLORE_HIP_DLL",
    "HIPEXPLORE_GIT_REVISION",
)
#: Under the real HOME, what the end-of-session check leaves out: font caches (fontconfig's and
#: matplotlib's font list), which any program may rebuild. More with HIPEXPLORE_TEST_HOME_EXCLUDE
#: (paths relative to HOME, separated by ':').
HOME_EXCLUDES = (".cache/fontconfig", ".fontconfig", ".cache/matplotlib", ".config/matplotlib")


def hermetic_paths(tree: Path) -> dict[str, str]:
    """The environment that puts every per-user location under ``tree`` (``tree/home`` is HOME)."""
    home = tree / "home"
    data = home / ".local" / "share"
    runtime = tree / "runtime"
    return {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(data),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_RUNTIME_DIR": str(runtime),
        "IPYTHONDIR": str(home / ".ipython"),
        "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
        "JUPYTER_DATA_DIR": str(data / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(runtime / "jupyter"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / ".jupyter" / "lab" / "user-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / ".jupyter" / "lab" / "workspaces"),
        "MPLCONFIGDIR": str(home / ".config" / "matplotlib"),
        "npm_config_cache": str(home / ".npm"),
        "npm_config_userconfig": str(home / ".npmrc"),
        "HIPEXPLORE_CACHE_DIR": str(home / ".cache" / "hipexplore"),
    }


#: The host device's LLC in the suite on a machine without a GPU (``suite_settings``): the review VM's
#: sysfs reports a 480 MiB L3, so a host cold reference flushed 1.9 GiB per sample (a tuning-ranking
#: test spent 187 of its 195 s flushing) and host benches held ~2 GB. The suite tests the harness, not
#: the host's cache; tests of the LLC itself set or delete HIPEXPLORE_LLC_BYTES (monkeypatch).
SUITE_HOST_LLC_BYTES = 8 << 20


def suite_settings() -> dict[str, str]:
    """The suite's own settings (after dropping the user's): HIPEXPLORE_LLC_BYTES where no GPU device
    node exists (it would reach a GPU's real L2, which its tests read), unless HIPEXPLORE_TEST_REAL_LLC=1."""
    if os.environ.get("HIPEXPLORE_TEST_REAL_LLC") == "1" or any(
        os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/kfd")
    ):
        return {}
    return {"HIPEXPLORE_LLC_BYTES": str(SUITE_HOST_LLC_BYTES)}


def _hermetic_environment() -> Path:
    """Point every per-user location at a fresh temporary tree, in this process's environment (so in
    every process the tests start); drop the user's HIPEXPLORE_* preferences. Runs when pytest loads
    this file, before any test module (or hipexplore) is imported."""
    tree = Path(tempfile.mkdtemp(prefix="hipexplore-tests-home-"))
    env = hermetic_paths(tree)
    for d in (
        "HOME",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "IPYTHONDIR",
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_DATA_DIR",
    ):
        Path(env[d]).mkdir(parents=True, exist_ok=True)
    Path(env["XDG_RUNTIME_DIR"]).mkdir(mode=0o700)
    os.environ[REAL_HOME_VAR] = os.environ.get("HOME") or os.path.expanduser("~")
    for name in [n for n in os.environ if n.startswith("HIPEXPLORE_") and not n.startswith("HIPEXPLORE_TEST_")]:
        if name not in KEPT_SETTINGS:
            del os.environ[name]
    # a user's extra kernelspec/config search paths would reach outside the tree
    for name in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_PREFER_ENV_PATH", "JUPYTER_PLATFORM_DIRS"):
        os.environ.pop(name, None)
    os.environ.update(env)
    os.environ.update(suite_settings())
    os.environ[TREE_VAR] = str(tree)
    return tree


HOME_TREE = _hermetic_environment()


def _remove_home_tree() -> None:
    shutil.rmtree(HOME_TREE, ignore_errors=True)


# removed at exit too: where this file is imported as a plain module (a test's own pytest run) no
# fixture tears it down; the suite's own exit (os._exit, below) removes it in pytest_unconfigure
atexit.register(_remove_home_tree)
#: The HOME this session found (for a session a test started: that session's temporary HOME).
REAL_HOME = Path(os.environ[REAL_HOME_VAR])
SESSION_START_NS = time.time_ns()


@pytest.fixture(scope="session", autouse=True)
def hermetic_home():
    """The temporary tree every test runs in (set up when this file was loaded: see above); it is
    checked to still be in place for the session, and removed afterwards."""
    env = hermetic_paths(HOME_TREE)
    moved = {k: os.environ.get(k) for k, v in env.items() if os.environ.get(k) != v}
    assert not moved, f"the hermetic environment was changed before the tests ran: {moved}"
    yield HOME_TREE
    _remove_home_tree()


def changed_since(root: Path, since_ns: int, excludes: tuple[str, ...] = ()) -> list[str]:
    """Paths under ``root`` (relative, sorted) created, modified or changed (ctime) at or after
    ``since_ns``; a removed entry shows as its changed parent folder. ``excludes``: relative paths
    left out with everything below them. Links are not followed."""
    skip = {os.path.normpath(os.path.join(str(root), e)) for e in excludes}
    found = []
    stack = [str(root)]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                if e.path in skip:
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_mtime_ns >= since_ns or st.st_ctime_ns >= since_ns:
                    found.append(os.path.relpath(e.path, root))
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
    return sorted(found)


def home_excludes() -> tuple[str, ...]:
    extra = [p for p in os.environ.get("HIPEXPLORE_TEST_HOME_EXCLUDE", "").split(":") if p.strip()]
    return HOME_EXCLUDES + tuple(extra)


def home_check_mode() -> str:
    """``fail``, ``warn`` or ``0``: HIPEXPLORE_TEST_HOME_CHECK when set; else ``fail`` under CI (``CI``
    set, as CI services do, or the README's test command's HIPEXPLORE_REQUIRE_COMPILERS=1, which
    .ci/run runs) and ``warn`` for a person, whose own programs may write to HOME meanwhile."""
    mode = os.environ.get("HIPEXPLORE_TEST_HOME_CHECK", "").strip().lower()
    if mode in ("fail", "warn", "0"):
        return mode
    ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    return "fail" if ci or required() else "warn"


def _check_real_home(session) -> None:
    """Fail the session under CI (a warning for a person: ``home_check_mode``) when anything under
    the real HOME changed while it ran. Off with HIPEXPLORE_TEST_HOME_CHECK=0. A session a test
    starts checks the HOME it found: the starting session's temporary one, or the fake HOME
    tests/suite/test_hermetic_home.py hands it."""
    mode = home_check_mode()
    if mode == "0" or not REAL_HOME.is_dir():
        return
    changed = changed_since(REAL_HOME, SESSION_START_NS, home_excludes())
    if not changed:
        return
    shown = "\n  ".join(changed[:40]) + (f"\n  ... and {len(changed) - 40} more" if len(changed) > 40 else "")
    why = (
        "the tests run in a temporary HOME so that running them never changes a user's caches, settings or "
        "kernelspecs: a test (or a tool it started) escaped it"
    )
    after = (
        "this fails the session under CI"
        if mode == "fail"
        else "a warning only (no CI): if another program of yours wrote these meanwhile, ignore it, or list the paths "
        "in HIPEXPLORE_TEST_HOME_EXCLUDE (colon-separated)"
    )
    msg = (
        f"hermetic HOME: {len(changed)} path(s) under the real HOME {REAL_HOME} changed during the test session "
        f"(the tests run in {HOME_TREE}; font caches left out). Why it matters: {why}; {after}:\n  {shown}"
    )
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line(msg, red=mode != "warn", yellow=mode == "warn")
    else:
        print(msg, file=sys.stderr)
    if mode != "warn" and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


TRIAD_HIP = r"""
extern "C" __global__ void triad(float* a, const float* b, const float* c, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}
"""

#: A templated kernel plus an include, for name expressions and headers (same text for hiprtc and NVRTC).
AXPY_TEMPLATE = r"""
#include "scale.h"
template <typename T>
__global__ void axpy(T* y, const T* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += SCALE * a * x[i];
}
"""
AXPY_HEADER = ("scale.h", "#define SCALE 2\n")
AXPY_FLOAT_MANGLED = "_Z4axpyIfEvPT_PKS0_S0_i"

TRIAD_C = r"""
#include "triad.h"
void triad(float* a, const float* b, const float* c, float s, long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i] + OFFSET;
}
"""
TRIAD_C_HEADER = ("triad.h", "#define OFFSET 0.0f\n")


def slow_c_source(loops: int = 1500) -> str:
    """C that takes gcc -O3 many seconds (about 20 s at 1500 loops on our CPU); tests kill it early."""
    body = [
        f" for (int i{k} = 0; i{k} < n; i{k}++) s += a[i{k}] * {k}.5 / (a[(i{k} + {k}) % n] + 1.0);"
        for k in range(loops)
    ]
    return "double slow(double* a, int n) { double s = 0;\n" + "\n".join(body) + "\n return s; }\n"


# -- requirements: the one place a test skips ---------------------------------------------------------
#: The host CI (``.ci/run``, the README's test command): every compiler, tool, Python extra and
#: repository data file that ``setup.sh --dev`` provides must be here.
COMPILERS = "HIPEXPLORE_REQUIRE_COMPILERS"
#: The GPU job (``scripts/device_check.sh`` on the H200): a CUDA GPU, and what only the GPU tests use
#: with it (``GPU_ONLY`` below).
GPU = "HIPEXPLORE_REQUIRE_GPU"
#: For a condition no machine can be asked to meet (a test of the no-GPU error where a GPU is
#: present): always a skip, with the reason; no flag turns it into a failure.
NOT_REQUIRED = None
#: What only the GPU job must have (``setup.sh`` does not install these; the host CI may lack them):
#:  - torch: a second, independent producer of device buffers for the bring-your-own-kernel tests
#:    (a multi-GB wheel that no host test uses; the H200 image has it);
#:  - cuobjdump: the SASS disassembly of NVRTC cubins (CUDA toolkit; the pip NVRTC has none).
GPU_ONLY = {
    "module torch": "not installed by setup.sh (a multi-GB wheel only the GPU tests use)",
    "tool cuobjdump": "part of the CUDA toolkit, not of the pip NVRTC that setup.sh installs",
}
REQUIREMENT_RULES = f"""\
{COMPILERS}=1 (host CI): a missing compiler, tool, Python extra or repository data file fails by name.
{GPU}=1 (GPU job): a missing CUDA GPU fails by name, and so do {", ".join(sorted(GPU_ONLY))}.
Unset (a developer's machine): each of these skips with its reason.
A condition no machine can be asked for (NOT_REQUIRED, e.g. "no GPU here") is always a skip."""


def flag_set(flag: str | None) -> bool:
    return flag is not None and os.environ.get(flag) == "1"


def required() -> bool:
    """True when missing compilers/tools must fail the suite (``.ci/run`` sets the variable)."""
    return flag_set(COMPILERS)


def need(what: str, reason: str, *, flag: str | None = COMPILERS):
    """``what`` is not here (``reason`` says why): fail naming it when ``flag`` is set to 1, else skip.

    The only way a test in tests/ skips (see ``REQUIREMENT_RULES``): ``flag`` is ``COMPILERS`` for
    what setup.sh --dev provides, ``GPU`` for a GPU and what only the GPU tests use, ``NOT_REQUIRED``
    for a condition no machine can be asked for."""
    if flag_set(flag):
        pytest.fail(f"{what} required ({flag}=1) but unavailable: {reason}", pytrace=False)
    because = "" if flag is not None else " (no CI flag can require it)"
    pytest.skip(f"{what} unavailable{because}: {reason}", allow_module_level=True)


def _flag_of(what: str, flag: str | None | bool) -> str | None:
    if flag is not False:  # an explicit flag (or NOT_REQUIRED)
        return flag  # type: ignore[return-value]
    return GPU if what in GPU_ONLY else COMPILERS


def need_tool(*names: str, flag: str | None | bool = False, hint: str = "setup.sh --dev installs it") -> str:
    """Path of the first executable found among ``names`` (a name on PATH or an absolute path);
    otherwise ``need`` (the flag: ``GPU`` for the tools in ``GPU_ONLY``, else ``COMPILERS``)."""
    for n in names:
        path = shutil.which(n) or (n if os.path.isabs(n) and os.access(n, os.X_OK) else None)
        if path:
            return path
    what = f"tool {names[0]}"
    flag = _flag_of(what, flag)
    need(what, f"none of {', '.join(names)} is on PATH ({GPU_ONLY.get(what, hint)})", flag=flag)
    raise AssertionError("unreachable")


def need_module(name: str, *, flag: str | None | bool = False, hint: str = "setup.sh --dev installs it"):
    """The imported module ``name``; otherwise ``need`` naming it (``GPU`` for torch, see
    ``GPU_ONLY``; else ``COMPILERS``). Replaces ``pytest.importorskip``, which no flag reaches."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        what = f"module {name}"
        flag = _flag_of(what, flag)
        need(what, f"{exc} ({GPU_ONLY.get(what, hint)})", flag=flag)


def missing(what: str, reason: str) -> None:
    """Skip (default) or fail (``HIPEXPLORE_REQUIRE_COMPILERS=1``) because ``what`` is unavailable."""
    need(what, reason, flag=COMPILERS)


def require_compiler(name: str):
    """The registry's compiler ``name`` if it is available; otherwise skip/fail (see ``need``)."""
    from hipexplore.compile.registry import get_compiler

    compiler = get_compiler(name)
    if not compiler.available():
        need(f"compiler {name}", compiler.unavailable_reason(), flag=COMPILERS)
    return compiler


def require_tool(*names: str) -> str:
    """Path of the first executable found among ``names`` (llvm-objdump, chromium, ...)."""
    return need_tool(*names)


OBJDUMP_NAMES = ("llvm-objdump", "llvm-objdump-14", "llvm-objdump-15", "llvm-objdump-16", "llvm-objdump-19")
CHROMIUM_PATHS = ("chromium", "/usr/bin/chromium", "chromium-browser")


def _require(name: str) -> None:
    require_compiler(name)


@pytest.fixture
def need_hiprtc() -> None:
    _require("hiprtc")


@pytest.fixture
def need_nvrtc() -> None:
    _require("nvrtc")


@pytest.fixture
def need_host_cc() -> None:
    _require("host")


def live_group_members(pgid: int, settle: float = 3.0) -> list[int]:
    """PIDs (not zombies) whose process group is ``pgid``: leftovers of a killed worker.

    SIGKILL takes effect asynchronously, so this polls for up to ``settle`` seconds.
    """
    import time

    deadline = time.monotonic() + settle
    while True:
        found = _group_members(pgid)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def _group_members(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            found.append(int(entry))
    return found


# -- a real Redis server for the team tier ------------------------------------------------------------
class RedisServer:
    """``redis-server`` on a free loopback port in a temp dir, bounded like a team server should be
    (``maxmemory`` + ``allkeys-lru``), no persistence. ``stop()``/``start()`` for outage tests."""

    def __init__(self, workdir) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.host = "127.0.0.1"
        self.workdir = workdir
        self.proc = None
        self.url = f"redis://{self.host}:{self.port}/0"

    def start(self) -> None:
        import subprocess
        import time

        exe = require_tool("redis-server")
        self.proc = subprocess.Popen(
            [
                exe,
                "--bind",
                self.host,
                "--port",
                str(self.port),
                "--dir",
                str(self.workdir),
                "--save",
                "",
                "--appendonly",
                "no",
                "--maxmemory",
                "64mb",
                "--maxmemory-policy",
                "allkeys-lru",
                "--protected-mode",
                "yes",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis(host=self.host, port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while True:
            try:
                if client.ping():
                    return
            except redis.RedisError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on {self.url}")
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def client(self):
        import redis

        return redis.Redis(host=self.host, port=self.port)


@pytest.fixture
def redis_server(tmp_path_factory):
    """A fresh real redis-server on 127.0.0.1 (never another address), stopped afterwards."""
    need_module("redis", hint="pip install '.[remote]'; setup.sh --dev installs it")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


# -- GPU tests ----------------------------------------------------------------------------------
def _no_gpu(reason: str) -> None:
    need("a CUDA GPU", reason, flag=GPU)


@pytest.fixture(scope="module")
def cuda():
    from hipexplore.errors import DeviceUnavailable

    try:
        from hipexplore.devices import get_device

        dev = get_device("cuda")
    except DeviceUnavailable as exc:
        _no_gpu(str(exc))
    yield dev
    dev.close()


#: The worker group of tests that write into /usr/local/include or count the resolutions of a
#: lookup that watches it.
USR_LOCAL_INCLUDE = "usr-local-include"


# -- parallel runs (pytest-xdist: the README's command runs ``-n auto --dist loadgroup``) --------------
#: Tests that must share one worker although they sit in different files: the two-user security
#: tests (``useradd``/``groupadd`` lock /etc/passwd and /etc/group, and their users are named by
#: the worker's pid); the tests that put a header into /usr/local/include (a folder every host
#: compile's key watches: a header added there beside another test's lookups makes that lookup
#: resolve again, which a test counting resolutions read as a defect: CI at 11ab44f).
SHARED_FIXTURE_GROUPS = {"users": "two-real-users", "local_header": USR_LOCAL_INCLUDE}


def _xdist_group(item) -> str | None:
    """The worker group of ``item``: its own ``xdist_group`` mark; else a group for a fixture that
    must stay on one worker (``SHARED_FIXTURE_GROUPS``); else its file when it uses a fixture wider
    than a test (a module's Dask cluster, recorded sweep, compiled catalog, JupyterLab: built once,
    as in a serial run, and never by two workers at once); else none (each test goes where a worker
    is free)."""
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return None  # xdist reads the mark itself
    names = getattr(item, "fixturenames", ())
    for fixture, group in SHARED_FIXTURE_GROUPS.items():
        if fixture in names:
            return group
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info is not None else ():
        if any(d.scope in ("module", "package", "class") for d in defs):
            return item.nodeid.split("::", 1)[0]
    return None


#: Tests of a minute or more each on a loaded 2-core host that no group holds (BENCHMARKS.md "Test
#: suite"): xdist hands out the groups first (largest first), then single tests in collection order,
#: so these are put first among the single tests; last, one would run alone at the end.
LONG_SINGLE_TESTS = ("tests/docs/test_doc_examples.py::test_every_example_of_the_page_runs", "tests/browser/")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup``, mark each test with its group (``_xdist_group``) before xdist
    reads the marks (it runs after this hook: tryfirst), and put the long single tests first."""
    # on an xdist worker the option reads dist="no" and loadgroup=True (xdist.remote.setup_config); the
    # controller only schedules by the "@group" suffix the workers add: so the workers must mark
    if getattr(config.option, "dist", "no") != "loadgroup" and not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        group = _xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_SINGLE_TESTS))  # stable: the rest keep their order


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown (and never called) without it
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per CPU, and one more: a good part of the suite waits on the
    processes it starts (compilers, CLIs, servers, browsers), so a CPU would otherwise idle."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return n + 1


# -- every test's own bound, hard -------------------------------------------------------------------
# pytest-timeout ends a test past its bound (its ``timeout`` mark, else pyproject.toml's) with SIGALRM:
# a failure naming it, the session going on. Neither its signal nor its "thread" method ends a C call
# that holds the GIL (9**9**9 without the ``**`` bound of kernels/geometry.py: minutes in one call).
# faulthandler's watchdog, a C thread, does: HARD_MARGIN_S after the bound it writes every thread's
# traceback (the test's frame among them) to the real stderr and ends the process (under xdist the
# controller names the test its worker crashed in and goes on). tests/suite/test_bounds.py mounts both.
HARD_MARGIN_S = 10.0


def bound_of(item) -> float:
    """``item``'s bound in seconds: its ``timeout`` mark's, else the ini ``timeout`` (0: none)."""
    mark = item.get_closest_marker("timeout")
    value = (
        (mark.args[0] if mark.args else mark.kwargs.get("timeout", 0))
        if mark is not None
        else item.config.getini("timeout")
    )
    try:
        return max(0.0, float(value or 0))
    except (TypeError, ValueError):
        return 0.0


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    import faulthandler

    try:  # the real stderr, which pytest's faulthandler writes to (absent with -p no:faulthandler)
        from _pytest.faulthandler import fault_handler_stderr_fd_key

        fd = item.config.stash[fault_handler_stderr_fd_key]
    except (ImportError, KeyError):
        fd = None
    bound = bound_of(item)
    if fd is None or bound <= 0:
        return (yield)
    faulthandler.dump_traceback_later(bound + HARD_MARGIN_S, exit=True, file=fd)
    try:
        return (yield)
    finally:
        faulthandler.cancel_dump_traceback_later()


# -- process exit -------------------------------------------------------------------------------
# A fresh-clone run of the whole suite (CI) passed every test and then died with SIGSEGV while the
# interpreter tore down: an exit-time destructor of one of the native libraries the suite loads
# into one process (comgr/hiprtc of ROCm 5.2, libclang, Triton's LLVM, NVRTC) — no test runs them
# together on purpose, and no single file reproduces it. The results are reported by then, so the
# suite leaves with its own exit status through os._exit instead of running those destructors.
# (The library itself runs hiprtc and Triton in worker processes, where an exit crash loses nothing.)
_EXIT = {"status": None}


def pytest_sessionfinish(session, exitstatus):
    if not hasattr(session.config, "workerinput"):  # an xdist worker found the controller's temporary
        _check_real_home(session)  # HOME; the controller checks the real one, over the whole run
    _EXIT["status"] = int(session.exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    _remove_home_tree()
    if "cliproc" in sys.modules:  # the CLI zygote (tests/cliproc.py): ended and waited for, os._exit runs no atexit
        sys.modules["cliproc"].shutdown()
    if _EXIT["status"] is None or os.environ.get("HIPEXPLORE_TEST_NORMAL_EXIT") == "1":
        return

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_EXIT["status"])
