"""A first run, through the command line as a new user meets it (issue 15), each with the real
part: setup's Jupyter kernel step in a temporary HOME, `hipexplore lab` starting JupyterLab as
root, `tune-replay`'s progress on stderr beside its JSON on stdout, and an adaptive `bench` that
says what it does and, resumed, what it kept. The units these rest on are tested at their mirror
paths (tests/cli/test_lab_cmd.py, tests/cli/test_tune_cmd.py, tests/test_plots.py, ...).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cliproc

REPO = Path(__file__).resolve().parents[2]


def run_cli(
    *argv: str, env: dict | None = None, timeout: float = 300, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """``python -m hipexplore ARGV`` in a process of its own (forked from a preloaded interpreter:
    tests/cliproc.py)."""
    return cliproc.run(argv, timeout=timeout, cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


# -- set-up --------------------------------------------------------------------------------------
def test_setup_kernel_step_leaves_the_users_python3_kernel_alone(tmp_path):
    """setup.sh's kernel step (scripts/install_kernel.sh, run here in isolation: the whole setup.sh
    would pip-install a fresh venv) in a temporary HOME that already has a python3 kernelspec."""
    from conftest import hermetic_paths

    home = tmp_path / "home"
    mine = home / ".local" / "share" / "jupyter" / "kernels" / "python3"
    mine.mkdir(parents=True)
    own = json.dumps(
        {
            "argv": ["/opt/other/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "My own Python 3",
            "language": "python",
        }
    )
    (mine / "kernel.json").write_text(own)
    # Every per-user location (HOME, XDG_*, JUPYTER_*) under tmp_path: the session's hermetic HOME sets
    # XDG_DATA_HOME/JUPYTER_DATA_DIR, which ipykernel follows before HOME.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "XDG_"))}
    env.update(hermetic_paths(tmp_path))
    res = subprocess.run(
        [str(REPO / "scripts" / "install_kernel.sh"), sys.executable],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert (mine / "kernel.json").read_text() == own
    spec = json.loads((home / ".local" / "share" / "jupyter" / "kernels" / "hipexplore" / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable and spec["display_name"] == "Python (hipexplore)"
    setup = (REPO / "setup.sh").read_text()
    assert "scripts/install_kernel.sh" in setup and "--name python3" not in setup


def test_hipexplore_lab_starts_jupyterlab_as_this_user(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "lab.log", "w")
    env = {**os.environ, "PYTHONPATH": str(REPO), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hipexplore",
            "lab",
            str(REPO / "notebooks"),
            "--",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            "--ServerApp.token=t",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while (
            proc.poll() is None
            and time.monotonic() < deadline
            and f":{port}/" not in (tmp_path / "lab.log").read_text()
        ):
            time.sleep(0.5)
        text = (tmp_path / "lab.log").read_text()
        assert proc.poll() is None, text[-2000:]  # as root, plain `jupyter lab` exits here
        assert f":{port}/" in text and "Running as root is not recommended" not in text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


# -- long work -----------------------------------------------------------------------------------
def test_tune_replay_progress_on_stderr_json_alone_on_stdout(tmp_path):
    res = run_cli("tune-replay", "--compiler", "host", "--problems", "1", "--limit", "2", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "passes" in res.stderr and "memory" in res.stderr  # tqdm names the pass
    assert out["seconds_saved"] == pytest.approx(out["seconds_without_cache"] - out["seconds"])
    assert "quote" in out["seconds_saved_quote"] or "seconds_saved:" in out["seconds_saved_quote"]
    quiet = run_cli("tune-replay", "--compiler", "host", "--problems", "1", "--limit", "2", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert "saved:" in quiet.stdout


def test_adaptive_bench_says_what_it_does_and_resume_names_what_it_kept(tmp_path):
    out = tmp_path / "r.parquet"
    args = [
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--no-reference",
        "--timeout",
        "0.3",
        "--min-time",
        "0.001",
        "--out",
        str(out),
        "--no-progress",
    ]
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert "adaptive sampling (no --iterations)" in first.stderr and "0.3 s" in first.stderr
    banner = next(ln for ln in first.stderr.splitlines() if "adaptive sampling" in ln)
    assert len(banner) <= 240 and all(f"('{w}')" in banner for w in ("ci", "cv", "noise", "TIMEOUT", "CAP")), banner
    second = run_cli(*args[:5], "4KiB,8KiB", *args[6:])
    assert second.returncode == 0, second.stderr
    assert (
        "kept 1 finished configuration(s) of your own results, not measured again: triad 4 KiB rot=1 flush=none"
        in second.stderr
    )
    assert "8 KiB" in second.stdout and "4 KiB" in second.stdout  # human-readable sizes in the table
