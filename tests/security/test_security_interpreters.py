"""Modules planted in the working directory never run in a Python hipexplore starts.

The attack: a world-writable, sticky folder (like ``/tmp``) where someone else planted, for every
top-level module name a child interpreter could import (the standard library's names and every name
on this process's path: ``json``, ``importlib``, ``random``, ``pickle``, ``numpy``, ``triton``,
``ipykernel_launcher`` ... computed here, see ``planted_names``, and checked to cover what the
workers' own modules import), a module that leaves a marker naming the process that imported it and
then hands over to the real module (so a vulnerable run still finishes and shows EVERY name it
imported from the folder). The victim runs hipexplore there, the way a user does (a console script,
whose own folder, not the working directory, is first on its path):

  * ``hipexplore compile k.hip --compiler hiprtc`` (an isolated compile worker and the hiprtc
    dependency helper), ``--compiler triton`` (a Triton compile worker), ``tune-replay --jobs 2``
    (one isolated worker per job), a host sweep with ``HIPEXPLORE_SWEEP_WORKER=1`` (the sweep
    worker), the hiprtc dependency helper on its own;
  * ``hipexplore report``'s kernel (``execute_notebook``: its kernelspec), the kernelspec
    ``scripts/install_kernel.sh`` installs (started by ``jupyter_client`` as JupyterLab does), and
    ``hipexplore lab`` (its real command line, with ``--version``);
  * once with a second real user (``twousers``) planting and the victim user running.

No marker may appear, and every command must succeed. Before the change (children started as
``python -c`` / ``python -m`` / a kernelspec without ``-P``) every launcher test here failed on its
markers: 24 planted modules ran in the hiprtc compile (``json`` first, in the worker's boot code), 3
in the dependency helper alone, 23 in the Triton compile, 28 in ``tune-replay --jobs 2``, 17 in the
host sweep's worker, 3 in the report's kernel (``ipykernel_launcher``, ``numpy``, ``pandas``), 6 with
the installed kernelspec (``install_kernel.sh``'s own ``python -m ipykernel`` among them), 1 in
JupyterLab, and 21 as the victim user, planted by the attacker.

The other side of the same bug: a user's own ``json.py`` / ``random.py`` in a project folder broke
the workers; it must not.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need, need_module, require_compiler
from twousers import users  # noqa: F401  (users: the module's fixture)

REPO = Path(__file__).resolve().parents[2]
MARK = "hx-imported-"

#: The planted module: a marker (its name, the pid, the process's command line, the uid), then the
#: real module, imported with the folder off the path, takes its place in ``sys.modules``. Run as a
#: program (``python -m NAME`` in the folder) it runs the real program. It imports nothing itself.
SHIM = r"""
import sys
_os = sys.modules["os"]
_d = _os.path.realpath(__file__.rpartition("/")[0])
_name = __spec__.name if __spec__ is not None else __name__
try:
    with open(_d + "/@MARK@" + _name + "-" + str(_os.getpid()), "w") as _f:
        _f.write(str(_os.getuid()) + " " + " ".join(a[:100] for a in sys.orig_argv[:5]))
except OSError:
    pass
_saved = sys.path[:]
sys.path[:] = [p for p in _saved if _os.path.realpath(p or ".") != _d]
try:
    if __name__ == "__main__":
        import runpy
        runpy.run_module(_name, run_name="__main__", alter_sys=True)
    else:
        del sys.modules[_name]
        __import__(_name)
finally:
    sys.path[:] = _saved
""".replace("@MARK@", MARK)

#: The child modules whose imports the planted names must cover (``test_the_planted_names_cover_the_children``).
CHILD_MODULES = (
    "hipexplore.compile.worker_main",
    "hipexplore.compile.hiprtc",
    "hipexplore.bench.worker_main",
    "hipexplore.compile.tritonc",
    "hipexplore.bench.sweeprun",
    "hipexplore.devices.host",
    "hipexplore.compile.hip_bindings",
    "triton",
    "ipykernel_launcher",
)

HIP_SRC = """extern "C" __global__ void triad(float* a, const float* b, const float* c, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}
"""
TRITON_SRC = """import triton
import triton.language as tl


