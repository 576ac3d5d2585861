"""hipexplore.bench.reaper: every process a kernel starts is found and ended with its sweep worker.

Real processes: a subreaper whose double-forked ``setsid`` grandchild stays below it; a daemon
found after its parent is gone by the mark in its environment; a process holding a pipe found by
the pipe; this process and its ancestors never among them. The same through a real sweep worker
and a forking C kernel: tests/security/test_security_channel.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hipexplore.bench import reaper

#: double-forks a grandchild into a session of its own that prints its pid and sleeps; with SUBREAPER
#: it makes itself the subreaper first; then it sleeps (or exits with EXIT)
FORKER = r"""
import os, sys, time
sys.path[:0] = [{path!r}]
from hipexplore.bench import reaper
if {subreaper}:
    assert reaper.become_subreaper()
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode() + b"\n")
        time.sleep(600)
    os._exit(0)
print(os.read(r, 64).decode().strip(), flush=True)
if not {exits}:
    time.sleep(600)
"""


def start(subreaper: bool, exits: bool, env: dict | None = None, **kw) -> tuple[subprocess.Popen, int]:
    code = FORKER.format(path=str(Path(__file__).resolve().parents[2]), subreaper=subreaper, exits=exits)
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
        **kw,
    )
    return p, int(p.stdout.readline())


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def settle(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


@pytest.mark.timeout(120)
def test_a_subreapers_orphans_stay_below_it_and_end_with_its_tree():
    p, grandchild = start(subreaper=True, exits=False)
    try:
        deadline = time.monotonic() + 30
        while (
            ppid(grandchild) != p.pid and time.monotonic() < deadline
        ):  # its parent exited: re-parented to the subreaper
            time.sleep(0.05)
        assert ppid(grandchild) == p.pid
        assert grandchild in reaper.descendants(p.pid)
        ended = reaper.end_tree(p.pid)
        assert grandchild in ended and settle(grandchild)
        assert alive(p.pid)  # the root is the caller's to end
    finally:
        p.kill()
        p.wait()


@pytest.mark.timeout(120)
def test_a_daemon_whose_parent_is_gone_is_found_by_its_mark():
    mark = f"{reaper_mark()}=test-{os.getpid()}-{time.monotonic_ns()}"
    name, token = mark.split("=", 1)
    p, daemon = start(subreaper=False, exits=True, env={name: token})
    p.wait()
    try:
        assert ppid(daemon) != p.pid  # re-parented away: no ancestry leads to it any more
        assert reaper.find(None, mark=mark) == {daemon}
        assert reaper.find(None, mark=mark + "x") == set()
        reaper.end_tree(None, mark=mark)
        assert settle(daemon)
    finally:
        if alive(daemon):
            os.kill(daemon, 9)


def reaper_mark() -> str:
    from hipexplore import settings

    return settings.SWEEP_WORKER_MARK.name


@pytest.mark.timeout(120)
def test_a_process_holding_a_pipe_is_found_by_it_and_this_process_never_is():
    r, w = os.pipe()
    try:
        holder = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"], pass_fds=(w,), start_new_session=True
        )
        names = reaper.pipe_names([r])
        deadline = time.monotonic() + 30
        while holder.pid not in reaper.find(None, pipes=names) and time.monotonic() < deadline:
            time.sleep(0.05)
        found = reaper.find(None, pipes=names)
        assert found == {holder.pid}  # this process holds both ends: never found, nor its ancestors
        reaper.end_tree(None, pipes=names)
        assert holder.wait(30) == -9
        assert os.getpid() not in reaper.find(os.getppid(), group=os.getpgrp())
    finally:
        os.close(r)
        os.close(w)
