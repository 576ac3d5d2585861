"""tests/cliproc.py: a CLI process forked from the zygote is the process ``subprocess.run`` would start.

The tests that run the CLI through ``cliproc.run`` trust that the child is a fresh ``python -m
hipexplore`` in all that the CLI can see: these run one probe module both ways and compare what it
sees fact by fact (path, argv, environment, streams, descriptors, signals, umask...), and how it
ends (exit codes, an uncaught exception, KeyboardInterrupt, a signal, atexit, threads, a timeout).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import cliproc

PROBE = r"""
import json, locale, os, signal, site, subprocess, sys, tempfile, threading, warnings

import numpy  # what the zygote has imported, so that both sides hold the same modules' side effects

def facts():
    main = sys.modules["__main__"]
    return {
        "path": sys.path,
        "argv": sys.argv,
        "orig_argv": sys.orig_argv,
        "executable": sys.executable,
        "cwd": os.getcwd(),
        "environ": dict(os.environ),
        "c_environ": subprocess.run(["env", "-0"], stdout=subprocess.PIPE, check=True).stdout.decode().split("\0"),
        "fds": sorted(os.listdir("/proc/self/fd")),
        "flags": list(sys.flags),
        "signals": {str(s): str(signal.getsignal(s)) for s in signal.valid_signals()
                    if s not in (signal.SIGKILL, signal.SIGSTOP)},
        "blocked": sorted(map(int, signal.pthread_sigmask(signal.SIG_BLOCK, []))),
        "umask": os.umask(0o22),
        "pgrp": os.getpgrp(),
        "main": [main.__name__, getattr(main, "__file__", None), getattr(main.__spec__, "name", None)],
        "streams": [(s.encoding, s.errors, s.line_buffering, s.isatty()) for s in (sys.stdin, sys.stdout, sys.stderr)],
        "encodings": [locale.getpreferredencoding(False), sys.getfilesystemencoding()],
        "stdin": sys.stdin.read(),
        "warnings": [str(f) for f in warnings.filters],
        "threads": threading.active_count(),
        "tempdir": tempfile.gettempdir(),
        "user_site": [site.ENABLE_USER_SITE, site.USER_SITE, site.USER_BASE],
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "random": [__import__("random").random(), numpy.random.random()],
    }

how = sys.argv[1]
if how == "facts":
    print(json.dumps(facts()))
elif how == "exit":
    sys.exit(int(sys.argv[2]))
elif how == "exit-text":
    sys.exit("a message for stderr")
elif how == "raise":
    raise ValueError("boom")
elif how == "interrupt":
    raise KeyboardInterrupt
elif how == "signal":
    os.kill(os.getpid(), signal.SIGTERM)
elif how == "ending":
    import atexit, time
    print("unflushed\r\nline", end="")
    atexit.register(lambda: print(" atexit ran"))
    threading.Thread(target=lambda: (time.sleep(0.3), print(" thread joined", flush=True))).start()
elif how == "wait":  # until a file exists
    import time
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.05)
    print(os.getppid())
elif how == "touch":
    open(sys.argv[2], "w").close()
    print(os.getppid())
elif how == "sleep":
    print(os.getpid(), flush=True)
    import time
    time.sleep(600)
"""


@pytest.fixture
def probe(tmp_path):
    """The probe as a module on PYTHONPATH (a relative entry and a ``..`` one naming the same folder,
    an empty one: the working directory), run from a working directory of its own with a HOME and a
    TMPDIR of its own; and as a console script (``#!`` this interpreter) in a ``bin`` folder."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "hx_probe.py").write_text(PROBE)
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "hx-probe"
    script.write_text(f"#!{sys.executable}\n" + PROBE)
    script.chmod(0o755)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (tmp_path / "tmp").mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(["../mods", "", str(tmp_path / "x" / ".." / "mods")]),
        "TMPDIR": str(tmp_path / "tmp"),  # read at the first gettempdir(), not at start-up
        "HOME": str(tmp_path / "home"),
    }
    return cwd, env


