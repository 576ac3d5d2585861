"""Tuning-list replay through the real cache with the real compilers, at small size: the numbers the
CLI reports (kernels, unique kernels, compiles, hits, joins) are reproduced from the list itself."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from hipexplore.cli import main
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.registry import get_compiler
from hipexplore.errors import ConfigError
from hipexplore.tuning.lists import build_list, select_problems
from hipexplore.tuning.replay import FRAME_COLUMNS, measure_ideal, replay_through_cache, run_replay


def _available(name: str):
    from conftest import require_compiler

    return require_compiler(name)


def _small(compiler: str = "host", target: str = "host", problems: str = "2", limit: int = 3):
    return build_list(compiler, target, problems=select_problems(problems, tokens=64, d_model=32), limit=limit)


# ------------------------------------------------------------------------------------ replay (host)
def test_host_replay_numbers_are_reproduced():
    comp = _available("host")
    tl = _small()
    # independent count: 2 problems x 3 candidates (split 1, 2, 4), tails shared per problem
    assert tl.kernels == 2 * (3 + 4 + 4)
    expected_unique = len({e.request for e in tl.entries})
    assert tl.unique_kernels == expected_unique
    rep = run_replay(tl, jobs=1, cache="memory", compiler=comp)
    js = rep.to_json()
    assert js["kernels"] == tl.kernels and js["unique_kernels"] == expected_unique
    assert js["compiles"] == expected_unique
    assert js["hits"] == tl.kernels - expected_unique and js["joins"] == 0 and js["failed"] == 0
    off = js["scenarios"]["off"]
    assert off["compiles"] == tl.kernels and off["hits"] == 0
    assert js["scenarios"]["ideal"]["compiles"] == expected_unique
    assert js["seconds_without_cache_source"] == "measured"
    assert js["seconds_without_cache"] == pytest.approx(off["seconds"])
    # the recorded sum counts each entry's compile time once: larger than the unique compiles
    assert js["seconds_without_cache_recorded_sum"] > rep.scenarios["memory"].summary()["compile_seconds"]
    frame = rep.frame
    assert list(frame.columns) == list(FRAME_COLUMNS)
    assert set(frame["scenario"]) == {"ideal", "off", "memory"}
    assert set(frame["role"]) == {"gemm", "fill", "reduce", "pointwise"}
    mem = frame[frame["scenario"] == "memory"]
    # every memory hit is a tail or a repeated kernel whose digest was compiled earlier
    compiled_digests = set(mem.loc[mem["outcome"] == "compiled", "digest"])
    assert len(compiled_digests) == expected_unique
    assert set(mem.loc[mem["outcome"] == "memory-hit", "digest"]) <= compiled_digests
    assert (mem.loc[mem["outcome"] == "memory-hit", "role"] != "gemm").all()
    # only lookups that called the compiler carry compiler time
    assert (mem.loc[mem["outcome"] == "memory-hit", "call_seconds"] == 0).all()
    assert (mem.loc[mem["outcome"] == "compiled", "call_seconds"] > 0).all()
    # labels map back to the list entry
    for row in mem.itertuples():
        assert row.kernel == f"{row.problem}/{row.candidate}/{row.role}"
    # the parquet round trip keeps the contract
    assert list(pd.read_parquet(_roundtrip(frame)).columns) == list(FRAME_COLUMNS)


def _roundtrip(frame: pd.DataFrame):
    import io

    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    buf.seek(0)
    return buf


def test_host_disk_cold_then_warm(tmp_path):
    comp = _available("host")
    tl = _small(limit=2)
    rep = run_replay(tl, jobs=1, cache="disk", cache_dir=tmp_path / "c", compiler=comp, measure_without_cache=False)
    cold, warm = rep.scenarios["disk-cold"].summary(), rep.scenarios["disk-warm"].summary()
    assert rep.primary == "disk-cold"
    assert cold["compiles"] == tl.unique_kernels and cold["disk_hits"] == 0
    assert warm["compiles"] == 0
    assert warm["disk_hits"] == tl.unique_kernels  # first sight of each kernel in a fresh cache object
    assert warm["memory_hits"] == tl.kernels - tl.unique_kernels
    assert warm["hits"] == tl.kernels and cold["hits"] == tl.kernels - tl.unique_kernels  # both tiers count
    assert rep.to_json()["seconds_without_cache_source"] == "recorded-sum"
    # a second run on the now-populated directory is not called cold
    again = run_replay(tl, jobs=1, cache="disk", cache_dir=tmp_path / "c", compiler=comp, measure_without_cache=False)
    assert again.primary == "disk" and again.to_json()["compiles"] == 0


@pytest.mark.parametrize("granularity", ["candidate", "kernel", "scheduled"])
def test_parallel_replay_compiles_each_unique_kernel_once(granularity):
    _available("host")
    tl = _small(problems="2", limit=6)
    rep = run_replay(tl, jobs=2, cache="memory", measure_without_cache=False, granularity=granularity)
    assert rep.to_json()["granularity"] == granularity
    # strict JSON: no NaN (outside_compiler_seconds is undefined for parallel passes)
    json.loads(json.dumps(rep.to_json()), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert rep.isolated  # worker processes, so two compiles really run at once
    mem = rep.frame[rep.frame["scenario"] == "memory"]
    compiled = mem[mem["outcome"] == "compiled"]
    assert compiled["digest"].is_unique and len(compiled) == tl.unique_kernels
    js = rep.to_json()
    assert js["hits"] + js["joins"] == tl.kernels - tl.unique_kernels
    assert js["failed"] == 0
    if granularity == "scheduled":  # a worker never takes a kernel that is in flight on another one
        assert js["joins"] == 0
    # joins wait for a compile in flight: their recorded compile time is the original's
    # the cache's own cost leaves out joins (they wait for another lookup's compile)
    not_joined = mem[mem["outcome"] != "joined"]
    assert js["cache_overhead_seconds"] == pytest.approx(
        float((not_joined["lookup_seconds"] - not_joined["call_seconds"]).sum())
    )
    joined = mem[mem["outcome"] == "joined"]
    for row in joined.itertuples():
        assert row.compile_seconds == pytest.approx(
            compiled.loc[compiled["digest"] == row.digest, "compile_seconds"].iloc[0]
        )


def test_replay_needs_a_fresh_cache():
    comp = _available("host")
    tl = _small(problems="1", limit=1)
    cache = CompileCache(max_entries=16, max_bytes=2**24, disk_dir=False)
    replay_through_cache(tl, comp, cache, "memory")
    with pytest.raises(ConfigError, match="fresh CompileCache"):
        replay_through_cache(tl, comp, cache, "memory")
    with pytest.raises(ConfigError, match="'warm'"):
        replay_through_cache(tl, comp, CompileCache(disk_dir=False), "warm")
    with pytest.raises(ConfigError, match="jobs"):
        measure_ideal(tl, comp, jobs=0)
    with pytest.raises(ConfigError, match="'batch'"):
        replay_through_cache(tl, comp, CompileCache(disk_dir=False), "memory", granularity="batch")


# ------------------------------------------------------------------------------------ GPU compilers
def test_nvrtc_replay_small():
    comp = _available("nvrtc")
    tl = _small("nvrtc", "sm_90", problems="attn_out,mlp_down", limit=2)
    rep = run_replay(tl, jobs=1, cache="memory", compiler=comp, measure_without_cache=False)
    js = rep.to_json()
    # attn_out and mlp_down share output shape and activation: fills and pointwise are shared
    assert tl.counts_by_role()["pointwise"] == {"kernels": 4, "unique": 1}
    assert js["compiles"] == tl.unique_kernels and js["hits"] == tl.kernels - tl.unique_kernels


def test_hiprtc_replay_tiny():
    _available("hiprtc")
    tl = _small("hiprtc", "gfx90a", problems="1", limit=2)
    rep = run_replay(tl, jobs=1, cache="memory", measure_without_cache=False)
    js = rep.to_json()
    assert (js["kernels"], js["unique_kernels"]) == (7, 6)  # split 1: 3 kernels; split 2: 4; pointwise shared
    assert js["compiles"] == 6 and js["hits"] == 1 and js["failed"] == 0


# ------------------------------------------------------------------------------------ CLI
def test_cli_json_fields(capsys, tmp_path):
    _available("host")
    frame_path = tmp_path / "events.parquet"
    rc = main(
        [
            "tune-replay",
            "--compiler",
            "host",
            "--target",
            "host",
            "--problems",
            "1",
            "--limit",
            "3",
            "--tokens",
            "32",
            "--d-model",
            "16",
            "--json",
            "--frame",
            str(frame_path),
        ]
    )
    assert rc == 0
    js = json.loads(capsys.readouterr().out)
    for field in ("kernels", "unique_kernels", "compiles", "hits", "seconds", "seconds_without_cache", "seconds_ideal"):
        assert field in js
    # 1 problem x 3 candidates (split 1, 2, 4): 3 + 4 + 4 kernels; 3 gemm + 3 fill + 2 reduce + 1 pointwise unique
    assert (js["kernels"], js["unique_kernels"], js["compiles"], js["hits"]) == (11, 9, 9, 2)
    assert js["scenarios"]["off"]["compiles"] == 11
    assert js["seconds"] > 0 and js["seconds_ideal"] > 0 and js["seconds_without_cache"] > 0
    assert js["provenance"]["git_revision"]
    frame = pd.read_parquet(frame_path)
    assert len(frame) == 9 + 11 + 11  # ideal + off + memory rows


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--compiler", "nvrtc", "--target", "sm_999"], "unknown target 'sm_999'"),
        (["--compiler", "host", "--target", "gfx90a"], "'gfx90a'"),
        (["--compiler", "hiprtc", "--target", "gfx942"], "'gfx942'"),
        (["--compiler", "host", "--problems", "qkv,nope"], "'nope'"),
        (["--compiler", "host", "--frame", "x.csv"], "x.csv"),
    ],
)
def test_cli_errors_exit_2(capsys, argv, match):
    rc = main(["tune-replay", *argv, "--limit", "1"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "error:" in err and match in err


@pytest.mark.parametrize(
    "argv", [["--compiler", "cuda"], ["--compiler", "host", "--jobs", "0"], ["--compiler", "host", "--cache", "redis"]]
)
def test_cli_argument_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(["tune-replay", *argv])
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize("compiler,target", [("nvrtc", "sm_90"), ("hiprtc", "gfx90a")])
def test_cli_runs_for_gpu_compilers(capsys, compiler, target):
    """The command a user types works for the GPU compilers too (tiny list: hiprtc is slow)."""
    _available(compiler)
    rc = main(
        [
            "tune-replay",
            "--compiler",
            compiler,
            "--target",
            target,
            "--problems",
            "1",
            "--limit",
            "2",
            "--estimate-without-cache",
            "--json",
        ]
    )
    assert rc == 0
    js = json.loads(capsys.readouterr().out)
    assert (js["kernels"], js["unique_kernels"], js["compiles"], js["hits"]) == (7, 6, 6, 1)
    assert js["seconds_without_cache_source"] == "recorded-sum" and js["seconds_without_cache_measured"] is None
    assert js["isolated"] is (compiler == "hiprtc")  # the backend's default when serial


def test_replay_never_closes_the_shared_compilers():
    """A replay owns its compiler: the registry's shared instance (which caches such as
    default_cache() hold on to) must still compile afterwards."""
    from hipexplore.compile.request import CompileRequest, Source

    shared = get_compiler("host", isolated=True, workers=2)
    cache = CompileCache(disk_dir=False)
    req = CompileRequest(Source("a.c", "int f(void) { return 1; }\n"), "host", "host")
    assert cache.get_or_compile(req, shared).outcome == "compiled"
    run_replay(_small(problems="1", limit=1), jobs=2, cache="off")
    assert not shared.closed
    assert cache.get_or_compile(req.with_(options=("-O1",)), shared).outcome == "compiled"
    assert cache.get_or_compile(req.with_(options=("-O1",))).outcome == "memory-hit"


# ------------------------------------------------------------------------------------ per-pass salt, warm pass
class _Recording:
    """The real host compiler, recording every request it is asked to compile, in order."""

    def __init__(self, inner) -> None:
        import threading

        self.inner = inner
        self.name = inner.name
        self.requests: list = []
        self._lock = threading.Lock()

    def identity(self):
        return self.inner.identity()

    def targets(self):
        return self.inner.targets()

    def __getattr__(self, name):  # the rest of the Compiler interface (isolated, worker_pids, ...)
        return getattr(self.inner, name)

    def compile(self, request):
        with self._lock:
            self.requests.append(request)
        return self.inner.compile(request)

    # the rest of the Compiler lifecycle (compile/base.py), passed on to the real compiler
    isolated = False

    def worker_pids(self):
        return self.inner.worker_pids()

    def crashing_targets(self):
        return self.inner.crashing_targets()

    @property
    def closed(self):
        return self.inner.closed

    def close(self):
        self.inner.close()


_SALT_RX = __import__("re").compile(r"typedef int hx_replay_salt_(\w+);")


def _salt_of(request) -> str | None:
    found = _SALT_RX.findall(request.source.text)
    assert len(found) <= 1, found
    return found[0] if found else None


def test_each_pass_compiles_its_own_salted_sources_after_an_untimed_warm_pass():
    """The replay's per-pass salt and warm pass, seen where they matter: in the sources that reach
    the compiler. Order: warm-up kernels, the warm pass (each unique kernel once), then ideal, off and
    memory, each pass with one salt of its own, so no compiled source of one pass is another's."""
    comp = _Recording(_available("host"))
    tl = _small(problems="1", limit=2)
    rep = run_replay(tl, jobs=1, cache="memory", compiler=comp)
    assert rep.to_json()["salted_per_pass"] is True
    reqs = comp.requests
    warm_up = [r for r in reqs if any(o.startswith("-DHX_WARMUP=") for o in r.options)]
    assert len(warm_up) == 4 and reqs[:4] == warm_up  # one kernel per role, first, unsalted
    passes: list[tuple[str, list]] = []  # (pass name, its requests), in the order compiled
    for r in reqs[4:]:
        salt = _salt_of(r)
        assert salt is not None, f"an unsalted compile after the warm-up: {r.label}"
        name = salt.rsplit("_", 1)[1]
        if not passes or passes[-1][0] != name:
            passes.append((name, []))
        passes[-1][1].append(r)
    assert [name for name, _ in passes] == ["warm", "ideal", "off", "memory"]
    counts = {name: len(rs) for name, rs in passes}
    assert counts == {
        "warm": tl.unique_kernels,
        "ideal": tl.unique_kernels,
        "off": tl.kernels,
        "memory": tl.unique_kernels,
    }
    salts = {name: {_salt_of(r) for r in rs} for name, rs in passes}
    assert all(len(s) == 1 for s in salts.values()), salts  # one salt per pass
    prefixes = {s.pop().rsplit("_", 1)[0] for s in salts.values()}
    assert len(prefixes) == 1  # one run
    sources = {name: {r.source.text for r in rs} for name, rs in passes}
    names = list(sources)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not sources[a] & sources[b], f"passes {a} and {b} compiled the same source text"
    # the salt is appended, the kernel itself unchanged: stripping it gives the list's own sources
    by_label = {e.label: e for e in tl.entries}
    for name, rs in passes:
        for r in rs:
            original = by_label[r.label].request
            assert r.with_(source=original.source) == original  # only the source text differs
            assert r.source.text.startswith(original.source.text)
            tail = r.source.text[len(original.source.text) :]
            assert _SALT_RX.search(tail) and tail.count("\n") == 2, tail  # one appended line, a real token
    # and in the events: no digest of one timed pass is another's
    frame = rep.frame
    digests = {s: set(frame.loc[frame["scenario"] == s, "digest"]) for s in ("ideal", "off", "memory")}
    assert not digests["ideal"] & digests["off"] and not digests["off"] & digests["memory"]
    assert not digests["ideal"] & digests["memory"]


