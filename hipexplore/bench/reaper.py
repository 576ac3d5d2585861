"""Every process a kernel starts ends with its sweep worker.

Why: a host kernel runs inside the sweep worker (``bench.worker_main``), and a kernel that forked
left its children running after the sweep (ppid 1, minutes later); one that forked a ``setsid``
child holding the worker's pipe kept the parent reading after the worker was gone. Killing the
worker's process group does not reach them: ``setsid`` makes a new session and group.

So each process of a worker is found by what it cannot shed by accident (Linux, ``/proc``):

* its ancestry: the worker makes itself a *child subreaper* (``become_subreaper``:
  ``prctl(PR_SET_CHILD_SUBREAPER)``), so an orphaned descendant (a double fork, a ``setsid``
  daemon) is re-parented to the worker, not to init, while the worker lives;
* the worker's mark: a variable in its environment (``settings.SWEEP_WORKER_MARK``, a random
  token per worker) that every child inherits, found in ``/proc/PID/environ`` after the worker is
  gone;
* the worker's pipes: a process holding one of them (``pipe:[inode]`` among its descriptors);
* the worker's process group and session.

``end_tree`` stops (``SIGSTOP``, so none forks again) and then kills what it finds, round after
round until nothing is left; the worker ends its own descendants before it exits
(``end_descendants``), and the parent ends whatever is left once the worker is gone. What this
does not cover: a kernel, running as you, can kill its worker's parent, exec with an empty
environment from a process it re-parented to init itself, or close the pipe; ``docs/guide/harness.md``
says the worker is a fault boundary, not a sandbox. No cgroup: where a user may create one it would
hold them all, but on most machines (containers, cgroup v1) a user may not.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Iterable

PR_SET_CHILD_SUBREAPER = 36
#: rounds of stop-then-kill before giving up on a process that keeps forking
ROUNDS = 20


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux >= 3.4); False where it cannot."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _table() -> dict[int, tuple[int, int, int]]:
    """Every live process: pid -> (ppid, process group, session); zombies and unreadable ones left out."""
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) < 4 or fields[0] in (b"Z", b"X"):
            continue
        out[int(name)] = (int(fields[1]), int(fields[2]), int(fields[3]))
    return out


def descendants(root: int, table: dict[int, tuple[int, int, int]] | None = None) -> set[int]:
    """Every live process whose parent chain leads to ``root`` (``root`` itself not included)."""
    table = _table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _g, _s) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child != root:
                found.add(child)
                todo.append(child)
    return found


def _marked(pid: int, mark: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = fh.read(1 << 20)
    except OSError:
        return False
    return env.startswith(mark + b"\0") or (b"\0" + mark + b"\0") in env or env.endswith(b"\0" + mark)


def _holds(pid: int, pipes: set[str]) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in pipes:
                return True
        except OSError:
            continue
    return False


def pipe_names(fds: Iterable[int]) -> set[str]:
    """How ``/proc/PID/fd`` names the pipes behind ``fds`` (``pipe:[inode]``)."""
    out = set()
    for fd in fds:
        try:
            out.add(f"pipe:[{os.fstat(fd).st_ino}]")
        except OSError:
            continue
    return out


def find(root: int | None, *, mark: str = "", pipes: set[str] = frozenset(), group: int | None = None) -> set[int]:
    """The processes of a worker (module docstring): ``root``'s descendants, those with ``mark`` in
    their environment, those holding one of ``pipes``, those in process group or session ``group``.
    Never this process or one of its ancestors."""
    table = _table()
    mine = {os.getpid()}
    p = os.getpid()
    while p in table and table[p][0] not in mine and table[p][0] > 0:
        p = table[p][0]
        mine.add(p)
    found = descendants(root, table) if root is not None and root in table else set()
    if group is not None:
        found |= {pid for pid, (_pp, g, s) in table.items() if g == group or s == group}
    needle = mark.encode() if mark else b""
    for pid in table:
        if pid in found or pid in mine:
            continue
        if (needle and _marked(pid, needle)) or (pipes and _holds(pid, set(pipes))):
            found.add(pid)
    return found - mine - ({root} if root is not None else set())


def end_tree(root: int | None, *, mark: str = "", pipes: set[str] = frozenset(), group: int | None = None) -> list[int]:
    """Stop, then kill, every process ``find`` names, round after round until none is left; the
    pids it signalled. ``root`` itself is left alone (the caller ends it, after its descendants:
    while it lives, they are re-parented to it)."""
    ended: list[int] = []
    for _ in range(ROUNDS):
        found = find(root, mark=mark, pipes=pipes, group=group)
        if not found:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in found:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        ended += sorted(found)
        time.sleep(0.02)  # the kernel delivers the kills; the next round sees who is left
    return ended


def end_descendants() -> list[int]:
    """In a worker: end every process below this one (before it exits, while they are still its)."""
    return end_tree(os.getpid())


__all__ = [
    "PR_SET_CHILD_SUBREAPER",
    "become_subreaper",
    "descendants",
    "end_descendants",
    "end_tree",
    "find",
    "pipe_names",
]