@triton.jit
def hx_scale(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2.0, mask=i < n)
"""
#: A console script as pip writes it: run as ``python SCRIPT``, its own folder is first on its path.
CONSOLE_SCRIPT = "import sys\nfrom hipexplore.cli import main\nsys.exit(main())\n"
#: What a kernel started in the folder runs: the imports of a report notebook's first cell.
KERNEL_CELL = "import json, random, pickle, numpy, pandas\nimport hipexplore.report\nprint('kernel ok')\n"


# -- the names -------------------------------------------------------------------------------------
def _names_in(folder: str) -> set[str]:
    """Top-level module names a folder on the path offers: modules, packages, namespace packages,
    extension modules."""
    out = set()
    try:
        entries = os.listdir(folder)
    except OSError:
        return out
    for entry in entries:
        if os.path.isdir(os.path.join(folder, entry)):
            if entry.isidentifier():
                out.add(entry)
        elif entry.endswith((".py", ".so", ".pyc")) and not entry.startswith("."):
            out.add(entry.split(".", 1)[0])  # '_sysconfigdata__linux_x86_64-linux-gnu' is imported too
    return out


def planted_names() -> set[str]:
    """Every top-level name a child could import: the standard library's and every folder's on this
    process's path (site-packages, this checkout, .hip-python-10 ...), less the built-in modules (found
    before any path)."""
    names = set(sys.stdlib_module_names)
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            names |= _names_in(entry)
    return names - set(sys.builtin_module_names) - {"hx_scale_kernel"}


def child_imports() -> set[str]:
    """The top-level names a fresh interpreter imports from files on its path to run the workers'
    and helpers' modules (read from its ``sys.modules``), less those already loaded when it starts."""
    code = (
        "import sys\nstart = set(sys.modules)\n"
        "for m in [*sys.argv[1:], 'cuda.bindings.driver']:\n"
        "    try:\n        __import__(m)\n    except ImportError:\n        pass\n"
        "specs = [getattr(m, '__spec__', None) for n, m in list(sys.modules.items()) if n not in start]\n"
        "found = {s.name.split('.')[0] for s in specs if s is not None and s.origin not in (None, 'built-in', 'frozen')}\n"
        "print(' '.join(sorted(found)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", code, *CHILD_MODULES],
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/",
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return set(out.stdout.split()) - set(sys.builtin_module_names)


@pytest.fixture(scope="module")
def measured() -> set[str]:
    return child_imports()


@pytest.fixture(scope="module")
def names(measured) -> set[str]:
    """What is planted: every name on the path, and what the children's modules were seen importing."""
    return planted_names() | measured


def plant(folder: Path, names: set[str]) -> None:
    for name in names:
        (folder / f"{name}.py").write_text(SHIM)


def shared_folder(parent: Path) -> Path:
    """A folder anyone may write into, sticky, like /tmp."""
    folder = parent / "shared"
    folder.mkdir()
    os.chmod(folder, 0o1777)
    return folder


def markers(folder: Path) -> list[str]:
    """'NAME (uid U: command line)' for every planted module some process imported."""
    out = []
    for m in sorted(folder.glob(MARK + "*")):
        name = m.name[len(MARK) :].rsplit("-", 1)[0]
        out.append(f"{name} ({m.read_text()[:160]})")
    return out


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "HIPEXPLORE_CACHE_DIR": str(tmp / "cache"), **extra}


def hipexplore(
    tmp: Path, folder: Path, *args: str, env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """``hipexplore ARGS`` run in ``folder`` from a console script (see ``CONSOLE_SCRIPT``)."""
    script = tmp / "bin" / "hipexplore"
    if not script.exists():
        script.parent.mkdir(exist_ok=True)
        script.write_text(CONSOLE_SCRIPT)
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env or _env(tmp),
        timeout=timeout,
    )


@pytest.fixture
def attack(tmp_path, names) -> Path:
    folder = shared_folder(tmp_path)
    plant(folder, names)
    (folder / "k.hip").write_text(HIP_SRC)
    (folder / "hx_scale_kernel.py").write_text(TRITON_SRC)
    return folder


def check(out: subprocess.CompletedProcess, folder: Path) -> None:
    found = markers(folder)
    assert not found, f"{len(found)} planted modules ran: " + "; ".join(found[:40])
    assert out.returncode == 0, (out.stdout[-1500:], out.stderr[-3000:])


# -- the planted names -----------------------------------------------------------------------------
def test_the_planted_names_cover_the_children(measured, names):
    """The names planted include what the children's own modules import (measured, not listed:
    the path's names alone cover them) and the ones named in the report of the attack."""
    assert {"json", "random", "pickle", "socket", "struct", "numpy", "tempfile"} <= measured
    assert measured - planted_names() == set()
    assert {
        "json",
        "importlib",
        "runpy",
        "random",
        "pickle",
        "socket",
        "struct",
        "numpy",
        "triton",
        "ipykernel_launcher",
        "jupyterlab",
        "hipexplore",
    } <= names


