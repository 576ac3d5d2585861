"""Warnings raised inside a sweep worker reach the user (bench.worker_main forwards them).

A worker's stderr is a log file read only when the worker dies, so a warning there reached nobody:
with the team tier down (a Redis URL nothing listens on), an in-process sweep said so and the same
sweep in workers (every GPU sweep) said nothing. Real parts: the host device, real sweep workers,
a real connection refused."""

from __future__ import annotations

import socket
import warnings

import pytest

import cliproc
from hipexplore.errors import CacheWarning


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the with-block ends: nothing listens there


@pytest.fixture
def down_team_tier(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))  # empty: the kernel is compiled in the worker
    monkeypatch.setenv("HIPEXPLORE_CACHE_SECRET", "a-team-secret-for-the-worker-warning-test")
    monkeypatch.setenv("HIPEXPLORE_CACHE_REMOTE", f"redis://127.0.0.1:{_closed_port()}/0")


@pytest.mark.timeout(180)
def test_a_warning_in_a_sweep_worker_is_shown_once_by_the_parent(down_team_tier):
    from hipexplore.bench.sweep import sweep

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        sweep("triad", "16KiB", [1], ["none"], device="host", iterations=30, units=3, progress=False, worker=True)
    tier = [w for w in seen if "Redis tier" in str(w.message)]
    # each of the 3 units has its own worker, each warned: the parent shows it once, as the CacheWarning it is
    assert len(tier) == 1, [str(w.message) for w in seen]
    assert issubclass(tier[0].category, CacheWarning) and "continuing with the local tiers only" in str(tier[0].message)
    assert str(tier[0].message).startswith("sweep worker (kernel triad): ")


@pytest.mark.timeout(180)
def test_the_cli_prints_a_worker_warning_as_one_line(down_team_tier, tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_SWEEP_WORKER", "1")
    p = cliproc.run(
        [
            "bench",
            "triad",
            "--device",
            "host",
            "--size",
            "16KiB",
            "--rotating",
            "1",
            "--flush",
            "none",
            "--iterations",
            "30",
            "--units",
            "2",
            "--no-progress",
        ],
        timeout=170,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "Redis tier" in ln]
    # shown as the worker's (a kernel runs there: its warnings cannot pass for a line of ours)
    assert len(lines) == 1 and lines[0].startswith(
        "hipexplore bench: warning: sweep worker (kernel triad): hipexplore compile cache:"
    ), p.stderr
