"""bench.interrupts: a signal during a (configuration, unit)'s write lands after it, on the main
thread, whichever thread the kernel gave it to; a noted signal whose KeyboardInterrupt was lost
still ends the sweep at the next (configuration, unit). Real signals, a real host sweep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import hipexplore as hx
from hipexplore.bench import interrupts
from hipexplore.bench.io import output_paths, read_units

ROOT = Path(__file__).resolve().parents[2]


def test_sigint_inside_the_hold_is_raised_right_after_it_not_inside():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(200):  # handlers run between bytecodes: a raise here would stop the loop
                time.sleep(0.001)
            steps.append("whole")
    assert steps == ["whole"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    interrupts.clear()


def test_a_signal_the_kernel_gives_another_thread_is_still_held_and_delivered():
    """The old hold masked the main thread only: a signal sent to another thread went past it."""
    ready, done = threading.Event(), threading.Event()
    t = threading.Thread(target=lambda: (ready.set(), done.wait(10)), daemon=True)
    t.start()
    ready.wait(5)
    steps = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts.held():
                signal.pthread_kill(t.ident, signal.SIGINT)
                for _ in range(200):
                    time.sleep(0.001)
                steps.append("whole")
    finally:
        done.set()
        t.join(5)
        interrupts.clear()
    assert steps == ["whole"]


def test_an_ignored_signal_stays_ignored_and_is_not_noted():
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        interrupts.check()  # nothing noted: no KeyboardInterrupt
        assert interrupts.noted() is None
    finally:
        signal.signal(signal.SIGINT, old)


def test_an_ignored_signal_inside_nested_holds_stays_ignored():
    """A pair's write holds inside the record's hold (``Orchestrator.add`` around ``Record.write``):
    the inner hold took the outer's recorder for a handler and noted an ignored SIGINT, which then
    ended a sweep started with SIGINT ignored (a background job's) at the next pair."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts.held():
            with interrupts.held():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
        interrupts.check()
        assert interrupts.noted() is None and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)
        interrupts.clear()


def test_a_signal_inside_nested_holds_is_raised_after_the_outer_one():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            with interrupts.held():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(100):
                    time.sleep(0.001)
                steps.append("inner")
            for _ in range(100):
                time.sleep(0.001)
            steps.append("outer")
    assert steps == ["inner", "outer"] and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    interrupts.clear()


def test_sigterm_with_its_default_action_ends_the_process_after_the_block(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from hipexplore.bench import interrupts
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
            open({str(tmp_path / "whole")!r}, 'w').write('written')
        open({str(tmp_path / "after")!r}, 'w').write('not reached')
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == -signal.SIGTERM, run.stderr
    assert (tmp_path / "whole").read_text() == "written" and not (tmp_path / "after").exists()


def test_a_noted_signal_whose_keyboardinterrupt_was_lost_ends_the_sweep_at_the_next_pair(tmp_path):
    """As a Ctrl-C raised inside a library's ``__del__`` is: printed there and dropped. The sweep
    stops at the next (configuration, unit) with what finished on disk; a new sweep is not hit."""
    out = tmp_path / "s.parquet"
    seen = []

    def on_progress(p):
        seen.append(p.done)
        if p.done == 2:
            interrupts.note(signal.SIGINT)  # the handler noted it; its raise went nowhere

    kw = dict(device="host", iterations=4, reference=False, units=2, warmup_s=0.0, progress=False, out=out)
    with pytest.raises(KeyboardInterrupt) as got:
        hx.sweep("triad", ["16KiB", "32KiB"], [1, 2], ["none"], on_progress=on_progress, **kw)
    assert seen == [1, 2] and got.value.sweep_progress is not None
    units = read_units(output_paths(out))
    assert units is not None and len(units) == 2
    again = hx.sweep("triad", ["16KiB", "32KiB"], [1, 2], ["none"], **kw)  # starts clean: measures the rest
    assert len(read_units(output_paths(out))) == 8 and len(again.summary) == 4