def test_a_shim_marks_and_hands_over_when_the_folder_is_on_the_path(tmp_path, names):
    """The control: the planted modules work (a marker, then the real module), so a clean run below
    is not a planted module that was never reached."""
    folder = shared_folder(tmp_path)
    plant(folder, names)
    out = subprocess.run(
        [sys.executable, "-c", "import json, random; print(json.dumps(random.Random(1).random()))"],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx(0.134364244112)
    assert {m.split(" ")[0] for m in markers(folder)} >= {"json", "random"}


# -- the launchers -------------------------------------------------------------------------------
def test_hiprtc_compile_workers_and_dependency_helper(tmp_path, attack):
    require_compiler("hiprtc")
    out = hipexplore(tmp_path, attack, "compile", "k.hip", "--compiler", "hiprtc", "--target", "gfx90a", "--json")
    check(out, attack)
    assert json.loads(out.stdout)["outcome"] == "compiled"


def test_hiprtc_dependency_helper_alone(tmp_path, attack):
    """The helper that lists the files comgr's clang opens chdirs into the compile's folder."""
    require_compiler("hiprtc")
    code = (
        "import json\nfrom hipexplore.compile.hiprtc import HiprtcCompiler\n"
        "from hipexplore.compile.request import CompileRequest, Source\n"
        "req = CompileRequest(compiler='hiprtc', source=Source('k.hip', open('k.hip').read()), target='gfx90a')\n"
        "deps = HiprtcCompiler().dependencies(req)\nassert not deps.error, deps.error\nprint('deps ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, cwd=attack, env=_env(tmp_path), timeout=300
    )
    check(out, attack)
    assert "deps ok" in out.stdout


def test_triton_compile_worker(tmp_path, attack):
    require_compiler("triton")
    out = hipexplore(
        tmp_path,
        attack,
        "compile",
        "hx_scale_kernel.py",
        "--compiler",
        "triton",
        "--target",
        "gfx942",
        "--kernel",
        "hx_scale",
        "--signature",
        "x_ptr:*fp32,n:i32",
        "--constexpr",
        "BLOCK=64",
        "--option",
        "num_warps=1",
        "--json",
        timeout=500,
    )
    check(out, attack)
    assert json.loads(out.stdout)["outcome"] == "compiled"


def test_tune_replay_isolated_workers(tmp_path, attack):
    """--jobs 2: an isolated compiler with a worker per job (1 problem, 2 candidates: 6 compiles,
    enough for both workers)."""
    require_compiler("host")
    out = hipexplore(
        tmp_path,
        attack,
        "tune-replay",
        "--compiler",
        "host",
        "--jobs",
        "2",
        "--problems",
        "1",
        "--limit",
        "2",
        "--no-ideal",
        "--cache",
        "memory",
        "--json",
        "--quiet",
    )
    check(out, attack)
    report = json.loads(out.stdout)
    assert report["isolated"] is True and report["jobs"] == 2


def test_host_sweep_in_a_worker(tmp_path, attack):
    require_compiler("host")
    out = hipexplore(
        tmp_path,
        attack,
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "20",
        "--units",
        "1",
        "--no-progress",
        "--out",
        str(tmp_path / "run.parquet"),
        env=_env(tmp_path, HIPEXPLORE_SWEEP_WORKER="1"),
    )
    check(out, attack)
    assert (tmp_path / "run.parquet").is_file()


def test_report_kernel(tmp_path, attack):
    """``hipexplore report``'s kernel (``execute_notebook``: its own kernelspec) started in the folder."""
    nbformat = need_module("nbformat")
    need_module("papermill")
    from hipexplore.report.notebooks import execute_notebook

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("device = 'host'")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(KERNEL_CELL)]
    nb.metadata["kernelspec"] = {"name": "hipexplore", "display_name": "Python (hipexplore)", "language": "python"}
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, str(path))
    done = execute_notebook(path, output=tmp_path / "out.ipynb", cwd=attack, timeout=120)
    found = markers(attack)
    assert not found, f"{len(found)} planted modules ran in the kernel: " + "; ".join(found[:40])
    assert "kernel ok" in json.dumps(done.cells[1].outputs)


def test_installed_kernelspec(tmp_path, attack):
    """The kernelspec scripts/install_kernel.sh installs (what JupyterLab starts for the notebooks)."""
    need_module("jupyter_client")
    need_module("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    data = tmp_path / "jupyter-data"
    env = _env(tmp_path, JUPYTER_DATA_DIR=str(data))
    out = subprocess.run(
        ["bash", str(REPO / "scripts" / "install_kernel.sh"), sys.executable],
        capture_output=True,
        text=True,
        env=env,
        cwd=attack,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    spec = json.loads((data / "kernels" / "hipexplore" / "kernel.json").read_text())
    km = KernelManager(
        kernel_name="hipexplore", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(data / "kernels")])
    )
    km.start_kernel(cwd=str(attack), env=env)
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        texts = []
        reply = kc.execute_interactive(
            KERNEL_CELL, timeout=120, output_hook=lambda msg: texts.append(msg["content"].get("text", ""))
        )
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=True)
    found = markers(attack)
    assert not found, f"{len(found)} planted modules ran in the installed kernel {spec['argv']}: " + "; ".join(
        found[:40]
    )
    assert reply["content"]["status"] == "ok" and "kernel ok" in "".join(texts)


