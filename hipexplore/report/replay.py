"""Tuning-replay data for the notebooks, live or recorded: one pass per scenario, the scenario
table (outcome counts from ``schema.count_outcomes``), and the small cache demo."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import pandas as pd

from ..errors import ConfigError
from ..schema import count_outcomes, require_columns
from .recorded import load_recorded

# ----------------------------------------------------------------------------------------------
# the tuning replay, live or recorded

#: Which replay scenario the figures show, first present wins; ``off`` is the measured baseline.
PRIMARY_SCENARIOS = ("memory", "disk-cold", "disk", "disk-warm", "off")


@dataclass
class ReplayData:
    """A tuning replay split the way the figures need it."""

    frame: pd.DataFrame
    events: pd.DataFrame
    baseline: pd.DataFrame | None
    scenarios: pd.DataFrame
    primary: str
    source: str
    by_role: pd.DataFrame | None = None
    provenance: dict[str, str] = field(default_factory=dict)
    #: the compile floor of the run (tuning/floor.py: each unique kernel's fastest measured compile,
    #: summed, from every pass of the replay shown); the panel's dashed line. None without compiles.
    floor: dict | None = None
    #: the tuning list replayed (a shipped list's name, ``built-in`` for the transformer layer)
    list_name: str = ""
    #: the compiler replayed, its own cache in the cache's pass (``compiler_cache`` of the events), and what
    #: the cache saved against the baselines with 95% intervals over the passes (``tuning.savings``)
    compiler: str = ""
    own_cache: str = ""
    savings: dict | None = None


def scenario_table(frame: pd.DataFrame, wall_seconds: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per scenario: lookups, compiles, hits by tier, joins, failures, summed lookup
    seconds (serial cost) and, for live runs, the measured wall time of the pass."""
    require_columns(frame, ("scenario", "outcome", "lookup_seconds", "compile_seconds"), "replay frame")
    rows = []
    for name, grp in frame.groupby("scenario", sort=False):
        counts = count_outcomes(grp["outcome"])
        counts.pop("hits")
        rows.append(
            {
                "scenario": name,
                **counts,
                "lookup_seconds_sum": float(grp["lookup_seconds"].sum()),
                "wall_seconds": float((wall_seconds or {}).get(name, float("nan"))),
            }
        )
    return pd.DataFrame(rows).set_index("scenario")


def one_pass(frame: pd.DataFrame, jobs: int | None = None) -> tuple[pd.DataFrame, str]:
    """The rows of one replay pass per scenario: a recorded benchmark may hold several job counts
    (``jobs``) and repetitions (``round``); keep ``jobs`` (default: the smallest, serial) and
    the first round. Returns the rows and a note saying what was kept, empty when nothing was
    dropped."""
    notes = []
    if "jobs" in frame.columns and frame["jobs"].nunique() > 1:
        have = sorted(int(j) for j in pd.unique(frame["jobs"]))
        pick = have[0] if jobs is None else int(jobs)
        if pick not in have:
            raise ConfigError(f"replay frame has no passes with jobs={jobs!r}; it holds jobs {have}")
        frame = frame[frame["jobs"] == pick]
        notes.append(f"jobs={pick} of {have}")
    if "round" in frame.columns and frame["round"].nunique() > 1:
        rounds = sorted(pd.unique(frame["round"]))
        frame = frame[frame["round"] == rounds[0]]
        notes.append(f"round {rounds[0]} of {len(rounds)}")
    return frame, ("showing the replay pass with " + ", ".join(notes)) if notes else ""