def both(argv, cwd, env, script=None, code=None, **kw):
    """(the zygote's answer, a fresh interpreter's answer) for ``python -m hx_probe ARGV`` (or
    ``SCRIPT ARGV``, ``python -c CODE ARGV``)."""
    before = cliproc.STARTS["zygote"]
    forked = cliproc.run(argv, cwd=cwd, env=env, module="hx_probe", script=script, code=code, **kw)
    assert cliproc.STARTS["zygote"] == before + 1, "the zygote was not used"
    command = (
        [sys.executable, "-c", code, *argv]
        if code is not None
        else [sys.executable, "-m", "hx_probe", *argv]
        if script is None
        else [str(script), *argv]
    )
    fresh = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, **kw)
    return forked, fresh


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["module", "script", "code"])
def test_a_forked_child_sees_what_a_fresh_interpreter_sees(probe, how):
    cwd, env = probe
    script = cwd.parent / "bin" / "hx-probe" if how == "script" else None
    code = PROBE if how == "code" else None
    forked, fresh = both(["facts"], cwd, env, script=script, code=code, input="what the test feeds\r\n")
    assert forked.returncode == fresh.returncode == 0, (forked.stderr, fresh.stderr)
    assert forked.args == fresh.args
    mine, theirs = json.loads(forked.stdout), json.loads(fresh.stdout)
    assert mine["pid"] != theirs["pid"] and mine["pid"] != os.getpid()
    assert mine["ppid"] == cliproc._ZYGOTE.proc.pid and theirs["ppid"] == os.getpid()
    assert mine["random"] != theirs["random"]
    for volatile in ("pid", "ppid", "random"):
        del mine[volatile], theirs[volatile]
    assert mine == theirs
    assert mine["stdin"] == "what the test feeds\r\n"  # bytes as given; newlines translated only on output


@pytest.mark.timeout(120)
def test_signals_the_caller_ignores_or_blocks_are_ignored_or_blocked_in_the_child(probe):
    """A fresh interpreter inherits ignored and blocked signals (a suite started in the background
    ignores SIGINT): the forked child takes the caller's state at the call, not the zygote's."""
    cwd, env = probe
    cliproc.run(["exit", "0"], cwd=cwd, env=env, module="hx_probe")  # the zygote exists before the change
    was = signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    try:
        forked, fresh = both(["facts"], cwd, env)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1])
        signal.signal(signal.SIGINT, was)
    mine, theirs = json.loads(forked.stdout), json.loads(fresh.stdout)
    assert mine["signals"] == theirs["signals"] and mine["blocked"] == theirs["blocked"]
    assert mine["signals"][str(int(signal.SIGINT))] == str(signal.SIG_IGN)
    assert int(signal.SIGUSR1) in mine["blocked"]


@pytest.mark.timeout(120)
def test_a_zygote_started_under_a_passing_environment_is_replaced_once_it_has_passed(probe, monkeypatch):
    """A zygote started while a start-up variable was set for a moment (``PYTHONSAFEPATH`` while Dask
    spawns a worker) is replaced at the next call once the moment has passed, not kept for the
    process's life with every later call going to a fresh interpreter (cliproc._retire; the suite
    beside two busy loops at 71a434d: 13 tests here failed "the zygote was not used")."""
    cwd, env = probe
    monkeypatch.setenv("PYTHONHXMOMENT", "1")  # PYTHON...: a start-up variable (cliproc.STARTUP_PREFIXES)
    during, _ = both(["facts"], cwd, {**env, "PYTHONHXMOMENT": "1"})
    moment_zygote = cliproc._ZYGOTE.proc.pid
    assert json.loads(during.stdout)["environ"]["PYTHONHXMOMENT"] == "1"
    monkeypatch.delenv("PYTHONHXMOMENT")
    after, fresh = both(["facts"], cwd, env)  # asserts the zygote served it
    assert cliproc._ZYGOTE.proc.pid != moment_zygote
    mine, theirs = json.loads(after.stdout), json.loads(fresh.stdout)
    assert "PYTHONHXMOMENT" not in mine["environ"] and mine["environ"] == theirs["environ"]


@pytest.mark.timeout(120)
def test_two_children_draw_different_random_numbers(probe):
    cwd, env = probe
    first, second = (json.loads(cliproc.run(["facts"], cwd=cwd, env=env, module="hx_probe").stdout) for _ in "12")
    assert first["random"][0] != second["random"][0] and first["random"][1] != second["random"][1]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "argv",
    [["exit", "0"], ["exit", "3"], ["exit", "300"], ["exit-text"], ["raise"], ["interrupt"], ["signal"], ["ending"]],
)
def test_a_forked_child_ends_as_a_fresh_interpreter_ends(probe, argv):
    cwd, env = probe
    forked, fresh = both(argv, cwd, env)
    assert (forked.returncode, forked.stdout) == (fresh.returncode, fresh.stdout)
    if argv[0] in ("raise", "interrupt"):  # the same traceback's last lines (the frames above differ)
        assert forked.stderr.splitlines()[0] == "Traceback (most recent call last):"
        assert forked.stderr.splitlines()[-2:] == fresh.stderr.splitlines()[-2:]
    else:
        assert forked.stderr == fresh.stderr
    expected = {"exit-text": 1, "raise": 1, "interrupt": -signal.SIGINT, "signal": -signal.SIGTERM, "ending": 0}
    assert forked.returncode == (expected[argv[0]] if argv[0] in expected else int(argv[-1]) & 0xFF)
    if argv[0] == "ending":
        assert forked.stdout == "unflushed\nline thread joined\n atexit ran\n"