def test_lab_command(tmp_path, attack):
    """``hipexplore lab``'s real command line (its server exits after ``--version``)."""
    require_compiler("host")
    out = hipexplore(tmp_path, attack, "lab", ".", "--", "--version", timeout=120)
    check(out, attack)
    assert re.search(r"\d+\.\d+", out.stdout)


# -- a second real user plants, the victim runs -------------------------------------------------------
#: As the attacker: the planted modules, in the shared folder.
PLANT = r"""
import json, os, sys
folder, shim = sys.argv[1], sys.argv[3]
for name in json.loads(sys.argv[2]):
    path = os.path.join(folder, name + ".py")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, shim.encode()); os.close(fd)
"""


def victim_python(users) -> str:  # noqa: F811
    """A Python the victim can run that can also start itself (``sys.executable``: the workers). The
    harness's may be a venv link into a folder only root may enter, which runs but cannot be
    started again by the victim's own process."""
    probe = "import subprocess, sys\nimport hipexplore.compile.cache\nsubprocess.run([sys.executable, '-c', ''], check=True)"
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    tried = []
    for exe in dict.fromkeys(
        [users.python, os.path.realpath(sys.executable), f"/usr/bin/{ver}", f"/usr/local/bin/{ver}"]
    ):
        if not os.path.exists(exe):
            continue
        out = subprocess.run(
            users.argv("victim", exe, "-c", probe),
            capture_output=True,
            text=True,
            env=users.env("victim"),
            cwd="/",
            timeout=120,
        )
        if out.returncode == 0:
            return exe
        tried.append(f"{exe}: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    need("a Python the victim can run and restart", "; ".join(tried))
    raise AssertionError("unreachable")


def test_planted_by_another_user_never_runs_as_the_victim(users, names):  # noqa: F811
    require_compiler("hiprtc")
    python = victim_python(users)
    folder = shared_folder(users.base)
    out = users.run("attacker", PLANT, folder, json.dumps(sorted(names)), SHIM)
    assert out.returncode == 0, out.stderr
    assert (folder / "json.py").stat().st_uid == users.uid["attacker"]
    home = users.home("victim")
    script, source = home / "hipexplore", home / "k.hip"
    for path, text in ((script, CONSOLE_SCRIPT), (source, HIP_SRC)):
        path.write_text(text)
        os.chown(path, users.uid["victim"], users.gid["victim"])
    run = subprocess.run(
        users.argv(
            "victim",
            python,
            str(script),
            "compile",
            str(source),
            "--compiler",
            "hiprtc",
            "--target",
            "gfx90a",
            "--json",
        ),
        capture_output=True,
        text=True,
        cwd=folder,
        env=users.env("victim"),
        timeout=300,
    )
    found = markers(folder)
    assert not found, (
        f"{len(found)} modules planted by {users.names['attacker']} ran as {users.names['victim']} "
        f"(uid {users.uid['victim']}): " + "; ".join(found[:40])
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout)["outcome"] == "compiled"


# -- a user's own modules --------------------------------------------------------------------------
#: A project's own modules that happen to be named like the standard library's.
OWN = {
    "json.py": "def load_settings():\n    return {}\n",
    "random.py": "SEED = 7\n",
    "tempfile.py": "raise ImportError('this project has its own tempfile.py')\n",
}


def test_a_projects_own_json_and_random_do_not_break_a_run(tmp_path):
    require_compiler("hiprtc")
    project = tmp_path / "project"
    project.mkdir()
    for name, text in OWN.items():
        (project / name).write_text(text)
    (project / "k.hip").write_text(HIP_SRC)
    out = hipexplore(tmp_path, project, "compile", "k.hip", "--compiler", "hiprtc", "--target", "gfx90a", "--json")
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout)["outcome"] == "compiled"
    out = hipexplore(
        tmp_path,
        project,
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "20",
        "--units",
        "1",
        "--no-progress",
        "--out",
        str(tmp_path / "run.parquet"),
        env=_env(tmp_path, HIPEXPLORE_SWEEP_WORKER="1"),
    )
    assert out.returncode == 0, out.stderr[-3000:]
