"""Replay a tuning list through the compile cache and account for every compile.

Why: the MIGraphX cache claims (serial 369.8 s -> 117.3 s, parallel 24.7 s -> 9.1 s) rest on the
tails that repeat across split-K candidates. A replay compiles a whole list the way a tuner does,
once per cache mode, and keeps one row per lookup, so "compiles saved" and "seconds saved" are sums
over recorded events, and the ideal (each unique kernel compiled exactly once, fresh, directly
through the compiler) is measured beside it rather than assumed.

Scenarios (the ``scenario`` column):
  ``ideal``      each unique kernel compiled once, no cache, same compiler and jobs (one measured
                 pass, not a bound: tuning/floor.py has the floor);
  ``off``        cache with zero limits and no disk tier: every list entry compiles;
  ``memory``     memory tier only (in-flight sharing gives ``joined`` events when jobs > 1);
  ``disk-cold``  memory + disk tier on an empty directory;
  ``disk``       memory + disk on a directory that already held entries (not cold);
  ``disk-warm``  a fresh cache object on the same directory: every lookup should be a disk hit;
  ``triton-cold``/``-warm``  Triton's own TRITON_CACHE_DIR alone (tuning/triton_cache.py);
  ``cold``/``compiler-cache``  every compiler cache off / the compiler's own cache alone, warm
                 (tuning/baselines.py: a replay in alternated rounds, each pass in fresh processes).

Timing: ``seconds`` is the wall time of compiling the whole list (first submission to last
result). Before anything is timed the compiler is warmed up (one throw-away compile per worker),
so library loading and worker start-up land in no scenario.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from ..compile.base import Compiler
from ..compile.cache import CompileCache
from ..compile.events import EVENT_COLUMNS, CacheEvent, events_frame
from ..compile.request import CompileRequest, make_key
from ..errors import ConfigError, HipexploreError
from ..schema import REPLAY_COLUMNS
from .gemm import GemmConfig, GemmShape, kernel_request
from .lists import ListEntry, TuningList
from .schedule import _run_all, candidate_groups, run_tasks  # noqa: F401 - candidate_groups: public here too
from .triton_list import warm_up_requests
from .results import ReplayReport, ScenarioResult
from .timed_compiler import TimedCompiler, proc_cpu, cpu_delta, cpu_snapshot  # noqa: F401 - public here too

CACHE_MODES = ("off", "memory", "disk", "all")  # all: memory, then disk cold and warm
SCENARIOS = (
    "ideal",
    "off",
    "memory",
    "disk-cold",
    "disk",
    "disk-warm",
    "triton-cold",
    "triton-warm",
    "cold",
    "compiler-cache",
)

#: REPLAY_COLUMNS (schema): what the replay adds to the cache event columns (docs/ARCHITECTURE.md
#: "Tuning replay frame"); ``call_seconds``: wall time of the compiler call this lookup made (0 for hits and joins).
FRAME_COLUMNS = (*EVENT_COLUMNS, *REPLAY_COLUMNS)


def _check_jobs(jobs: int) -> int:
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"jobs must be a positive integer; got {jobs!r}")
    return jobs


# ----------------------------------------------------------------------------- results: tuning/results.py


def _annotate(
    events: pd.DataFrame,
    by_label: dict[str, ListEntry],
    scenario: str,
    jobs: int,
    calls: dict[str, float] | None = None,
) -> pd.DataFrame:
    """Add the list columns to cache events; every request label names its list entry."""
    frame = events.copy()
    missing = set(frame["kernel"]) - set(by_label)
    if missing:
        raise HipexploreError(f"cache events name kernels that are not in the tuning list: {sorted(missing)[:5]}")
    entries = [by_label[k] for k in frame["kernel"]]
    frame["problem"] = [e.problem for e in entries]
    frame["candidate"] = [e.candidate for e in entries]
    frame["role"] = [e.role for e in entries]
    frame["scenario"] = scenario
    frame["entry"] = pd.Series([e.index for e in entries], index=frame.index, dtype="int64")
    frame["jobs"] = jobs
    if calls is None:  # no cache in between: the lookup is the compiler call
        frame["call_seconds"] = frame["lookup_seconds"]
    else:
        frame["call_seconds"] = [
            float(calls.get(k, 0.0)) if o in ("compiled", "bypassed", "failed") else 0.0
            for k, o in zip(frame["kernel"], frame["outcome"])
        ]
    frame["round"] = pd.Series(0, index=frame.index, dtype="int64")  # ScenarioResult sets both
    frame["pass_seconds"] = float("nan")
    return frame[list(FRAME_COLUMNS)]


def own_cache_labels(frame: pd.DataFrame, compiler: Compiler, requests: dict[str, CompileRequest]) -> pd.DataFrame:
    """Rows made without a cache (the ideal, Triton's own-cache passes) get the compiler's own cache
    as each request's compile used it, as cache events do (``compiler_cache``)."""
    from ..compile.compiler_cache import label_for

    labels: dict[tuple, str] = {}
    out = []
    for kernel in frame["kernel"]:
        options = requests[kernel].options
        if options not in labels:
            labels[options] = label_for(compiler, options)
        out.append(labels[options])
    frame["compiler_cache"] = out
    return frame


# ----------------------------------------------------------------------------- CPU time


# ----------------------------------------------------------------------------- running
GRANULARITIES = ("candidate", "kernel", "scheduled")
#: the default: ``scheduled`` with more than one job (on the H200 machine, NVRTC at 8 jobs: memory pass
#: 1.021x the ideal, against 1.144x with ``candidate``), ``candidate`` serially (the two are the same
#: walk of the list then; ``candidate`` runs it on the calling thread)
AUTO = "auto"


def resolve_granularity(granularity: str, jobs: int) -> str:
    """``auto`` -> ``scheduled`` when jobs > 1, else ``candidate``; anything else is checked."""
    if granularity == AUTO:
        return "scheduled" if jobs > 1 else "candidate"
    if granularity not in GRANULARITIES:
        raise ConfigError(f"granularity must be one of {AUTO}, {', '.join(GRANULARITIES)}; got {granularity!r}")
    return granularity


def replay_through_cache(
    tuning_list: TuningList,
    compiler: Compiler,
    cache: CompileCache,
    scenario: str,
    jobs: int = 1,
    granularity: str = AUTO,
) -> ScenarioResult:
    """Compile every list entry through ``cache`` (a fresh cache object per scenario).

    granularity ``auto`` (default): ``scheduled`` when jobs > 1, else ``candidate``.
    ``candidate``: the unit of parallel work is a candidate, as in a tuner
    whose workers each build one candidate (fill, gemm, reduce, pointwise in order); two workers
    reaching the same tail at once is what makes the cache's in-flight sharing report ``joined``,
    and the joining worker idles meanwhile. ``kernel``: every list entry is its own task (in list
    order), so a worker only waits when the very next entry is in flight elsewhere. ``scheduled``:
    an entry in flight elsewhere is passed over while others are queued (tuning/schedule.py)."""
    _check_jobs(jobs)
    granularity = resolve_granularity(granularity, jobs)
    if scenario not in SCENARIOS or scenario == "ideal":
        raise ConfigError(
            f"scenario must be one of {', '.join(s for s in SCENARIOS if s != 'ideal')}; got {scenario!r}"
        )
    if len(cache.events()):
        raise ConfigError("replay needs a fresh CompileCache (this one already has events)")

    timed = TimedCompiler(compiler)

    def one(candidate: Sequence[ListEntry]) -> None:
        for entry in candidate:  # a candidate's kernels in launch order, as a tuner's worker does
            try:
                cache.get_or_compile(entry.request, timed)  # type: ignore[arg-type]
            except HipexploreError:
                pass  # recorded by the cache as a 'failed' event; the replay goes on

    before = cpu_snapshot(compiler)
    seconds = run_tasks(tuning_list, one, jobs, granularity)
    cpu = cpu_delta(before, cpu_snapshot(compiler))
    by_label = {e.label: e for e in tuning_list.entries}
    return ScenarioResult(
        scenario, jobs, seconds, _annotate(cache.events(), by_label, scenario, jobs, timed.calls), cpu
    )


def measure_ideal(tuning_list: TuningList, compiler: Compiler, jobs: int = 1) -> ScenarioResult:
    """Compile each unique kernel exactly once, directly through the compiler (no cache), with
    ``jobs`` at a time; rows are shaped like cache events (outcome ``compiled``)."""
    _check_jobs(jobs)
    identity = compiler.identity()
    first: dict[CompileRequest, ListEntry] = {}
    for e in tuning_list.entries:
        first.setdefault(e.request, e)
    uniques = list(first.values())
    rows: list[tuple[int, CacheEvent]] = []
    lock = threading.Lock()

    def one(entry: ListEntry) -> None:
        key = make_key(entry.request, identity)
        t0 = time.perf_counter()
        try:
            code = compiler.compile(entry.request)
        except HipexploreError as exc:
            elapsed = time.perf_counter() - t0
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            ev = CacheEvent(
                0,
                time.time(),
                key.digest,
                entry.label,
                entry.request.compiler,
                entry.request.target,
                entry.request.mode,
                "failed",
                elapsed,
                0.0,
                0.0,
                0,
                f"{type(exc).__name__}: {msg}",
            )
        else:
            elapsed = time.perf_counter() - t0
            recorded = code.compile_seconds if code.compile_seconds > 0 else elapsed
            ev = CacheEvent(
                0,
                time.time(),
                key.digest,
                entry.label,
                entry.request.compiler,
                entry.request.target,
                entry.request.mode,
                "compiled",
                elapsed,
                recorded,
                0.0,
                code.nbytes,
                "",
            )
        with lock:
            rows.append((entry.index, ev))

    before = cpu_snapshot(compiler)
    seconds = _run_all(uniques, one, jobs)
    cpu = cpu_delta(before, cpu_snapshot(compiler))
    rows.sort(key=lambda r: r[1].time)
    events = [replace(ev, seq=i) for i, (_, ev) in enumerate(rows)]
    by_label = {e.label: e for e in tuning_list.entries}
    frame = own_cache_labels(
        _annotate(events_frame(events), by_label, "ideal", jobs),
        compiler,
        {e.label: e.request for e in tuning_list.entries},
    )
    return ScenarioResult("ideal", jobs, seconds, frame, cpu)


def salted(tuning_list: TuningList, salt: str) -> TuningList:
    """The same list with ``typedef int hx_replay_salt_<salt>;`` appended to every source.

    Why: a compiler may keep its own cache of programs (on the H200 image NVRTC 13.0 compiled
    GEMMs it had seen before in ~17 ms against ~90 ms for NVRTC 13.5 here), so a pass that follows
    another over the same sources would be timed against a warm compiler. The salt is a real token
    after preprocessing (a ``-D`` macro the source never uses would vanish there), generates no
    code, and is one per pass: identical kernels *within* a pass stay identical, which is what the
    cache is measured on."""
    tag = re.sub(r"[^0-9A-Za-z_]", "_", salt)
    line = f"\ntypedef int hx_replay_salt_{tag};  /* hipexplore tune-replay: one salt per pass */\n"
    if tuning_list.compiler == "triton":  # a Python module: a module-level name (the backend turns Triton's cache off)
        line = f"\nhx_replay_salt_{tag} = 0  # hipexplore tune-replay: one salt per pass\n"
    from .listfile import relabel

    done: dict[CompileRequest, CompileRequest] = {}  # one salted request per distinct kernel, relabelled per entry
    entries = []
    for e in tuning_list.entries:
        req = done.get(e.request)
        if req is None:
            req = done[e.request] = e.request.with_(source=replace(e.request.source, text=e.request.source.text + line))
        entries.append(replace(e, request=relabel(req, e.request.label)))
    return replace(tuning_list, entries=tuple(entries))


def check_target(compiler: Compiler, target: str) -> None:
    """Refuse a target the compiler does not list, before any worker can crash on it."""
    known = tuple(compiler.targets())
    base = target.split(":")[0]
    if getattr(compiler, "name", "") == "nvrtc":
        base = re.sub(r"^(sm_\d+)[af]$", r"\1", base)
    if known and base not in known:
        shown = ", ".join(known[:24]) + (" ..." if len(known) > 24 else "")
        raise ConfigError(f"unknown target {target!r} for compiler {compiler.name!r}; expected one of: {shown}")


def warm_up(compiler: Compiler, compiler_name: str, target: str, jobs: int) -> None:
    """Compile throw-away kernels on ``jobs`` threads at once (one of each role per worker) so every
    worker has loaded its compiler and headers before anything is timed. A target the compiler
    rejects (or crashes on) fails here, clearly."""
    shape, cfg = GemmShape(8, 8, 8), GemmConfig(16, 16, 8, 2, 2, split=2, unroll=2)

    def one(i: int) -> None:
        if compiler_name == "triton":  # one tiny kernel of every role, salted apart from any list
            for req in warm_up_requests(target, f"{i}_{os.getpid()}"):
                compiler.compile(req)
            return
        # one kernel of every role (gelu pulls in the math headers), none of them in any list
        for role in ("fill", "gemm", "reduce", "pointwise"):
            req = kernel_request(
                role,
                compiler_name,
                target,
                shape,
                cfg,
                "gelu",
                extra_options=(f"-DHX_WARMUP={i}_{os.getpid()}",),
                label=f"warm-up {i} {role}",
            )
            compiler.compile(req)

    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            one(i)
        except HipexploreError as exc:
            errors.append(exc)

    _run_all(list(range(jobs)), guarded, jobs)
    if errors:
        exc = errors[0]
        raise ConfigError(
            f"compiler {compiler_name!r} cannot compile for target {target!r}: {str(exc).strip().splitlines()[0]}"
        ) from exc


def make_compiler(compiler_name: str, jobs: int, isolated: bool | None = None) -> Compiler:
    """The compiler a replay uses, private to it (the caller closes it; the shared instances of
    ``get_compiler`` stay open): isolated worker processes (``workers=jobs``) when jobs > 1, so
    concurrent compiles really run at once; the backend's default when serial."""
    from ..compile.registry import new_compiler

    if jobs > 1:
        isolated = True if isolated is None else isolated
        return new_compiler(compiler_name, isolated=isolated, workers=jobs)
    return new_compiler(compiler_name, isolated=isolated)


def _dir_has_entries(path: Path) -> bool:
    """Whether a disk cache directory already holds entries (lock files and temp files do not count)."""
    from ..compile.disk import DiskCache

    return path.is_dir() and any(True for _ in DiskCache(path).entries())


def replay_passes(
    cache: str, measure_without_cache: bool = True, warm_pass: bool = True, ideal_repeats: int = 1, ideal: bool = True
) -> list[str]:
    """The passes ``run_replay`` makes, in order (``disk`` stands for disk-cold or disk)."""
    names = (["warm-up"] if warm_pass else []) + (["ideal"] if ideal else [])
    if measure_without_cache or cache == "off":
        names.append("off")
    names += {"memory": ["memory"], "disk": ["disk", "disk-warm"], "all": ["memory", "disk", "disk-warm"]}.get(
        cache, []
    )
    again = ["ideal"] + (["memory"] if cache in ("memory", "all") else []) if ideal else []
    return names + again * (ideal_repeats - 1)


def _replay_compiler(
    tuning_list: TuningList, jobs: int, ideal_repeats: int, cache: str, compiler: Compiler | None, isolated: bool | None
) -> Compiler:
    """``run_replay``'s arguments checked, and the compiler it uses (the given one or a new one)."""
    _check_jobs(ideal_repeats)
    if cache not in CACHE_MODES:
        raise ConfigError(f"cache must be one of {', '.join(CACHE_MODES)}; got {cache!r}")
    comp = compiler if compiler is not None else make_compiler(tuning_list.compiler, jobs, isolated)
    if getattr(comp, "name", None) != tuning_list.compiler:
        raise ConfigError(
            f"the list is for {tuning_list.compiler!r} but the compiler given is {getattr(comp, 'name', comp)!r}"
        )
    return comp


def _repeats(
    n: int,
    ideal_pass: Callable[[int], None],
    memory_pass: Callable[[int], None],
    ideal_passes: list[ScenarioResult],
    memory_passes: list[ScenarioResult],
    scenarios: dict[str, ScenarioResult],
) -> dict[str, ScenarioResult]:
    """Repeats 1..n-1 of the ideal, each followed by a memory pass where the run has one; the
    scenarios with each side's fastest pass as its ``ideal`` / ``memory`` (the ideal first). One
    statistic for both sides: the fastest of two ideals against a single memory pass read the H200
    machine's 7% pass-to-pass spread as cache overhead. Every repeat feeds ``ReplayReport.floor``."""
    for r in range(1, n):
        ideal_pass(r)
        if memory_passes:
            memory_pass(r)
    if len(memory_passes) > 1:
        scenarios["memory"] = min(memory_passes, key=lambda res: res.seconds)
    if ideal_passes:
        scenarios = {"ideal": min(ideal_passes, key=lambda res: res.seconds), **scenarios}
    return scenarios


def run_replay(
    tuning_list: TuningList,
    jobs: int = 1,
    cache: str = "memory",
    cache_dir: str | os.PathLike | None = None,
    measure_without_cache: bool = True,
    compiler: Compiler | None = None,
    isolated: bool | None = None,
    max_entries: int = 4096,
    max_bytes: int = 1024**3,
    granularity: str = AUTO,
    salt: bool = True,
    warm_pass: bool = True,
    on_pass: Callable[[str], None] | None = None,
    ideal_repeats: int = 1,
    ideal: bool = True,
) -> ReplayReport:
    """Warm up, measure the ideal, optionally the cache-off pass, then the chosen cache mode.

    salt: each pass its own ``salted`` copy of the list (disk-cold and disk-warm share one; a given
    ``cache_dir`` is never salted, so its entries are reused across runs), so that no pass profits
    from the compiler's own caching of an earlier one. warm_pass: the list's unique kernels once
    (salted, untimed) before the ideal: on the H200 machine's CPU a fresh process's first pass ran
    up to 8x slower than the same pass later. cache: ``off``, ``memory`` or ``disk`` (cold or
    pre-populated, then warm in a fresh cache object on the same directory: ``cache_dir``, else a
    private temporary one). on_pass(name): called as each pass starts (``replay_passes`` lists them).
    The memory limits default high enough that nothing of a default list is evicted (the replay
    measures sharing, not the LRU). Only the disk passes use the Redis tier (``HIPEXPLORE_CACHE_REMOTE``).
    ideal_repeats: the ideal this many times, the first before the cache passes, each other one after
    them followed by a memory pass of its own; each side reads its fastest pass (``_repeats``).
    ideal=False skips it (a second tuning run). granularity ``auto``: ``scheduled`` when jobs > 1.
    """
    granularity = resolve_granularity(granularity, _check_jobs(jobs))
    comp = _replay_compiler(tuning_list, jobs, ideal_repeats, cache, compiler, isolated)
    with contextlib.ExitStack() as cleanup:  # on the way out: the temporary directory, then a compiler made here
        if compiler is None:
            cleanup.callback(comp.close)
        check_target(comp, tuning_list.target)
        warm_up(comp, tuning_list.compiler, tuning_list.target, jobs)
        run = _Run(tuning_list, comp, jobs, granularity, max_entries, max_bytes, salt, on_pass or (lambda name: None))
        primary = run.first_passes(warm_pass, ideal, cache, measure_without_cache)
        dir_used = ""
        if cache in ("disk", "all"):
            given = cache_dir is not None
            tmp = None if given else cleanup.enter_context(tempfile.TemporaryDirectory(prefix="hipexplore-tune-cache-"))
            dir_used = str(Path(cache_dir if given else tmp))
            first = run.disk_passes(tuning_list if given else run.pass_list("disk"), Path(dir_used))
            primary = first if cache == "disk" else primary
        run.memory_passes = [run.scenarios["memory"]] if "memory" in run.scenarios else []
        scenarios = _repeats(
            ideal_repeats if ideal else 0,
            run.ideal_pass,
            run.memory_pass,
            run.ideal_passes,
            run.memory_passes,
            run.scenarios,
        )
        return run.report(cache, primary, scenarios, dir_used)


@dataclass
class _Run:
    """What the passes of one ``run_replay`` share: the compiler, the limits, and the run's salt, each
    pass salted with its own name (unless salt is off) so that none profits from the compiler's own
    caching of an earlier one; it keeps the scenarios and every ideal and memory pass for ``_repeats``."""

    tuning_list: TuningList
    comp: Compiler
    jobs: int
    granularity: str
    max_entries: int
    max_bytes: int
    salt: bool
    step: Callable[[str], None]
    run_salt: str = field(default_factory=lambda: f"{os.getpid()}_{time.time_ns()}")
    scenarios: dict[str, ScenarioResult] = field(default_factory=dict)
    ideal_passes: list[ScenarioResult] = field(default_factory=list)
    memory_passes: list[ScenarioResult] = field(default_factory=list)

    def pass_list(self, name: str) -> TuningList:
        """The list pass ``name`` replays: its own salted copy (unless salt is off)."""
        return salted(self.tuning_list, f"{self.run_salt}_{name}") if self.salt else self.tuning_list

    def first_passes(self, warm_pass: bool, ideal: bool, cache: str, measure_without_cache: bool) -> str:
        """The warm-up, the first ideal, the cache-off and the memory pass (those the run makes);
        returns the primary scenario so far."""
        if warm_pass:  # the list's unique kernels once, salted, untimed: the first timed pass must not pay for warm-up
            self.step("warm-up")
            measure_ideal(salted(self.tuning_list, f"{self.run_salt}_warm"), self.comp, self.jobs)
        if ideal:  # the first before the cache passes, repeats after: a machine speeding up favours neither side
            self.ideal_pass(0)
        primary = "off"
        if measure_without_cache or cache == "off":
            self.step("off")
            off = CompileCache(max_entries=0, max_bytes=0, disk_dir=False, remote=False)
            self.scenarios["off"] = replay_through_cache(
                self.pass_list("off"), self.comp, off, "off", self.jobs, self.granularity
            )
        if cache in ("memory", "all"):
            self.step("memory")
            self.scenarios["memory"] = self._memory(self.pass_list("memory"))
            primary = "memory"
        return primary

    def disk_passes(self, disk_list: TuningList, path: Path) -> str:
        """The two disk passes, each in a fresh cache object on ``path`` (the first is ``disk-cold``
        on an empty directory, else ``disk``); returns the first one's name."""
        first = "disk" if _dir_has_entries(path) else "disk-cold"
        for name in (first, "disk-warm"):
            self.step(name)
            c = CompileCache(max_entries=self.max_entries, max_bytes=self.max_bytes, disk_dir=path)
            self.scenarios[name] = replay_through_cache(disk_list, self.comp, c, name, self.jobs, self.granularity)
        return first

    def ideal_pass(self, r: int) -> None:
        """Ideal pass ``r``: each repeat its own salt, so a fresh compile every time."""
        self.step("ideal")
        self.ideal_passes.append(
            measure_ideal(self.pass_list("ideal" if r == 0 else f"ideal{r}"), self.comp, self.jobs)
        )

    def memory_pass(self, r: int) -> None:
        """Memory pass ``r``, alternating with the ideal: its own salt and its own empty cache."""
        self.step("memory")
        self.memory_passes.append(self._memory(self.pass_list(f"memory{r}")))

    def report(self, cache: str, primary: str, scenarios: dict[str, ScenarioResult], dir_used: str) -> ReplayReport:
        """The run's report: its settings, the scenarios and every ideal and memory pass."""
        return ReplayReport(
            self.tuning_list,
            self.jobs,
            cache,
            self.comp.isolated,
            primary,
            scenarios,
            dir_used,
            self.granularity,
            self.salt,
            self.ideal_passes,
            self.memory_passes,
        )

    def _memory(self, tl: TuningList) -> ScenarioResult:
        """One memory pass: the list through a fresh memory-only cache (no disk, no Redis)."""
        mem = CompileCache(max_entries=self.max_entries, max_bytes=self.max_bytes, disk_dir=False, remote=False)
        return replay_through_cache(tl, self.comp, mem, "memory", self.jobs, self.granularity)