@pytest.mark.timeout(120)
def test_a_timeout_kills_the_child_and_raises_as_subprocess_does(probe):
    cwd, env = probe
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        cliproc.run(["sleep"], cwd=cwd, env=env, module="hx_probe", timeout=3)
    assert time.monotonic() - started < 100
    assert caught.value.timeout == 3 and caught.value.cmd[1:] == ["-m", "hx_probe", "sleep"]
    pid = int(caught.value.stdout.split()[0])
    with pytest.raises(ProcessLookupError):  # killed, and waited for by the zygote
        os.kill(pid, 0)
    assert cliproc.run(["exit", "4"], cwd=cwd, env=env, module="hx_probe").returncode == 4  # still in step


@pytest.mark.timeout(120)
def test_a_call_while_another_thread_runs_one_starts_a_fresh_interpreter(probe, tmp_path):
    """The zygote forks one child at a time: a second thread's call meanwhile is ``subprocess.run``'s."""
    cwd, env = probe
    flag = tmp_path / "flag"
    before = dict(cliproc.STARTS)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(cliproc.run, ["wait", str(flag)], cwd=cwd, env=env, module="hx_probe", timeout=100)
        while cliproc.STARTS["zygote"] == before["zygote"] and not waiting.done():
            time.sleep(0.01)  # until the other thread holds the zygote
        touched = cliproc.run(["touch", str(flag)], cwd=cwd, env=env, module="hx_probe")
        waited = waiting.result()
    assert touched.returncode == 0 and int(touched.stdout) == os.getpid()  # a fresh interpreter, started here
    assert waited.returncode == 0 and int(waited.stdout) == cliproc._ZYGOTE.proc.pid
    assert cliproc.STARTS == {"zygote": before["zygote"] + 1, "fresh": before["fresh"] + 1}


@pytest.mark.timeout(120)
def test_what_the_zygote_cannot_start_as_fresh_runs_in_a_fresh_interpreter(probe, tmp_path):
    cwd, env = probe
    before = dict(cliproc.STARTS)
    odd = {**env, "PYTHONWARNINGS": "error::DeprecationWarning"}
    done = cliproc.run(["facts"], cwd=cwd, env=odd, module="hx_probe")
    assert json.loads(done.stdout)["ppid"] == os.getpid()  # a fresh interpreter, started here
    assert cliproc.STARTS == {"zygote": before["zygote"], "fresh": before["fresh"] + 1}
    with pytest.raises(FileNotFoundError):  # as subprocess.run raises
        cliproc.run(["facts"], cwd=tmp_path / "missing", env=env, module="hx_probe")


@pytest.mark.timeout(120)
def test_the_real_cli_through_the_zygote(tmp_path):
    """The helper's one job: ``python -m hipexplore``'s answers, byte for byte."""
    argv = ["bench", "triad", "--device", "host", "--out", "/proc/x.parquet"]
    forked = cliproc.run(argv, cwd=tmp_path)
    fresh = subprocess.run([sys.executable, "-m", "hipexplore", *argv], cwd=tmp_path, capture_output=True, text=True)
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert forked.returncode == 2 and "cannot create a file in the folder '/proc'" in forked.stderr
    assert Path(tmp_path).is_dir() and not list(tmp_path.iterdir())


@pytest.mark.timeout(120)
def test_shutdown_ends_the_zygote_and_waits_for_it(probe):
    """What tests/conftest.py calls before ``os._exit``: the zygote leaves when its socket closes and
    is waited for (its CPU time, and its children's, then counts in ``time pytest``); the next call
    starts another."""
    cwd, env = probe
    cliproc.run(["exit", "0"], cwd=cwd, env=env, module="hx_probe")
    zygote = cliproc._ZYGOTE
    cliproc.shutdown()
    assert zygote.proc.returncode == 0 and cliproc._ZYGOTE is None
    assert cliproc.run(["exit", "5"], cwd=cwd, env=env, module="hx_probe").returncode == 5
    assert cliproc._ZYGOTE is not zygote and cliproc._ZYGOTE.alive()
