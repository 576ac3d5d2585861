"""Installs the way Python users make them: the wheel built from this tree (without a warning),
installed into fresh virtual environments with ``pip install`` (no extras) and with the extra
``notebook``, and the real ``hipexplore`` command of each run from outside the repository.

Without extras every command that needs one says which in one line (exit status 2, no traceback).
With ``notebook``, ``hipexplore lab`` opens copies of the *packaged* notebooks in the user's
workspace (nothing is written into the installed package) and starts the kernel they ask for in
this environment, even with an older ``hipexplore`` kernelspec in the user's Jupyter folder; and
``hipexplore report`` makes its notebook from the packaged script.

Slow (two venvs: about 2 and 4 minutes on 2 cores, pip's packages from the machine's index or
PyPI); the venvs are made once per module.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

import checkout
from conftest import hermetic_paths, need

pytestmark = pytest.mark.slow

NOTEBOOKS = ("compile_cache", "dashboard", "review", "rotating_buffers")
#: pip's own notice about this machine's index configuration, not the build's
_PIP_LOCATION = re.compile(r"^\s*WARNING: Location '.*' is ignored")


def pip(python: Path | str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    return subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``pip wheel . --no-deps`` in a copy of this tree (so no build/ or egg-info lands in the
    checkout): the wheel and everything the build said."""
    src = checkout.copy_checkout(tmp_path_factory.mktemp("src") / "hipexplore")
    out = tmp_path_factory.mktemp("wheel")
    res = pip(sys.executable, "wheel", str(src), "--no-deps", "-v", "-w", str(out))
    if res.returncode != 0 and "No matching distribution found for setuptools" in res.stdout + res.stderr:
        need("setuptools>=77 from the package index", "pip could not fetch the build requirement")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    (wheel,) = out.glob("hipexplore-*.whl")
    return wheel, res.stdout + res.stderr


def make_venv(root: Path, requirement: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300, capture_output=True)
    python = root / "bin" / "python"
    # --no-compile: no bytecode for every installed file up front (half the CPU of the notebook venv); Python
    # compiles what the tests import as it imports it
    res = pip(python, "install", "--prefer-binary", "--no-compile", requirement, timeout=1200)
    if res.returncode != 0 and re.search(
        r"No matching distribution|Could not find a version|NewConnectionError", res.stderr
    ):
        need(f"the packages of {requirement}", f"pip could not fetch them: {res.stderr.strip()[-300:]}")
    assert res.returncode == 0, res.stderr[-4000:]
    return root


@pytest.fixture(scope="module")
def plain(built, tmp_path_factory) -> Path:
    """A fresh venv with ``pip install hipexplore-*.whl``: the core, no extra."""
    return make_venv(tmp_path_factory.mktemp("venv") / "plain", str(built[0]))


@pytest.fixture(scope="module")
def with_notebook(built, tmp_path_factory) -> Path:
    """A fresh venv with ``pip install 'hipexplore[notebook]'`` (this tree's wheel)."""
    return make_venv(tmp_path_factory.mktemp("venv") / "notebook", f"hipexplore[notebook] @ {built[0].as_uri()}")


