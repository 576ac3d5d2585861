"""What killed hipexplore processes left in the temp dir, removed by the next command.

Why its own module: every ``hipexplore`` command runs this clean-up first (``cli._clean_leftovers``);
it lived in ``compile/host.py``, so every command, a cache hit of NVRTC or hiprtc included, imported
the host compiler's module only for it (issue 49, item 6: a hit must cost less than the compile).
``compile.host`` still names everything here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

#: the build and device folders of the host compiler and device (``<tmp>/hipexplore-host-<pid>-*``)
BUILD_PREFIX = "hipexplore-host-"
#: other folders named by the pid of the process that made them: a replay's folder for the compilers'
#: own caches (``tuning.baselines``) and NVRTC's automatic PCH (``-pch``: NVRTC leaves
#: ``<tmp>/__nvrtc_auto_pch_<pid>_<n>`` behind at exit); removed once that process is dead
PID_FOLDERS = (("hipexplore-own-caches-", "-"), ("__nvrtc_auto_pch_", "_"))
_cleaned = False
#: files hipexplore's worker processes write their stderr to (``compile.launcher``: compile and sweep workers)
WORKER_LOG_GLOB = "hipexplore-*-worker-*.log"
#: how old a worker log no process holds open must be to be removed (one is opened by its worker
#: within milliseconds of being made)
LOG_MIN_AGE_S = 5.0
#: folders of the older form without a pid (``hipexplore-host-XXXXXXXX``, made by ``HostDevice``
#: before it put its pid in the name) are removed when no process holds a file of theirs and they
#: are at least this old
UNNUMBERED_MIN_AGE_S = 3600.0


def start_time(pid: int) -> float | None:
    """When process ``pid`` started (epoch seconds, from /proc), None if it is gone or unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        btime = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime")
        )
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def creator_alive(pid: int, made: float) -> bool:
    """Is the process that made a leftover at time ``made`` (its folder's mtime) still running?
    A live pid that started after ``made`` is another process with a reused pid: the maker is dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive but another user's, so not the maker of a folder we own
        return False
    started = start_time(pid)
    return started is None or started <= made + 2.0


def held_names(base: Path, names: set[str]) -> set[str]:
    """Which of the entries ``names`` of folder ``base`` some process holds: an open file, its
    current directory, or a mapped library in or at it (read from /proc; processes whose /proc
    entries cannot be read are not seen, which is why only our own leftovers are touched)."""
    prefix = os.path.join(str(base), "")
    held: set[str] = set()

    def note(target: str) -> None:
        if target.startswith(prefix):
            name = target[len(prefix) :].split("/", 1)[0].removesuffix(" (deleted)")
            if name in names:
                held.add(name)

    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return set(names)  # cannot tell: everything counts as in use
    for pid in pids:
        try:
            note(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            pass
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            fds = []
        for fd in fds:
            try:
                note(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                continue
        try:
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if prefix in line:
                        note(line.split(maxsplit=5)[-1].strip())
        except OSError:
            pass
    return held


def clean_dead_build_dirs() -> int:
    """Once per process: remove what killed hipexplore processes left in the temp dir (SIGKILL gives
    no ``TemporaryDirectory`` or ``finally`` a chance): build and device folders
    (``<tmp>/hipexplore-host-<pid>-*``) whose process is dead (by pid and start time), folders of the
    older unnumbered form (``hipexplore-host-XXXXXXXX``) and worker logs (``hipexplore-*-worker-*.log``)
    that no process of ours holds open or mapped. Only entries this user owns, real folders and
    regular files (never through a link), older than ``LEFTOVER_MIN_AGE_S``. Crash logs that an error
    message named (``hipexplore-crash-*.log``) are kept. Returns how many entries were removed."""
    global _cleaned
    if _cleaned:
        return 0
    _cleaned = True
    return clean_leftovers()


def clean_leftovers(base: str | Path | None = None) -> int:
    """The work of ``clean_dead_build_dirs`` (every call does it; tests call this)."""
    import stat as stat_mod

    removed = 0
    base = Path(base if base is not None else tempfile.gettempdir())
    try:
        folders = list(base.glob(f"{BUILD_PREFIX}*"))
        logs = list(base.glob(WORKER_LOG_GLOB))
    except OSError:
        return 0
    now = time.time()
    me = os.geteuid()

    def ours(path: Path, want_dir: bool) -> os.stat_result | None:
        try:
            st = path.lstat()
        except OSError:
            return None
        kind_ok = stat_mod.S_ISDIR(st.st_mode) if want_dir else stat_mod.S_ISREG(st.st_mode)
        return st if kind_ok and st.st_uid == me else None

    unheld: dict[str, bool] = {}  # name -> is a folder; removed if no process holds it
    for path in folders:
        st = ours(path, True)
        if st is None:
            continue
        rest = path.name[len(BUILD_PREFIX) :]
        pid = rest.split("-", 1)[0]
        if not (pid.isdigit() and "-" in rest):
            if now - st.st_mtime >= UNNUMBERED_MIN_AGE_S:
                unheld[path.name] = True
            continue
        if int(pid) == os.getpid() or creator_alive(int(pid), st.st_mtime):
            continue
        removed += remove_tree(path)
    for prefix, sep in PID_FOLDERS:
        for path in _glob(base, prefix):
            st = ours(path, True)
            pid = path.name[len(prefix) :].split(sep, 1)[0]
            if (
                st is not None
                and pid.isdigit()
                and int(pid) != os.getpid()
                and not creator_alive(int(pid), st.st_mtime)
            ):
                removed += remove_tree(path)
    for path in logs:
        st = ours(path, False)
        if st is not None and now - st.st_mtime >= LOG_MIN_AGE_S:
            unheld[path.name] = False
    if unheld:
        held = held_names(base, set(unheld))
        for name, is_dir in sorted(unheld.items()):
            if name in held:
                continue
            if is_dir:
                removed += remove_tree(base / name)
            else:
                try:
                    (base / name).unlink()
                    removed += 1
                except OSError:
                    pass
    return removed


def _glob(base: Path, prefix: str) -> list[Path]:
    try:
        return list(base.glob(f"{prefix}*"))
    except OSError:
        return []


def remove_tree(path: Path) -> int:
    """Remove a folder without following links out of it (``rmtree`` unlinks a link, never its target)."""
    try:
        if path.is_symlink():
            return 0
        shutil.rmtree(path)
        return 1
    except OSError:
        return 0