def test_without_salt_or_warm_pass_the_passes_share_sources():
    """The switches do what they say (and the test above can tell them apart)."""
    comp = _Recording(_available("host"))
    tl = _small(problems="1", limit=1)
    rep = run_replay(tl, jobs=1, cache="memory", compiler=comp, salt=False, warm_pass=False)
    assert rep.to_json()["salted_per_pass"] is False
    after = comp.requests[4:]
    assert all(_salt_of(r) is None for r in after)
    assert len(after) == tl.unique_kernels + tl.kernels + tl.unique_kernels  # ideal, off, memory: no warm pass
    assert {r.source.text for r in after} == {e.request.source.text for e in tl.entries}


def test_cache_off_runs_the_off_pass_even_without_measure_without_cache():
    comp = _available("host")
    tl = _small(problems="1", limit=1)
    rep = run_replay(tl, jobs=1, cache="off", compiler=comp, measure_without_cache=False, warm_pass=False)
    assert rep.primary == "off" and set(rep.scenarios) == {"ideal", "off"}
    assert rep.to_json()["compiles"] == tl.kernels


def test_a_failing_entry_is_recorded_and_the_replay_goes_on():
    """A tuner's list may hold a kernel that does not compile: it is a 'failed' event, the other
    entries still compile."""
    from dataclasses import replace

    comp = _available("host")
    tl = _small(problems="1", limit=1)
    broken = tl.entries[0]
    bad_source = replace(broken.request.source, text=broken.request.source.text + "\nint broken = ;\n")
    entries = (replace(broken, request=broken.request.with_(source=bad_source)), *tl.entries[1:])
    bad = replace(tl, entries=entries)
    result = replay_through_cache(bad, comp, CompileCache(max_entries=16, max_bytes=2**26, disk_dir=False), "memory")
    frame = result.frame
    assert frame.loc[frame["entry"] == broken.index, "outcome"].tolist() == ["failed"]
    assert "CompileError" in frame.loc[frame["entry"] == broken.index, "error"].iloc[0]
    assert (frame.loc[frame["entry"] != broken.index, "outcome"] != "failed").all()
    assert len(frame) == tl.kernels


