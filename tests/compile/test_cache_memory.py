"""The memory tier of CompileCache, with the real host compiler (``cc``) underneath.

Compiles are counted twice: by the cache's own events/counters and by a wrapper that counts
calls into the real compiler, so a cache that lies in its bookkeeping still fails.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from hipexplore.compile import CompileRequest, CompilerIdentity, Source, make_key
from hipexplore.compile.cache import CacheResult, CompileCache, default_cache
from hipexplore.compile.events import EVENT_COLUMNS
from hipexplore.errors import CompileError, ConfigError

REPO = Path(__file__).resolve().parents[2]


def _host():
    from conftest import require_compiler

    return require_compiler("host")


class Counting:
    """Wraps a real compiler: counts calls, can fail the first N calls, can wait on a gate."""

    def __init__(self, inner, fail_first: int = 0, gate: threading.Event | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.real_compiles = 0
        self.fail_first = fail_first
        self.gate = gate
        self.started = threading.Event()
        self._lock = threading.Lock()

    def available(self) -> bool:
        return self.inner.available()

    def unavailable_reason(self) -> str:
        return self.inner.unavailable_reason()

    def identity(self) -> CompilerIdentity:
        return self.inner.identity()

    def targets(self) -> tuple[str, ...]:
        return self.inner.targets()

    def compile(self, request: CompileRequest):
        with self._lock:
            self.calls += 1
            fail = self.calls <= self.fail_first
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(60), "test gate never opened"
        if fail:
            raise CompileError(
                "injected failure before the real compile",
                log="injected\nfailure",
                target=request.target,
                compiler=self.name,
            )
        code = self.inner.compile(request)
        with self._lock:
            self.real_compiles += 1
        return code


def answer_source(value: int, extra: str = "") -> str:
    return f"{extra}\nint answer(void) {{ return {value}; }}\n"


def request(value: int = 1, **kw) -> CompileRequest:
    return CompileRequest(Source("answer.c", answer_source(value)), "host", "host", **kw)


def call_answer(binary: bytes, tmp_path: Path) -> int:
    """Load the shared library and call answer(): proves which binary we were given."""
    path = tmp_path / f"lib{time.perf_counter_ns()}.so"
    path.write_bytes(binary)
    lib = ctypes.CDLL(str(path))
    lib.answer.restype = ctypes.c_int
    return int(lib.answer())


def outcomes(cache: CompileCache) -> list[str]:
    return cache.events()["outcome"].tolist()


# -- basics ------------------------------------------------------------------------------------
def test_compile_then_memory_hit_records_events(tmp_path):
    host = Counting(_host())
    cache = CompileCache(disk_dir=False)
    first = cache.get_or_compile(request(7), host)
    second = cache.get_or_compile(request(7), host)
    assert isinstance(first, CacheResult)
    assert (first.outcome, second.outcome) == ("compiled", "memory-hit")
    assert host.real_compiles == 1
    assert second.object_code.binary == first.object_code.binary
    assert call_answer(second.object_code.binary, tmp_path) == 7
    assert second.compile_seconds == first.compile_seconds > 0
    assert second.seconds_saved == pytest.approx(second.compile_seconds - second.lookup_seconds)
    assert first.seconds_saved == 0.0
    frame = cache.events()
    assert tuple(frame.columns) == EVENT_COLUMNS
    assert frame["seq"].tolist() == [0, 1]
    assert frame["digest"].nunique() == 1 and frame["digest"].iloc[0] == first.key.digest
    assert frame["bytes"].tolist() == [len(first.object_code.binary)] * 2
    stats = cache.stats()
    assert stats["lookups"] == 2 and stats["compiled"] == 1 and stats["memory_hits"] == 1
    assert stats["entries"] == 1 and stats["bytes"] == len(first.object_code.binary)
    for name in (
        "disk_hits",
        "joined",
        "failed",
        "bypassed",
        "evictions",
        "disk_entries",
        "disk_bytes",
        "seconds_saved",
        "compile_seconds",
    ):
        assert name in stats


def test_events_frame_has_columns_when_empty():
    frame = CompileCache(disk_dir=False).events()
    assert tuple(frame.columns) == EVENT_COLUMNS and len(frame) == 0


def test_request_without_compiler_uses_registry_and_default_cache_is_singleton():
    cache = CompileCache(disk_dir=False)
    result = cache.get_or_compile(request(3))
    assert result.outcome == "compiled"
    assert cache.get_or_compile(request(3)).outcome == "memory-hit"
    assert default_cache() is default_cache()


def test_compiler_mismatch_is_config_error():
    with pytest.raises(ConfigError, match="hiprtc"):
        CompileCache(disk_dir=False).get_or_compile(CompileRequest("x", "hiprtc", "gfx90a"), _host())


# -- keys ----------------------------------------------------------------------------------------
KEY_SCRIPT = """
import sys
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
req = CompileRequest(Source("answer.c", {src!r}), "host", "host", headers=(Source("h.h", "#define X 1\\n"),), options=("-O2",))
print(CompileCache(disk_dir=False).key_for(req).digest)
"""


def test_same_request_same_key_in_two_processes():
    src = answer_source(5)
    digests = set()
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", KEY_SCRIPT.format(src=src)], capture_output=True, text=True, cwd=REPO, timeout=120
        )
        assert out.returncode == 0, out.stderr
        digests.add(out.stdout.strip())
    here = CompileCache(disk_dir=False).key_for(
        CompileRequest(
            Source("answer.c", src), "host", "host", headers=(Source("h.h", "#define X 1\n"),), options=("-O2",)
        )
    )
    assert digests == {here.digest}


def test_every_input_changes_the_key():
    host = _host()
    cache = CompileCache(disk_dir=False)
    base = CompileRequest(
        Source("answer.c", answer_source(1)),
        "host",
        "host",
        headers=(Source("h.h", "#define X 1\n"),),
        options=("-O2",),
    )
    variants = {
        "base": base,
        "source": base.with_(source=Source("answer.c", answer_source(2))),
        "header": base.with_(headers=(Source("h.h", "#define X 2\n"),)),
        "option": base.with_(options=("-O1",)),
        "option order": base.with_(options=("-O2", "-g")),
        "target": base.with_(target="host-other"),
        "kernels": base.with_(kernels=("answer",)),
    }
    keys = {name: cache.key_for(req, host) for name, req in variants.items()}
    ident = host.identity()
    for field in ("version", "library", "stamp"):
        keys[f"identity.{field}"] = make_key(base, replace(ident, **{field: getattr(ident, field) + "-changed"}))
    keys["identity.extra"] = make_key(base, replace(ident, extra=(*ident.extra, ("cc1_stamp", "rebuilt"))))
    digests = [k.digest for k in keys.values()]
    assert len(set(digests)) == len(digests), keys
    # the label is a human name, not an input
    assert cache.key_for(base.with_(label="pretty"), host) == keys["base"]


def test_gpu_target_changes_the_key():
    from conftest import require_compiler

    require_compiler("hiprtc")
    cache = CompileCache(disk_dir=False)
    req = CompileRequest(Source("k.hip", "__global__ void k(float* a) { a[0] = 1; }"), "hiprtc", "gfx90a")
    keys = {t: cache.key_for(req.with_(target=t)) for t in ("gfx90a", "gfx908", "gfx90a:xnack-")}
    assert len({k.digest for k in keys.values()}) == 3


def test_identity_change_recompiles_through_the_cache(tmp_path):
    host = _host()

    class NewVersion(Counting):
        def identity(self):
            return replace(self.inner.identity(), version=self.inner.identity().version + "+rebuilt")

    old, new = Counting(host), NewVersion(host)
    cache = CompileCache(disk_dir=tmp_path)
    assert cache.get_or_compile(request(4), old).outcome == "compiled"
    assert cache.get_or_compile(request(4), new).outcome == "compiled"
    assert cache.get_or_compile(request(4), old).outcome == "memory-hit"
    assert (old.real_compiles, new.real_compiles) == (1, 1)


# -- digest collisions ---------------------------------------------------------------------------
def constant_digest(_: bytes) -> str:
    return "c0" * 32


def test_forced_digest_collision_never_returns_the_wrong_binary_in_memory(tmp_path):
    host = Counting(_host())
    cache = CompileCache(disk_dir=False, digest=constant_digest)
    a = cache.get_or_compile(request(11), host)
    b = cache.get_or_compile(request(22), host)
    assert a.key.digest == b.key.digest and a.key.canonical != b.key.canonical
    assert (a.outcome, b.outcome) == ("compiled", "compiled")
    assert call_answer(a.object_code.binary, tmp_path) == 11
    assert call_answer(b.object_code.binary, tmp_path) == 22
    again_b = cache.get_or_compile(request(22), host)
    again_a = cache.get_or_compile(request(11), host)
    assert again_b.outcome == "memory-hit" and call_answer(again_b.object_code.binary, tmp_path) == 22
    assert again_a.outcome == "compiled" and call_answer(again_a.object_code.binary, tmp_path) == 11
    assert host.real_compiles == 3


# -- LRU bounds ----------------------------------------------------------------------------------
def test_lru_by_entries(tmp_path):
    host = Counting(_host())
    cache = CompileCache(max_entries=2, disk_dir=False)
    for v in (1, 2, 3):
        assert cache.get_or_compile(request(v), host).outcome == "compiled"
    assert cache.stats()["entries"] == 2 and cache.stats()["evictions"] == 1
    assert cache.get_or_compile(request(3), host).outcome == "memory-hit"
    assert cache.get_or_compile(request(2), host).outcome == "memory-hit"  # 2 is now most recent
    assert cache.get_or_compile(request(1), host).outcome == "compiled"  # 1 was evicted; evicts 3
    assert cache.get_or_compile(request(2), host).outcome == "memory-hit"
    assert cache.get_or_compile(request(3), host).outcome == "compiled"
    assert host.real_compiles == 5


def test_lru_by_bytes(tmp_path):
    host = Counting(_host())
    size = len(CompileCache(disk_dir=False).get_or_compile(request(1), host).object_code.binary)
    cache = CompileCache(max_entries=100, max_bytes=int(size * 2.5), disk_dir=False)
    for v in (1, 2, 3):
        cache.get_or_compile(request(v), host)
    stats = cache.stats()
    assert stats["entries"] == 2 and stats["bytes"] <= int(size * 2.5) and stats["evictions"] == 1
    assert cache.get_or_compile(request(1), host).outcome == "compiled"
    assert cache.get_or_compile(request(3), host).outcome == "memory-hit"


def padded(value: int, pad_bytes: int) -> CompileRequest:
    """answer() returning ``value`` in a library made ``pad_bytes`` larger by a constant table."""
    extra = f"const unsigned char hx_pad[{pad_bytes}] = {{1}};"
    return CompileRequest(Source("answer.c", answer_source(value, extra)), "host", "host")


def test_entry_between_one_and_two_caps_is_not_stored_and_evicts_nothing(tmp_path):
    """A too-large entry is returned without touching the LRU: it neither enters (to be evicted
    at once) nor pushes the entries already there out."""
    host = Counting(_host())
    probe = CompileCache(disk_dir=False)
    small = len(probe.get_or_compile(request(1), host).object_code.binary)
    big_request = padded(2, 32 * 1024)
    cap = int(len(probe.get_or_compile(big_request, host).object_code.binary) / 1.5)
    assert small <= cap  # the small entry fits, the big one is 1.5 caps
    cache = CompileCache(max_bytes=cap, disk_dir=False)
    assert cache.get_or_compile(request(1), host).outcome == "compiled"
    big = cache.get_or_compile(big_request, host)
    assert cap < len(big.object_code.binary) < 2 * cap
    assert call_answer(big.object_code.binary, tmp_path) == 2
    stats = cache.stats()
    assert stats["entries"] == 1 and stats["evictions"] == 0 and stats["bytes"] == small
    assert cache.get_or_compile(request(1), host).outcome == "memory-hit"


def test_entry_larger_than_max_bytes_is_returned_but_not_stored(tmp_path):
    host = Counting(_host())
    cache = CompileCache(max_bytes=100, disk_dir=False)
    first = cache.get_or_compile(request(8), host)
    assert len(first.object_code.binary) > 100
    assert call_answer(first.object_code.binary, tmp_path) == 8
    assert cache.stats()["entries"] == 0
    assert cache.get_or_compile(request(8), host).outcome == "compiled"
    assert host.real_compiles == 2


@pytest.mark.parametrize("limits", [{"max_entries": 0}, {"max_bytes": 0}])
def test_zero_limits_disable_the_memory_tier(limits):
    host = Counting(_host())
    cache = CompileCache(disk_dir=False, **limits)
    assert [cache.get_or_compile(request(9), host).outcome for _ in range(2)] == ["compiled", "compiled"]
    assert host.real_compiles == 2 and cache.stats()["entries"] == 0


@pytest.mark.parametrize("limits", [{"max_entries": 0}, {"max_bytes": 0}])
def test_zero_limits_share_no_compile_in_flight(limits):
    """A memory tier turned off by either limit shares nothing: a second identical request that
    arrives while the first compiles compiles too (no ``joined``)."""
    gate = threading.Event()
    host = Counting(_host(), gate=gate)
    cache = CompileCache(disk_dir=False, **limits)
    got: list[str] = []
    threads = [
        threading.Thread(target=lambda: got.append(cache.get_or_compile(request(14), host).outcome)) for _ in range(2)
    ]
    threads[0].start()
    assert host.started.wait(30)
    threads[1].start()
    deadline = time.time() + 30
    while host.calls < 2 and time.time() < deadline:
        time.sleep(0.01)
    gate.set()
    for t in threads:
        t.join(60)
    assert got == ["compiled", "compiled"] and host.real_compiles == 2
    assert cache.stats()["joined"] == 0 and cache.stats()["in_flight"] == 0


def test_backend_without_its_own_time_gets_the_wall_time():
    """A compiler that reports compile_seconds 0 is timed by the cache (the events must not say a
    compile was free, nor a hit saved nothing)."""

    class Untimed(Counting):
        def compile(self, request):
            return replace(super().compile(request), compile_seconds=0.0)

    cache = CompileCache(disk_dir=False)
    t0 = time.perf_counter()
    first = cache.get_or_compile(request(15), Untimed(_host()))
    wall = time.perf_counter() - t0
    assert 0 < first.compile_seconds <= wall
    hit = cache.get_or_compile(request(15), Untimed(_host()))
    assert hit.outcome == "memory-hit" and hit.seconds_saved == pytest.approx(
        first.compile_seconds - hit.lookup_seconds
    )
    assert hit.seconds_saved > 0


def test_a_closed_registry_compiler_is_replaced_not_reused():
    """The cache holds the registry's compiler for requests that name none; once that compiler is
    closed, the next lookup gets a fresh one instead of 'compiler is closed'."""
    from conftest import TRIAD_HIP, require_compiler

    from hipexplore.compile.registry import get_compiler

    require_compiler("hiprtc")  # isolated by default: a compiler that can be closed
    cache = CompileCache(disk_dir=False)
    req = CompileRequest(Source("t.hip", TRIAD_HIP), "hiprtc", "gfx90a", kernels=("triad",))
    assert cache.get_or_compile(req).outcome == "compiled"
    shared = get_compiler("hiprtc")
    assert shared.worker_pids()  # the instance that compiled for the cache
    shared.close()
    assert cache.get_or_compile(req.with_(options=("-O1",))).outcome == "compiled"
    assert get_compiler("hiprtc") is not shared


@pytest.mark.parametrize("var", ["HIPEXPLORE_CACHE_MAX_ENTRIES", "HIPEXPLORE_CACHE_MAX_BYTES"])
def test_zero_limits_from_environment(monkeypatch, var):
    monkeypatch.setenv(var, "0")
    host = Counting(_host())
    cache = CompileCache(disk_dir=False)
    assert [cache.get_or_compile(request(10), host).outcome for _ in range(2)] == ["compiled", "compiled"]
    assert host.real_compiles == 2


@pytest.mark.parametrize(
    "var,value",
    [
        ("HIPEXPLORE_CACHE_MAX_ENTRIES", "lots"),
        ("HIPEXPLORE_CACHE_MAX_ENTRIES", "-1"),
        ("HIPEXPLORE_CACHE_MAX_BYTES", "1.5"),
        ("HIPEXPLORE_CACHE_DISK_MAX_BYTES", "2GiB"),
        ("HIPEXPLORE_CACHE_DISK", "maybe"),
    ],
)
def test_invalid_environment_is_config_error_naming_variable_and_value(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError) as err:
        CompileCache()
    assert var in str(err.value) and repr(value) in str(err.value) and "expected" in str(err.value)


@pytest.mark.parametrize(
    "kw", [{"max_entries": -1}, {"max_bytes": 1.5}, {"disk_max_bytes": "big"}, {"disk_dir": 3}, {"digest": "sha256"}]
)
def test_invalid_arguments_are_config_errors(kw, tmp_path):
    if "disk_max_bytes" in kw:
        kw["disk_dir"] = tmp_path
    with pytest.raises(ConfigError):
        CompileCache(**kw)


# -- concurrency ---------------------------------------------------------------------------------
def test_32_threads_on_one_key_compile_once():
    host = Counting(_host())
    cache = CompileCache(disk_dir=False)
    barrier = threading.Barrier(32)
    results: list[CacheResult] = []
    errors: list[BaseException] = []

    def worker():
        barrier.wait()
        try:
            results.append(cache.get_or_compile(request(32), host))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert host.calls == 1 and host.real_compiles == 1
    got = outcomes(cache)
    assert len(got) == 32 and got.count("compiled") == 1
    assert got.count("joined") + got.count("memory-hit") == 31
    assert got.count("joined") >= 1  # the threads were lined up on a barrier; some overlapped the compile
    assert len({r.object_code.binary for r in results}) == 1
    stats = cache.stats()
    assert stats["compiled"] == 1 and stats["joined"] + stats["memory_hits"] == 31


def test_failure_is_not_cached_and_joiners_get_the_exception():
    gate = threading.Event()
    host = Counting(_host(), fail_first=1, gate=gate)
    cache = CompileCache(disk_dir=False)
    errors: list[BaseException] = []

    def worker():
        try:
            cache.get_or_compile(request(12), host)
        except CompileError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    threads[0].start()
    assert host.started.wait(30)
    for t in threads[1:]:
        t.start()
    deadline = time.time() + 30
    while cache.stats()["lookups"] < 4 and time.time() < deadline:
        time.sleep(0.01)
    gate.set()
    for t in threads:
        t.join(60)
    assert len(errors) == 4 and all("injected failure" in str(e) for e in errors)
    assert host.calls == 1
    assert outcomes(cache) == ["failed"] * 4
    assert cache.stats()["in_flight"] == 0 and cache.stats()["entries"] == 0
    assert "CompileError: injected failure" in cache.events()["error"].iloc[0]
    retry = cache.get_or_compile(request(12), host)  # same key: compiles again, now for real
    assert retry.outcome == "compiled" and host.calls == 2 and host.real_compiles == 1
    assert cache.get_or_compile(request(12), host).outcome == "memory-hit"


def test_real_compile_error_is_not_cached():
    host = Counting(_host())
    cache = CompileCache(disk_dir=False)
    bad = CompileRequest(Source("bad.c", "int answer(void) { return ; ]\n"), "host", "host")
    for _ in range(2):
        with pytest.raises(CompileError) as err:
            cache.get_or_compile(bad, host)
        assert err.value.log  # the compiler's own log travels with the exception
    assert host.calls == 2 and outcomes(cache) == ["failed", "failed"]


def test_in_flight_entries_are_never_evicted():
    """max_entries=1 with two slow compiles in flight: finishing B must not evict A (still in
    flight) and a new request for A must join it rather than compile a second time."""
    host = _host()
    gate_a, gate_b = threading.Event(), threading.Event()
    comp_a, comp_b = Counting(host, gate=gate_a), Counting(host, gate=gate_b)
    cache = CompileCache(max_entries=1, disk_dir=False)
    out: dict[str, list[str]] = {"a": [], "b": []}

    def lookup(name, comp, value):
        out[name].append(cache.get_or_compile(request(value), comp).outcome)

    ta = threading.Thread(target=lookup, args=("a", comp_a, 101))
    tb = threading.Thread(target=lookup, args=("b", comp_b, 202))
    ta.start()
    tb.start()
    assert comp_a.started.wait(30) and comp_b.started.wait(30)
    assert cache.stats()["in_flight"] == 2
    gate_b.set()
    tb.join(60)
    assert out["b"] == ["compiled"]
    stats = cache.stats()
    assert stats["entries"] == 1 and stats["in_flight"] == 1 and stats["evictions"] == 0
    ta2 = threading.Thread(target=lookup, args=("a", comp_a, 101))
    ta2.start()
    deadline = time.time() + 30
    while cache.stats()["lookups"] < 3 and time.time() < deadline:
        time.sleep(0.01)
    gate_a.set()
    ta.join(60)
    ta2.join(60)
    assert sorted(out["a"]) == ["compiled", "joined"]
    assert comp_a.calls == 1 and comp_b.calls == 1
    assert cache.stats()["evictions"] == 1  # B left only when A was published and stored
    assert cache.get_or_compile(request(101), comp_a).outcome == "memory-hit"
    assert cache.get_or_compile(request(202), comp_b).outcome == "compiled"


# -- diagnostics -----------------------------------------------------------------------------------
def test_diagnostics_bypass_both_tiers(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path / "dumps"))
    host = Counting(_host())
    cache = CompileCache(disk_dir=tmp_path / "cache")
    plain = request(13)
    assert cache.get_or_compile(plain, host).outcome == "compiled"
    traced = plain.with_(diagnostics=frozenset({"trace"}))
    assert cache.key_for(traced, host) == cache.key_for(plain, host)  # same key, still no hit
    results = [cache.get_or_compile(traced, host) for _ in range(2)]
    assert [r.outcome for r in results] == ["bypassed", "bypassed"]
    assert host.real_compiles == 3
    stats = cache.stats()
    assert stats["bypassed"] == 2 and stats["entries"] == 1 and stats["disk_entries"] == 1
    assert all(r.seconds_saved == 0.0 for r in results)


def test_package_exports_and_compile_convenience(tmp_path):
    import hipexplore.compile as hc

    assert hc.CompileCache is CompileCache and hc.EVENT_COLUMNS == EVENT_COLUMNS
    assert hc.DiskCache.__name__ == "DiskCache" and hc.CacheEvent.__name__ == "CacheEvent"
    cache = hc.CompileCache(disk_dir=False)
    code = hc.compile(request(19), cache=cache)
    assert call_answer(code.binary, tmp_path) == 19
    assert hc.compile(request(19), cache=cache) is code  # the stored object, from memory
    assert outcomes(cache) == ["compiled", "memory-hit"]


def test_events_are_bounded_and_drops_are_counted(monkeypatch):
    """A long-lived process keeps the newest HIPEXPLORE_CACHE_MAX_EVENTS events; counters go on."""
    monkeypatch.setenv("HIPEXPLORE_CACHE_MAX_EVENTS", "5")
    cache = CompileCache(disk_dir=False)
    req = CompileRequest(Source("e.c", "int e(void) { return 3; }\n"), "host", "host")
    for _ in range(8):
        cache.get_or_compile(req)
    ev = cache.events()
    stats = cache.stats()
    assert len(ev) == 5 and list(ev["seq"]) == [3, 4, 5, 6, 7]
    assert stats["lookups"] == 8 and stats["events_dropped"] == 3 and stats["memory_hits"] == 7


def test_forced_digest_collision_never_joins_another_keys_compile(tmp_path):
    """Two different requests with one (injected) digest, the second arriving while the first is in
    flight: the second must compile on its own, never be handed the first one's binary as ``joined``.
    A third request for the first key does join (the join path is exercised, not avoided)."""
    host = _host()
    gate = threading.Event()
    slow_a, fast_b = Counting(host, gate=gate), Counting(host)
    cache = CompileCache(disk_dir=False, digest=constant_digest)
    got: dict[str, CacheResult] = {}
    errors: list[BaseException] = []

    def lookup(name, comp, value):
        try:
            got[name] = cache.get_or_compile(request(value), comp)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    ta = threading.Thread(target=lookup, args=("a", slow_a, 111))
    ta.start()
    assert slow_a.started.wait(30)
    assert cache.stats()["in_flight"] == 1
    ta2 = threading.Thread(target=lookup, args=("a2", slow_a, 111))  # same key: must join A
    ta2.start()
    deadline = time.time() + 30
    while cache.stats()["lookups"] < 2 and time.time() < deadline:
        time.sleep(0.01)
    tb = threading.Thread(target=lookup, args=("b", fast_b, 222))  # other key, same digest
    tb.start()
    tb.join(30)  # a compile of one line of C; a join onto the gated compile would wait forever
    b_done_while_a_in_flight = not tb.is_alive() and not gate.is_set()
    gate.set()
    for t in (ta, ta2, tb):
        t.join(60)
    assert not errors
    assert b_done_while_a_in_flight, "the colliding request waited on the other key's compile"
    assert got["b"].outcome == "compiled" and fast_b.real_compiles == 1
    assert got["b"].key.digest == got["a"].key.digest and got["b"].key.canonical != got["a"].key.canonical
    assert call_answer(got["b"].object_code.binary, tmp_path) == 222
    assert got["a"].outcome == "compiled" and call_answer(got["a"].object_code.binary, tmp_path) == 111
    assert got["a2"].outcome == "joined" and call_answer(got["a2"].object_code.binary, tmp_path) == 111
    assert slow_a.calls == 1
    assert sorted(outcomes(cache)) == ["compiled", "compiled", "joined"]
    assert cache.stats()["in_flight"] == 0
