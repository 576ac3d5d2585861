"""Several processes on one cache directory: nobody ever reads a torn or wrong entry.

Two kinds of load, named for what they are:
  * generated payloads written straight through DiskCache.put/get (volume: 4 processes x 50 keys,
    all racing on the same keys, with and without concurrent pruning) — 200 real host compiles
    would take minutes on the 2-core machine and add nothing to the file-layer question;
  * real host compiles through CompileCache (few distinct keys, 4 processes) for the full path.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import multiprocessing as mp
import os
import random
import tempfile
from pathlib import Path


from hipexplore.compile import ObjectCode
from hipexplore.compile.disk import DiskCache
from hipexplore.compile.request import CacheKey

N_PROCESSES = 4
N_KEYS = 50


def _key(i: int) -> CacheKey:
    canonical = json.dumps({"generated-payload": i}).encode()
    return CacheKey(canonical, hashlib.sha256(canonical).hexdigest())


def _payload(i: int) -> bytes:
    """Deterministic, distinct per key, 1-96 KiB, so a torn mix of two writes is detectable."""
    size = 1024 + (i * 7919) % (95 * 1024)
    seed = hashlib.sha256(str(i).encode()).digest()
    return (seed * (size // 32 + 1))[:size]


def _volume_worker(root: str, seed: int, rounds: int, max_bytes: int, barrier) -> dict:
    disk = DiskCache(root, max_bytes=max_bytes)
    rng = random.Random(seed)
    counts = {"hits": 0, "misses": 0, "wrong": 0, "writes": 0}
    barrier.wait()
    for round_ in range(rounds):
        order = list(range(N_KEYS))
        if round_:  # round 0 in the same order everywhere: all processes race on the same keys
            rng.shuffle(order)
        for i in order:
            got = disk.get(_key(i))
            code = ObjectCode(_payload(i), "host", "host", "shared-library", compile_seconds=0.1)
            if got is None:
                counts["misses"] += 1
                counts["writes"] += bool(disk.put(_key(i), code))
            elif got.binary != _payload(i):
                counts["wrong"] += 1
            else:
                counts["hits"] += 1
                if i % 3 == 0:  # republish over a live entry while the others read it
                    counts["writes"] += bool(disk.put(_key(i), code))
    counts.update({f"disk_{k}": v for k, v in disk.counters.items()})
    return counts


def _run_pool(fn, make_args):
    """Run fn in N_PROCESSES spawned processes; make_args(barrier) -> one argument tuple each."""
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(N_PROCESSES) as pool:
        barrier = manager.Barrier(N_PROCESSES)
        return pool.starmap(fn, make_args(barrier), chunksize=1)


def test_four_processes_fifty_generated_payload_keys_no_torn_read(tmp_path):
    root = str(tmp_path / "cache")
    results = _run_pool(_volume_worker, lambda b: [(root, seed, 3, 2 * 1024**3, b) for seed in range(N_PROCESSES)])
    assert sum(r["wrong"] for r in results) == 0
    assert sum(r["disk_corrupt"] for r in results) == 0
    assert sum(r["disk_key_mismatches"] for r in results) == 0
    total = sum(r["hits"] + r["misses"] for r in results)
    assert total == N_PROCESSES * 3 * N_KEYS
    assert sum(r["hits"] for r in results) >= N_PROCESSES * 2 * N_KEYS  # rounds 2 and 3 all hit
    report = DiskCache(root).verify()
    assert (report["checked"], report["ok"], report["corrupt"], report["failed"]) == (N_KEYS, N_KEYS, 0, 0)
    assert not list(Path(root).rglob(".tmp-*"))


def test_four_processes_with_concurrent_pruning_never_read_a_torn_entry(tmp_path):
    """A cap of about 15 of the 50 payloads: every process prunes while the others read."""
    root = str(tmp_path / "cache")
    cap = sum(len(_payload(i)) for i in range(15))
    results = _run_pool(_volume_worker, lambda b: [(root, seed, 3, cap, b) for seed in range(N_PROCESSES)])
    assert sum(r["wrong"] for r in results) == 0
    assert sum(r["disk_corrupt"] for r in results) == 0
    assert sum(r["disk_pruned"] for r in results) > 0
    final = DiskCache(root, max_bytes=cap)
    report = final.verify()
    assert report["corrupt"] == 0 and report["ok"] == report["checked"] > 0
    final.prune()
    assert final.stats()["bytes"] <= cap


# -- real compiles -----------------------------------------------------------------------------------
def _compile_worker(root: str, values: list[int], barrier) -> list[tuple[int, str, int]]:
    from hipexplore.compile import CompileRequest, Source
    from hipexplore.compile.cache import CompileCache

    cache = CompileCache(disk_dir=root)
    barrier.wait()
    out = []
    for _ in range(2):
        for v in values:
            req = CompileRequest(Source("answer.c", f"int answer(void) {{ return {v}; }}\n"), "host", "host")
            result = cache.get_or_compile(req)
            with tempfile.NamedTemporaryFile(suffix=".so", delete=False) as f:
                f.write(result.object_code.binary)
            try:
                got = int(ctypes.CDLL(f.name).answer())
            finally:
                os.unlink(f.name)
            out.append((v, result.outcome, got))
    return out


def test_four_processes_real_host_compiles_share_one_directory(tmp_path):
    from conftest import require_compiler

    require_compiler("host")
    root = str(tmp_path / "cache")
    values = [41, 42, 43]
    results = _run_pool(_compile_worker, lambda b: [(root, values[k:] + values[:k], b) for k in range(N_PROCESSES)])
    flat = [row for proc in results for row in proc]
    assert all(v == got for v, _, got in flat)  # every binary, hit or compiled, is the right one
    first_round = [o for proc in results for _, o, _ in proc[: len(values)]]
    second_round = [o for proc in results for _, o, _ in proc[len(values) :]]
    assert set(first_round) <= {"compiled", "disk-hit"}
    assert first_round.count("compiled") >= len(values)  # each key compiled somewhere
    assert second_round == ["memory-hit"] * len(second_round)
    assert DiskCache(root).verify()["ok"] == len(values)


# -- one digest for every key, across processes --------------------------------------------------
def _constant_digest(_: bytes) -> str:
    return "c0" * 32


class _Gated:
    """The real host compiler; a compile of ``gated_value``'s source waits on ``gate`` (in flight)."""

    def __init__(self, gated_value: int) -> None:
        import threading

        from hipexplore.compile.host import HostCompiler

        self.inner = HostCompiler()
        self.name = "host"
        self.gate = threading.Event()
        self.started = threading.Event()
        self.marker = f"return {gated_value};"

    def identity(self):
        return self.inner.identity()

    def compile(self, request):
        if self.marker in request.source.text:
            self.started.set()
            self.gate.wait(120)
        return self.inner.compile(request)