def split_replay(
    frame: pd.DataFrame,
    source: str,
    wall_seconds: Mapping[str, float] | None = None,
    primary: str | None = None,
    jobs: int | None = None,
) -> ReplayData:
    """Pick the scenario to show (``primary``) and the measured cache-off pass as its baseline,
    from one pass (see ``one_pass``)."""
    require_columns(frame, ("scenario", "seq", "outcome", "lookup_seconds", "compile_seconds"), "replay frame")
    every_pass = frame
    frame, note = one_pass(frame, jobs)
    present = list(pd.unique(frame["scenario"]))
    if primary is None:
        primary = next((s for s in PRIMARY_SCENARIOS if s in present), None)
    if primary not in present:
        raise ConfigError(f"replay frame has no scenario {primary!r}; it holds {present}")
    events = frame[frame["scenario"] == primary].sort_values("seq").reset_index(drop=True)
    baseline = None
    if primary != "off" and "off" in present:
        off = frame[frame["scenario"] == "off"].sort_values("seq").reset_index(drop=True)
        baseline = off if len(off) == len(events) else None
    by_role = None
    if "role" in frame.columns:
        by_role = pd.crosstab(events["role"], events["outcome"])
    data = ReplayData(frame, events, baseline, scenario_table(frame, wall_seconds), primary, source, by_role)
    data.floor = _floor(frame)
    _own_cache(
        data,
        every_pass[every_pass["jobs"] == frame["jobs"].iloc[0]]
        if "jobs" in frame.columns and len(frame)
        else every_pass,
    )
    if note:
        data.provenance["recorded.replay_pass"] = note
    return data


def _own_cache(data: ReplayData, passes: pd.DataFrame) -> None:
    """The compiler, its own cache in the primary pass, and the savings over every pass of the
    shown job count (all rounds: ``one_pass`` keeps one for the figures)."""
    from ..tuning.savings import pass_walls, savings

    events = data.events
    data.compiler = str(events["compiler"].iloc[0]) if "compiler" in events.columns and len(events) else ""
    if "compiler_cache" in events.columns and len(events):
        data.own_cache = str(events["compiler_cache"].iloc[0])
    data.savings = savings(pass_walls(passes), data.primary)


def _floor(frame: pd.DataFrame) -> dict | None:
    """The floor of one pass per scenario (every scenario's compiles count), None when there is
    nothing to build it from (no entry/call_seconds columns: frames recorded before the replay kept them)."""
    from ..tuning.floor import floor_of_frame

    if not {"entry", "call_seconds", "digest"} <= set(frame.columns):
        return None
    fl = floor_of_frame(frame)
    return fl if fl["kernels"] else None


#: the target each compiler replays for when neither the device nor the caller names one
DEFAULT_TARGETS = {"host": "host", "hiprtc": "gfx90a", "nvrtc": "sm_90"}


def replay_compiler_for(device_properties: Mapping[str, object] | None) -> tuple[str, str]:
    """(compiler, target) of the device the benchmark timed: NVRTC for an NVIDIA ``sm_XX``,
    hiprtc for an AMD ``gfxNNN`` (feature suffixes such as ``:xnack-`` dropped), else the host
    compiler. A report on a GPU then replays the tuning list with the compiler that GPU needs."""
    props = device_properties or {}
    kind, target = str(props.get("kind", "")), str(props.get("target", "")).strip()
    if kind == "cuda" or target.startswith("sm_"):
        return "nvrtc", target if target.startswith("sm_") else DEFAULT_TARGETS["nvrtc"]
    if kind == "hip" or target.startswith("gfx"):
        return "hiprtc", target.split(":")[0] if target.startswith("gfx") else DEFAULT_TARGETS["hiprtc"]
    return "host", "host"


def resolve_compiler(compiler: str, target: str, device_properties: Mapping[str, object] | None) -> tuple[str, str]:
    """``compiler``/``target`` with ``"auto"`` replaced: the device's compiler (see
    ``replay_compiler_for``), and that compiler's target (the device's when it is that compiler's)."""
    dev_compiler, dev_target = replay_compiler_for(device_properties)
    comp = dev_compiler if compiler == "auto" else compiler
    if target == "auto":
        target = dev_target if comp == dev_compiler else DEFAULT_TARGETS.get(comp, "host")
    return comp, target


