"""bench.dask_connect: a scheduler a user started with TLS, reached with a Security passed through
or with the Dask configuration's certificates (a real in-process TLS cluster); the spawn-time
environment of local:N workers. (local:N against another user: tests/security/test_security_cluster.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import cliproc
from conftest import need_module

distributed = need_module("distributed")  # the cluster extra (setup.sh --dev)

from hipexplore.bench import dask_connect  # noqa: E402
from hipexplore.bench.dask_connect import connect  # noqa: E402
from hipexplore.errors import ConfigError  # noqa: E402


@pytest.fixture(scope="module")
def tls_cluster():
    """A scheduler and one (in-process) worker that speak TLS only, under certificates of their own."""
    need_module("cryptography")
    security = distributed.Security.temporary()
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        protocol="tls://",
        host="127.0.0.1",
        security=security,
        dashboard_address=None,
    ) as cluster:
        yield cluster.scheduler_address, security


def test_a_security_given_is_passed_through(tls_cluster):
    address, security = tls_cluster
    assert address.startswith("tls://")
    conn = connect(address, pin=False, security=security, timeout_s=20)
    try:
        assert conn.client.submit(pow, 2, 5, pure=False).result(timeout=30) == 32
    finally:
        conn.close()


def test_the_dask_configurations_certificates_are_used(tls_cluster, tmp_path):
    """What the CLI's --cluster tls://... relies on: the client's certificates from the Dask
    configuration (as ``DASK_DISTRIBUTED__COMM__TLS__*`` would set them)."""
    import dask

    address, security = tls_cluster
    (tmp_path / "ca.pem").write_text(security.tls_ca_file)
    (tmp_path / "client.pem").write_text(security.tls_client_cert)
    (tmp_path / "client.key").write_text(security.tls_client_key)
    with dask.config.set(
        {
            "distributed.comm.tls.ca-file": str(tmp_path / "ca.pem"),
            "distributed.comm.tls.client.cert": str(tmp_path / "client.pem"),
            "distributed.comm.tls.client.key": str(tmp_path / "client.key"),
            "distributed.comm.require-encryption": True,
        }
    ):
        conn = connect(address, pin=False, timeout_s=20)
        try:
            assert conn.client.submit(pow, 3, 3, pure=False).result(timeout=30) == 27
        finally:
            conn.close()


def assert_no_client_left_open() -> None:
    """A refused client is closed at once, not by the garbage collector at some later moment: its
    ``__del__`` closing it while the next client starts (holding its loop runner's lock) hung this
    module (a client refused for want of certificates stayed 'connecting')."""
    import gc

    left = [c for c in gc.get_objects() if isinstance(c, distributed.Client) and c.status != "closed"]
    assert left == [], [c.status for c in left]


def test_a_tls_address_without_certificates_is_one_line(tls_cluster):
    address, _ = tls_cluster
    with pytest.raises(ConfigError, match="speaks TLS and no client certificate is configured") as err:
        connect(address, pin=False, timeout_s=5)
    assert address in str(err.value) and "\n" not in str(err.value)
    assert_no_client_left_open()


def test_a_certificate_of_another_ca_is_refused(tls_cluster):
    address, _ = tls_cluster
    with pytest.raises(Exception) as err:  # noqa: PT011 - distributed's own error: the handshake fails
        connect(address, pin=False, security=distributed.Security.temporary(), timeout_s=5)
    assert not isinstance(err.value, AssertionError)
    assert_no_client_left_open()


def test_safe_path_is_set_only_while_workers_spawn(monkeypatch):
    """Nannies start concurrently: the variable stays set until the last spawn in progress ends,
    then the value from before (none, or the user's own) is back."""
    var = dask_connect.SAFE_PATH_VAR
    for before in (None, "x"):
        if before is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, before)
        with dask_connect.safe_path_environ():
            assert os.environ[var] == "1"
            with dask_connect.safe_path_environ():
                assert os.environ[var] == "1"
            assert os.environ[var] == "1"  # the first spawn still runs
        assert os.environ.get(var) == before


# -- a worker that dies while the local:N cluster starts (issue 47.4) ------------------------------------
def _children(root: int) -> list[tuple[int, bytes]]:
    """(pid, command line) of every descendant of ``root``, from /proc."""
    kids: dict[int, list[tuple[int, bytes]]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                cmd = fh.read()
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append((int(d), cmd))
    out, todo = [], [root]
    while todo:
        for pid, cmd in kids.get(todo.pop(), []):
            out.append((pid, cmd))
            todo.append(pid)
    return out


def bench_killing_workers(tmp_path, n: int, kill: int, out: str) -> tuple[object, list[int]]:
    """``hipexplore bench --cluster local:N`` in a child; the first ``kill`` Dask worker processes it
    spawns are SIGKILLed the moment they appear (polled every 2 ms: a worker imports distributed for
    seconds before it can register, so it dies while the cluster starts). Returns the completed
    process and the pids killed."""
    import signal
    import subprocess
    import sys
    import time

    cmd = [
        sys.executable,
        "-m",
        "hipexplore",
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "16KiB,32KiB",
        "--iterations",
        "20",
        "--units",
        "1",
        "--reference-samples",
        "8",
        "--no-progress",
        "--cluster",
        f"local:{n}",
        "--out",
        out,
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    killed: list[int] = []
    deadline = time.monotonic() + 300
    try:
        while proc.poll() is None and len(killed) < kill and time.monotonic() < deadline:
            for pid, line in _children(proc.pid):
                if b"spawn_main" in line and pid not in killed and len(killed) < kill:  # a Dask worker process
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.002)
        out_text, err_text = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, out_text, err_text), killed


def test_a_worker_killed_while_the_cluster_starts_the_run_goes_on(tmp_path):
    """local:2, one worker killed as it starts: no 61-line traceback; one warning line names it, the
    run measures every configuration on the worker that came up, and the out file keeps them."""
    import pandas as pd

    need_module("cryptography")
    res, killed = bench_killing_workers(tmp_path, 2, 1, "c.parquet")
    assert len(killed) == 1
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    warned = [line for line in res.stderr.splitlines() if "died while the cluster started" in line]
    assert len(warned) == 1 and warned[0].startswith("hipexplore bench: warning: cluster local:2: worker(s) "), (
        res.stderr
    )
    assert "the run goes on with the 1 that came up" in warned[0]
    summary = pd.read_parquet(tmp_path / "c.summary.parquet")
    assert sorted(summary["size_bytes"].unique()) == [16384, 32768] and summary["worker"].nunique() == 1


def test_every_worker_killed_while_the_cluster_starts_is_one_line_and_keeps_what_was_there(tmp_path):
    """local:1 and its only worker killed: one error line, exit 2, and the out file an earlier run
    finished is left as it was (nothing of it is lost)."""
    need_module("cryptography")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    first = cliproc.run(  # the earlier run: python -m hipexplore, forked from a preloaded interpreter
        [
            "bench",
            "triad",
            "--device",
            "host",
            "--size",
            "16KiB",
            "--iterations",
            "20",
            "--units",
            "1",
            "--reference-samples",
            "8",
            "--no-progress",
            "--out",
            "c.parquet",
        ],
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr[-2000:]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    res, killed = bench_killing_workers(tmp_path, 1, 1, "c.parquet")
    assert len(killed) == 1
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-3000:]
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("hipexplore bench: error: cluster local:1: no worker started"), lines
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
