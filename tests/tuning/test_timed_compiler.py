"""hipexplore.tuning.timed_compiler: the replay's compiler seen through a stopwatch, and the CPU
seconds of this process, its waited-for children (cc) and an isolated compiler's workers. Real
compiles with the host compiler, in-process and isolated (worker processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import require_compiler
from hipexplore.compile import CompileRequest, Source
from hipexplore.tuning.timed_compiler import proc_cpu, TimedCompiler, cpu_delta, cpu_snapshot


def request(i: int, label: str) -> CompileRequest:
    # a body cc spends real time on, different per i (no compiler-side reuse)
    body = " + ".join(f"(x * {j + i} ^ (x >> {j % 7}))" for j in range(400))
    return CompileRequest(Source(f"k{i}.c", f"int k(int x) {{ return {body}; }}\n"), "host", "host", label=label)


@pytest.mark.timeout(300)
def test_every_compile_call_is_timed_by_label_and_summed():
    comp = require_compiler("host")
    timed = TimedCompiler(comp)
    assert timed.name == comp.name and timed.available() and timed.targets() == comp.targets()
    assert timed.identity() == comp.identity() and timed.isolated == comp.isolated
    code = timed.compile(request(1, "a"))
    assert code.binary and set(timed.calls) == {"a"} and timed.calls["a"] > 0
    first = timed.calls["a"]
    t0 = time.perf_counter()
    timed.compile(request(2, "a"))  # the same label again: summed
    outer = time.perf_counter() - t0
    assert first + outer - 0.02 <= timed.calls["a"] <= first + outer  # both calls, each timed around the compile
    timed.compile(request(3, "b"))
    assert set(timed.calls) == {"a", "b"} and 0 < timed.calls["b"]


@pytest.mark.timeout(300)
def test_a_failed_compile_is_timed_too_and_threads_sum_safely():
    from hipexplore.errors import CompileError

    timed = TimedCompiler(require_compiler("host"))
    with pytest.raises(CompileError):
        timed.compile(CompileRequest(Source("bad.c", "int k( {\n"), "host", "host", label="bad"))
    assert timed.calls["bad"] > 0
    threads = [threading.Thread(target=timed.compile, args=(request(10 + i, "t"),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert timed.calls["t"] > 0 and set(timed.calls) == {"bad", "t"}


@pytest.mark.timeout(300)
def test_cpu_snapshots_count_cc_and_isolated_workers():
    comp = require_compiler("host")
    before = cpu_snapshot(comp)
    assert set(before) == {0}  # in-process: this process alone (cc is its waited-for child)
    comp.compile(request(20, "c"))
    assert cpu_delta(before, cpu_snapshot(comp)) > 0
    from hipexplore.compile.isolation import IsolatedCompiler

    with TimedCompiler(IsolatedCompiler("host", workers=1, timeout=120.0)) as iso:
        iso.compile(request(21, "warm"))  # starts the worker
        pids = iso.worker_pids()
        assert len(pids) == 1 and pids[0] != os.getpid()
        snap = cpu_snapshot(iso)
        assert set(snap) == {0, pids[0]}
        iso.compile(request(22, "w"))
        after = cpu_snapshot(iso)
        assert after[pids[0]] > snap[pids[0]]  # the worker (and its cc) did the work
        assert cpu_delta(snap, after) >= after[pids[0]] - snap[pids[0]]
    assert iso.closed


@pytest.mark.timeout(120)
def test_proc_cpu_of_a_busy_process_a_dead_one_and_the_delta_of_a_new_worker():
    busy = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\ntime.sleep(30)",
        ]
    )
    try:
        deadline = 0
        while proc_cpu(busy.pid) < 0.2 and deadline < 200:
            threading.Event().wait(0.05)
            deadline += 1
        assert proc_cpu(busy.pid) >= 0.2
    finally:
        busy.kill()
        busy.wait()
    assert proc_cpu(busy.pid) == 0.0  # gone: nothing, not an error
    # a worker that appeared between two snapshots counts from zero
    assert cpu_delta({0: 1.0}, {0: 1.5, 42: 0.25}) == pytest.approx(0.75)