def replay_data(
    source: str = "live",
    compiler: str = "auto",
    target: str = "auto",
    problems: int | str | None = 1,
    candidates: int | None = 4,
    jobs: int = 1,
    cache: str = "memory",
    device_properties: Mapping[str, object] | None = None,
    tuning_list: str | None = None,
    every_problem: int | None = None,
    passes: int = 1,
) -> ReplayData:
    """Replay a (small) split-K tuning list through the cache, or load a recorded replay.

    source: ``"live"`` or a parquet file/folder holding a replay frame (cache event columns plus
    ``scenario``). compiler/target: ``"auto"`` picks the compiler of ``device_properties`` (the
    benchmarked device; the host compiler when None). problems: a count or names (see
    ``tuning.lists.select_problems``); candidates: how many candidates per problem to keep.
    tuning_list: a shipped list's name (``llama3-8b``, ``resnet50``) or a list file, replayed live
    in the selection problems / candidates / every_problem give (``tuning.listfile.ListSpec.select``);
    a whole list replays for an hour on a small host, so the report's full-scale panel comes from
    a recorded run (``source``: e.g. the folder ``benchmarks/tuning_scale.py`` wrote).
    passes: more than 1 replays live in alternated rounds with the baselines (``tuning.baselines``:
    cold, compiler-cache), so the savings beyond the compiler's own cache get their intervals.
    """
    compiler, target = resolve_compiler(compiler, target, device_properties)
    if source != "live":
        rec = load_recorded(source)
        if rec.events is None:
            raise ConfigError(
                f"no replay/cache-event parquet under {source!r} (expected columns seq, outcome, lookup_seconds, ...)"
            )
        frame = rec.events if "scenario" in rec.events.columns else rec.events.assign(scenario="recorded")
        data = split_replay(frame, source=str(source), jobs=jobs)
        if rec.passes is not None and len(data.events):
            passes = rec.passes
            for col in ("jobs", "round"):
                if col in passes.columns and col in data.frame.columns:
                    passes = passes[passes[col] == data.frame[col].iloc[0]]
            walls = dict(zip(passes["scenario"], passes["seconds"].astype(float)))
            data.scenarios = scenario_table(data.frame, walls)
        data.provenance.update({**rec.provenance, **({"recorded.note": " ".join(rec.notes)} if rec.notes else {})})
        data.list_name = str(rec.provenance.get("tuning.list", ""))
        if not data.list_name:  # benchmarks/tuning_scale.py names its frames step__list__compiler-target__jN
            parts = Path(next((f for f in rec.files if f.endswith(".parquet")), "")).name.split("__")
            data.list_name = parts[1] if len(parts) > 2 else ""
        return data
    from ..tuning.lists import build_list, select_problems
    from ..tuning.replay import run_replay

    if tuning_list:  # a shipped list (or a list file): a selection of it, the live report cannot wait an hour
        from ..tuning import listfile

        spec = listfile.read(tuning_list).select(
            None if problems is None else str(problems), candidates, every_problem=every_problem
        )
        tl = listfile.expand(spec, compiler, target)
    else:
        tl = build_list(
            compiler, target, problems=select_problems(None if problems is None else str(problems)), limit=candidates
        )
    if passes > 1:
        from ..tuning.baselines import run_rounds

        rep = run_rounds(tl, jobs=jobs, cache=cache, passes=passes)
    else:
        rep = run_replay(tl, jobs=jobs, cache=cache, measure_without_cache=True)
    walls = {name: s.seconds for name, s in rep.scenarios.items()}
    frame = rep.frame
    data = split_replay(frame[frame["scenario"] != "ideal"], source="live", wall_seconds=walls, primary=rep.primary)
    data.savings = rep.savings()  # every pass, the ideal's too
    data.scenarios = scenario_table(one_pass(frame)[0], walls)  # the table counts one pass a scenario
    data.floor = rep.floor()  # from every pass, the ideal's too
    data.list_name = tl.name or "built-in"
    return data


def cache_demo(compiler: str = "host", target: str = "host") -> pd.DataFrame:
    """Three lookups through a fresh memory cache: a compile, a hit of the same request, and the
    same request with the ``trace`` diagnostic (which bypasses the cache). Returns the events."""
    from ..compile.cache import CompileCache
    from ..tuning.gemm import GemmConfig, GemmShape, kernel_request
    from ..tuning.replay import make_compiler

    comp = make_compiler(compiler, 1)
    try:
        cache = CompileCache(disk_dir=False)
        req = kernel_request("fill", compiler, target, GemmShape(64, 64, 64), GemmConfig(split=1), label="demo fill")
        cache.get_or_compile(req, comp)
        cache.get_or_compile(req.with_(label="demo fill, again"), comp)
        cache.get_or_compile(req.with_(label="demo fill, traced", diagnostics=frozenset({"trace"})), comp)
    finally:
        comp.close()
    ev = cache.events()
    ev["digest"] = ev["digest"].str[:16]
    return ev[["seq", "kernel", "outcome", "digest", "lookup_seconds", "compile_seconds", "seconds_saved", "bytes"]]