def user_env(tmp: Path, **extra: str) -> dict[str, str]:
    """A user's shell: a fresh HOME under ``tmp``, nothing pointing into this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_PATH", "MPLBACKEND")}
    env.update(hermetic_paths(tmp))
    for d in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        Path(env[d]).mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


def hipexplore(venv: Path, *argv: str, cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(venv / "bin" / "hipexplore"), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


# -- the wheel -------------------------------------------------------------------------------------
def test_wheel_builds_without_warnings_and_carries_the_notebook_scripts(built):
    wheel, log = built
    said = [line for line in log.splitlines() if not _PIP_LOCATION.match(line)]
    warnings = [line for line in said if re.search(r"warn|deprecat|!!", line, re.I)]
    assert not warnings, "\n".join(warnings[:20])
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for name in NOTEBOOKS:
        assert f"hipexplore/notebooks/{name}.py" in names
    assert not [n for n in names if n.endswith(".ipynb")], "no .ipynb is shipped: they are made from the scripts"
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


# -- pip install . ---------------------------------------------------------------------------------
#: (command line, extra it needs); the files they name are written by the test
WITHOUT_EXTRAS = [
    (["report"], "notebook"),
    (["report", "--params", "params.yaml"], "notebook"),
    (["report", "--params", "params.json", "--out", "r.html"], "notebook"),
    (["lab"], "notebook"),
    (["lab", "--", "--no-browser"], "notebook"),
    (["lab", "notebooks.d"], "notebook"),
    (["tune-replay", "--compiler", "host", "--problems", "1", "--limit", "2", "--cluster", "local:1"], "cluster"),
    (
        [
            "bench",
            "triad",
            "--device",
            "host",
            "--size",
            "4KiB",
            "--iterations",
            "5",
            "--no-progress",
            "--cluster",
            "local:1",
        ],
        "cluster",
    ),
    (["bench", "triad", "--device", "cuda", "--size", "4KiB", "--iterations", "5", "--no-progress"], "cuda"),
    (["bench", "triad", "--device", "hip", "--size", "4KiB", "--iterations", "5", "--no-progress"], "hip"),
    (["compile", "k.cu", "--compiler", "nvrtc", "--target", "sm_90"], "cuda"),
    (["compile", "k.hip", "--compiler", "hiprtc", "--target", "gfx90a"], "hip"),
    (
        ["compile", "t.py", "--compiler", "triton", "--kernel", "k", "--signature", "x:*fp32", "--target", "gfx942"],
        "triton",
    ),
    (["compile", "k.c", "--compiler", "host"], "remote"),  # with HIPEXPLORE_CACHE_REMOTE set
]


@pytest.mark.parametrize("argv,extra", WITHOUT_EXTRAS, ids=[" ".join(a[:3]) + f" ({e})" for a, e in WITHOUT_EXTRAS])
def test_without_the_extra_one_line_names_it(plain, tmp_path, argv, extra):
    (tmp_path / "params.yaml").write_text("sizes: ['256KiB']\n")
    (tmp_path / "params.json").write_text('{"sizes": ["256KiB"]}\n')
    (tmp_path / "notebooks.d").mkdir()
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* a) { a[0] = 1; }\n')
    (tmp_path / "k.hip").write_text('extern "C" __global__ void k(float* a) { a[0] = 1; }\n')
    (tmp_path / "k.c").write_text("int f(void) { return 1; }\n")
    (tmp_path / "t.py").write_text("import triton\n\n@triton.jit\ndef k(x):\n    pass\n")
    env = user_env(tmp_path / "u")
    if extra == "remote":
        env.update(HIPEXPLORE_CACHE_REMOTE="redis://127.0.0.1:1/0", HIPEXPLORE_CACHE_SECRET="s" * 32)
    res = hipexplore(plain, *argv, cwd=tmp_path, env=env)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, (res.returncode, res.stderr[-3000:])
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert f"needs the '{extra}' extra" in lines[0] and lines[0].endswith(f"pip install 'hipexplore[{extra}]'"), lines[
        0
    ]
    assert "not valid YAML" not in lines[0]


def test_the_core_runs_without_extras(plain, tmp_path):
    """What needs no extra still works from the plain install (a host benchmark, a host compile)."""
    env = user_env(tmp_path / "u")
    res = hipexplore(
        plain,
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "5",
        "--no-progress",
        "--no-reference",
        cwd=tmp_path,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "triad" in res.stdout


# -- pip install '.[notebook]' ---------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(url: str, token: str, path: str, method: str = "GET", body: dict | None = None) -> dict | list:
    req = urllib.request.Request(
        f"{url}{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


def kernel_processes(runtime: Path) -> list[list[str]]:
    """Command lines of the kernels whose connection file lies in ``runtime`` (this server's)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "ipykernel_launcher" in argv and any(a.startswith(str(runtime)) for a in argv):
            found.append([a for a in argv if a])
    return found


def test_lab_opens_workspace_copies_and_starts_this_environments_kernel(with_notebook, tmp_path):
    """From the installed package (no checkout on any path): the workspace gets the four notebooks,
    the installed package gets nothing, and the kernel the notebooks name starts in this venv,
    although the user's Jupyter folder holds an older ``hipexplore`` kernelspec for another Python."""
    env = user_env(tmp_path / "u")
    older = Path(env["JUPYTER_DATA_DIR"]) / "kernels" / "hipexplore"
    older.mkdir(parents=True)
    (older / "kernel.json").write_text(
        json.dumps(
            {
                "argv": ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "an older one",
                "language": "python",
            }
        )
    )
    site = subprocess.run(
        [
            str(with_notebook / "bin" / "python"),
            "-c",
            "import hipexplore, pathlib; print(pathlib.Path(hipexplore.__file__).parent)",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    ).stdout.strip()
    package = Path(site)
    assert with_notebook in package.parents and not (package / "notebooks").is_symlink()
    before = sorted(p.name for p in (package / "notebooks").iterdir())
    port, token = free_port(), secrets.token_hex(16)
    runtime = Path(env["JUPYTER_RUNTIME_DIR"])
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(
        [
            str(with_notebook / "bin" / "hipexplore"),
            "lab",
            "--",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--ServerApp.token={token}",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                api(url, token, "/api/status")
                break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "lab.log").read_text()[-3000:]
            time.sleep(0.5)
        listing = api(url, token, "/api/contents")
        assert sorted(c["name"] for c in listing["content"]) == sorted(f"{n}.ipynb" for n in NOTEBOOKS)
        workspace = Path(env["XDG_DATA_HOME"]) / "hipexplore" / "workspace"
        assert sorted(p.name for p in workspace.iterdir()) == sorted(f"{n}.ipynb" for n in NOTEBOOKS)
        nb = api(url, token, "/api/contents/dashboard.ipynb")
        assert nb["content"]["metadata"]["kernelspec"]["name"] == "hipexplore"
        specs = api(url, token, "/api/kernelspecs")
        spec = specs["kernelspecs"]["hipexplore"]["spec"]
        assert spec["argv"][:2] == [str(with_notebook / "bin" / "python"), "-P"], spec
        assert str(with_notebook) in spec["display_name"], spec["display_name"]
        session = api(
            url,
            token,
            "/api/sessions",
            "POST",
            {"path": "dashboard.ipynb", "type": "notebook", "name": "", "kernel": {"name": "hipexplore"}},
        )
        deadline = time.monotonic() + 60
        while not kernel_processes(runtime) and time.monotonic() < deadline:
            time.sleep(0.5)
        started = kernel_processes(runtime)
        assert len(started) == 1 and started[0][0] == str(with_notebook / "bin" / "python"), started
        api(url, token, f"/api/sessions/{session['id']}", "DELETE")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the server and the kernel it started
            proc.wait(timeout=30)
        except ProcessLookupError:  # it had exited already (the assertion above says why)
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()
    text = (tmp_path / "lab.log").read_text()
    assert f"copies in {workspace}" in text and "kernel 'hipexplore' is this Python" in text, text[-3000:]
    assert sorted(p.name for p in (package / "notebooks").iterdir()) == before  # nothing written into the package
    assert not [p for p in package.rglob("*.ipynb")]


def test_report_runs_the_packaged_notebook(with_notebook, tmp_path):
    env = user_env(tmp_path / "u")
    (tmp_path / "params.yaml").write_text(
        "sizes: ['64KiB']\nrotating: [1, 2]\nflush: ['none']\niterations: 8\nproblems: 1\ncandidates: 2\ndevice: host\n"
    )
    res = hipexplore(
        with_notebook,
        "report",
        "--params",
        "params.yaml",
        "--out",
        "r.html",
        "--quiet",
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip() == "wrote r.html" and (tmp_path / "r.html").stat().st_size > 10_000