def _answer(v: int):
    from hipexplore.compile import CompileRequest, Source

    return CompileRequest(Source("answer.c", f"int answer(void) {{ return {v}; }}\n"), "host", "host")


def _call(binary: bytes) -> int:
    with tempfile.NamedTemporaryFile(suffix=".so", delete=False) as f:
        f.write(binary)
    try:
        return int(ctypes.CDLL(f.name).answer())
    finally:
        os.unlink(f.name)


def _collision_worker(root: str, index: int, shared_value: int, barrier) -> dict:
    """Phase 1: process 0 publishes ``shared_value`` (every key shares one file name). Phase 2: each
    process reads it back (a disk hit: the file holds that very key). Phase 3: each process compiles
    its own key, gated so it stays in flight, and meanwhile asks for ``shared_value`` on another
    thread: that lookup must not join the in-flight compile of the other key, and no disk read may
    hand it another key's entry, whatever the other processes wrote to the one file meanwhile."""
    import threading

    from hipexplore.compile.cache import CompileCache

    own = 1000 + index
    out: dict = {"index": index, "rows": []}

    def record(phase, value, result):
        out["rows"].append((phase, value, result.outcome, _call(result.object_code.binary)))

    if index == 0:
        record(
            1, shared_value, CompileCache(disk_dir=root, digest=_constant_digest).get_or_compile(_answer(shared_value))
        )
    barrier.wait()
    record(2, shared_value, CompileCache(disk_dir=root, digest=_constant_digest).get_or_compile(_answer(shared_value)))
    barrier.wait()
    cache = CompileCache(disk_dir=root, digest=_constant_digest)
    comp = _Gated(own)
    got: dict = {}

    def lookup(value):
        got[value] = cache.get_or_compile(_answer(value), comp)

    t_own = threading.Thread(target=lookup, args=(own,))
    t_own.start()
    while not comp.started.wait(0.05) and t_own.is_alive():  # its own key is on no disk: it must compile
        pass
    t_shared = threading.Thread(target=lookup, args=(shared_value,))
    t_shared.start()
    t_shared.join(30)
    out["shared_done_while_own_in_flight"] = not t_shared.is_alive()
    comp.gate.set()
    t_own.join(120)
    t_shared.join(120)
    record(3, own, got[own])
    record(3, shared_value, got[shared_value])
    return out


def test_processes_with_one_digest_never_take_another_keys_entry_or_join(tmp_path):
    from conftest import require_compiler

    require_compiler("host")
    root = str(tmp_path / "cache")
    shared = 777
    results = _run_pool(_collision_worker, lambda b: [(root, i, shared, b) for i in range(N_PROCESSES)])
    rows = [row for r in results for row in r["rows"]]
    wrong = [row for row in rows if row[1] != row[3]]
    assert not wrong, f"(phase, asked, outcome, got) rows with another key's binary: {wrong}"
    assert [row[2] for row in rows if row[0] == 1] == ["compiled"]
    assert [row[2] for row in rows if row[0] == 2] == ["disk-hit"] * N_PROCESSES  # the one file held that key
    third = [row for row in rows if row[0] == 3]
    assert all(o == "compiled" for _, v, o, _ in third if v != shared)  # no process had its own key on disk
    assert all(o in ("compiled", "disk-hit") for _, v, o, _ in third if v == shared)  # never "joined"
    assert all(r["shared_done_while_own_in_flight"] for r in results)