def test_warm_up_compiles_on_every_worker():
    """jobs=2: the warm-up runs its throw-away kernels on two threads at once, one set per worker."""
    comp = _Recording(get_compiler("host", isolated=True, workers=2))
    _available("host")
    tl = _small(problems="1", limit=1)
    run_replay(tl, jobs=2, cache="off", compiler=comp, measure_without_cache=False, warm_pass=False)
    tags = [o.split("=", 1)[1].split("_")[0] for r in comp.requests for o in r.options if o.startswith("-DHX_WARMUP=")]
    assert sorted(tags) == ["0"] * 4 + ["1"] * 4


def test_cache_all_runs_memory_and_disk_in_one_replay():
    _available("host")
    tl = _small(problems="1", limit=2)
    rep = run_replay(tl, cache="all", measure_without_cache=False)
    s = rep.to_json()["scenarios"]
    assert rep.primary == "memory" and {"memory", "disk-cold", "disk-warm"} <= set(s)
    assert s["memory"]["compiles"] == s["disk-cold"]["compiles"] == tl.unique_kernels
    assert s["disk-warm"]["compiles"] == 0 and s["disk-warm"]["disk_hits"] == tl.unique_kernels


# ------------------------------------------------------------------------------------ defaults (the floor: test_floor.py)
def test_the_default_schedule_with_more_than_one_job_is_scheduled(capsys):
    """The fastest schedule (on the H200 machine, NVRTC at 8 jobs: 1.021x the ideal against 1.144x
    for ``candidate``) is what a user gets without --granularity; serial runs stay ``candidate``."""
    from hipexplore.tuning.replay import resolve_granularity

    _available("host")
    assert resolve_granularity("auto", 2) == "scheduled" and resolve_granularity("auto", 1) == "candidate"
    assert resolve_granularity("kernel", 8) == "kernel"
    with pytest.raises(ConfigError, match="'batch'"):
        resolve_granularity("batch", 2)
    rep = run_replay(_small(problems="2", limit=3), jobs=2, cache="memory", measure_without_cache=False)
    assert rep.granularity == "scheduled" and rep.to_json()["joins"] == 0  # nobody waits on a kernel in flight
    for jobs, want in (("2", "scheduled"), ("1", "candidate")):
        assert (
            main(
                [
                    "tune-replay",
                    "--compiler",
                    "host",
                    "--problems",
                    "1",
                    "--limit",
                    "2",
                    "--tokens",
                    "32",
                    "--d-model",
                    "16",
                    "--jobs",
                    jobs,
                    "--estimate-without-cache",
                    "--json",
                    "--quiet",
                ]
            )
            == 0
        )
        assert json.loads(capsys.readouterr().out)["granularity"] == want


def test_the_off_and_memory_passes_never_use_the_redis_tier(monkeypatch):
    """With HIPEXPLORE_CACHE_REMOTE set (a team's shell), the cache-off and memory passes still
    measure what they say: no Redis lookups (an unreachable server would warn and slow them)."""
    import warnings

    _available("host")
    monkeypatch.setenv("HIPEXPLORE_CACHE_REMOTE", "redis://127.0.0.1:9/0")
    monkeypatch.setenv("HIPEXPLORE_CACHE_SECRET", "s3cret")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the remote tier's one-time warning would raise here
        rep = run_replay(_small(problems="1", limit=2), jobs=1, cache="memory")
    js = rep.to_json()
    assert js["remote_hits"] == 0 and js["scenarios"]["off"]["remote_hits"] == 0


def test_a_list_files_limit_above_every_problems_candidates_is_refused():
    from hipexplore.tuning.listfile import read

    spec = read("llama3-8b")
    most = max(len(c) for c in spec.candidates.values())
    assert spec.select(limit=most).candidates == spec.candidates  # the largest real limit keeps every candidate
    with pytest.raises(ConfigError, match=rf"--limit {most + 1} is above .* \(at most {most}\)"):
        spec.select(limit=most + 1)
