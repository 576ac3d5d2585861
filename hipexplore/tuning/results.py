"""What a tuning replay measured: one ``ScenarioResult`` per pass, a ``ReplayReport`` per run.

Why apart from ``tuning.replay``: the replay runs passes; these only hold and summarise what the
passes recorded (counts per outcome, wall and CPU seconds, the cache's own overhead, the compile
floor) and turn it into the CLI's ``--json`` and the report's frames. ``tuning.replay`` still
names ``ReplayReport`` and ``ScenarioResult`` (its passes return them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..compile.events import events_frame
from ..schema import COMPILE_OUTCOMES, REPLAY_COLUMNS, count_outcomes
from .lists import TuningList


@dataclass
class ScenarioResult:
    """One pass over the list (or over its unique kernels, for ``ideal``)."""

    scenario: str
    jobs: int
    seconds: float
    frame: pd.DataFrame = field(repr=False)
    cpu_seconds: float = float("nan")
    #: the round of a replay in alternated rounds (``tuning.baselines``), 0 otherwise
    round: int = 0

    def __post_init__(self) -> None:
        """Every row says which pass it belongs to: its round and the pass's wall time (the
        savings' intervals are over passes: ``tuning.savings``)."""
        if len(self.frame.columns):
            self.frame["round"] = pd.Series(int(self.round), index=self.frame.index, dtype="int64")
            self.frame["pass_seconds"] = float(self.seconds)

    def summary(self) -> dict[str, Any]:
        f = self.frame
        outcome = f["outcome"]
        compiled = f[outcome.isin(COMPILE_OUTCOMES)]
        return {
            "scenario": self.scenario,
            "jobs": self.jobs,
            **count_outcomes(outcome),
            "seconds": float(self.seconds),
            # CPU time of this process and the compiler's workers during the pass
            "cpu_seconds": float(self.cpu_seconds),
            # wall time inside compiler calls, summed (> seconds when jobs > 1)
            "call_seconds": float(f["call_seconds"].sum()),
            # serial passes only: everything outside the compiler calls (keys, lookups, disk
            # reads and writes, event bookkeeping); the complete cost of the cache on top of compiling
            "outside_compiler_seconds": float(self.seconds - f["call_seconds"].sum())
            if self.jobs == 1
            else float("nan"),
            # time the compiler ran in this pass (sum over compiles; > seconds when jobs > 1)
            "compile_seconds": float(compiled["compile_seconds"].sum()),
            # recorded compile time of every lookup, hits included: the no-cache estimate
            "recorded_compile_seconds": float(f.loc[outcome != "failed", "compile_seconds"].sum()),
            "seconds_saved": float(f["seconds_saved"].sum()),
            # time spent in the cache itself: lookups minus the wall time of the compiler calls
            # they made (keys, locks, disk reads/writes, hits); joins wait for another lookup's
            # compile and are left out. What the cache costs beyond the ideal, free of load noise.
            "cache_overhead_seconds": float(
                (f["lookup_seconds"] - f["call_seconds"]).where(outcome != "joined", 0.0).sum()
            )
            if self.scenario != "ideal"
            else 0.0,
        }


@dataclass
class ReplayReport:
    """Everything one replay run measured; ``to_json()`` is the CLI's ``--json`` output."""

    tuning_list: TuningList = field(repr=False)
    jobs: int
    cache: str
    isolated: bool
    primary: str
    scenarios: dict[str, ScenarioResult]
    cache_dir: str = ""
    granularity: str = "candidate"
    salted: bool = False
    #: every ideal pass measured (``ideal_repeats``); ``scenarios["ideal"]`` is the fastest of them
    ideal_passes: list[ScenarioResult] = field(default_factory=list, repr=False)
    #: every memory pass measured (one per ideal repeat, alternating with them); ``scenarios["memory"]``
    #: is the fastest, the same statistic as the ideal's, so noise between passes favours neither side
    memory_passes: list[ScenarioResult] = field(default_factory=list, repr=False)
    #: a replay in alternated rounds (``tuning.baselines``): every pass of every scenario, in the order
    #: run; ``scenarios`` then holds each scenario's pass of median wall time
    passes: list[ScenarioResult] = field(default_factory=list, repr=False)
    #: the compiler's own cache per scenario (``compiler_cache.OwnCache.label``), as the passes recorded it
    own_caches: dict[str, str] = field(default_factory=dict)

    def all_passes(self) -> list[ScenarioResult]:
        """Every pass measured, each once (the chosen ones and the repeats)."""
        if self.passes:
            return list(self.passes)
        seen: dict[int, ScenarioResult] = {}
        for res in (*self.scenarios.values(), *self.ideal_passes, *self.memory_passes):
            seen.setdefault(id(res), res)
        return list(seen.values())

    def walls(self) -> dict[str, list[float]]:
        """Each scenario's pass wall times (the savings' intervals are over them)."""
        out: dict[str, list[float]] = {}
        for res in sorted(self.all_passes(), key=lambda r: r.round):
            out.setdefault(res.scenario, []).append(float(res.seconds))
        return out

    def savings(self) -> dict[str, Any]:
        """``saved_vs_cold``, ``saved_beyond_compiler_cache``, ``warm_beyond_compiler_cache``, ``memory_vs_ideal`` (``tuning.savings``)."""
        from .savings import savings

        return savings(self.walls(), self.primary)

    def floor(self) -> dict[str, Any]:
        """The compile floor of this run (tuning/floor.py): from every compile it measured."""
        from .floor import compile_floor

        return compile_floor([s.frame for s in self.all_passes()], self.jobs, self.tuning_list.unique_kernels)

    @property
    def frame(self) -> pd.DataFrame:
        """All scenarios, one row per lookup (or per ideal compile); a replay in rounds: every pass."""
        frames = [s.frame for s in (self.passes or self.scenarios.values())]
        return pd.concat(frames, ignore_index=True) if frames else empty_frame()

    def summary_frame(self) -> pd.DataFrame:
        """One row per scenario, the ideal beside the cache modes."""
        rows = [s.summary() for s in self.scenarios.values()]
        df = pd.DataFrame(rows)
        df.insert(0, "compiler", self.tuning_list.compiler)
        df.insert(1, "target", self.tuning_list.target)
        df["kernels"] = self.tuning_list.kernels
        df["unique_kernels"] = self.tuning_list.unique_kernels
        return df

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` record: the list, the primary pass's counts and wall time against the
        run without the cache, the ideal and the floor, each scenario's summary (keys in this order)."""
        main = self.scenarios[self.primary].summary()
        ideal = (
            self.scenarios["ideal"].summary()
            if "ideal" in self.scenarios
            else dict.fromkeys(("seconds", "compile_seconds", "cpu_seconds"), None)
        )
        off = self.scenarios.get("off")
        recorded_sum = main["recorded_compile_seconds"]
        measured = off.seconds if off is not None else None
        without = measured if measured is not None else recorded_sum
        out: dict[str, Any] = {
            **self._list_json(),
            **{k: main[k] for k in ("compiles", "hits", "memory_hits", "disk_hits", "remote_hits", "joins", "failed")},
            "seconds": main["seconds"],
            "seconds_without_cache": without,
            "seconds_without_cache_source": "measured" if measured is not None else "recorded-sum",
            "seconds_without_cache_measured": measured,
            # serial-equivalent: each list entry's recorded compile time, summed
            "seconds_without_cache_recorded_sum": recorded_sum,
            **self._ideal_and_floor_json(main, ideal),
            "seconds_saved_recorded": main["seconds_saved"],
            # the figure to quote: wall time without the cache (measured when measured) minus with it
            "seconds_saved": (without - main["seconds"]) if without is not None else None,
            "seconds_saved_quote": _SAVED_QUOTE,
            "cpu_seconds": main["cpu_seconds"],
            "cpu_seconds_ideal": ideal["cpu_seconds"],
            "cache_overhead_seconds": main["cache_overhead_seconds"],
            "outside_compiler_seconds": main["outside_compiler_seconds"],
            "overhead_vs_ideal": (main["seconds"] / ideal["seconds"] - 1.0) if ideal["seconds"] else None,
            "speedup_vs_without_cache": (without / main["seconds"]) if main["seconds"] > 0 else None,
            "by_role": self.tuning_list.counts_by_role(),
            "scenarios": {name: s.summary() for name, s in self.scenarios.items()},
            "cache_dir": self.cache_dir,
            **self._own_cache_json(),
        }
        return _json_safe(out)

    def _list_json(self) -> dict[str, Any]:
        """How the run was made and what it replayed: the list, its size, the settings of the passes."""
        tl = self.tuning_list
        return {
            "compiler": tl.compiler,
            "target": tl.target,
            "list": tl.name or "built-in",
            "list_file": tl.source,
            "jobs": self.jobs,
            "granularity": self.granularity,
            "salted_per_pass": self.salted,
            "isolated": self.isolated,
            "cache": self.cache,
            "scenario": self.primary,
            "problems": [p.name for p in tl.problems],
            "candidates": tl.n_candidates,
            "candidates_per_problem": len(tl.candidates)
            if not tl.name
            else max(sum(1 for _ in g) for g in candidates_by_problem(tl)),
            "kernels": tl.kernels,
            "unique_kernels": tl.unique_kernels,
        }

    def _ideal_and_floor_json(self, main: dict[str, Any], ideal: dict[str, Any]) -> dict[str, Any]:
        """The two references the cache pass is read against: the measured ideal (every pass of it) and
        the floor, a bound no pass that compiles every unique kernel can beat."""
        floor = self.floor()
        ideal_walls = [float(s.seconds) for s in self.ideal_passes] or (
            [ideal["seconds"]] if ideal["seconds"] is not None else []
        )
        return {
            # wall time of compiling each unique kernel once, fresh, with the same jobs: a measured
            # pass (the fastest of ideal_repeats), not a bound; seconds_floor is the bound
            "seconds_ideal": ideal["seconds"],
            "seconds_ideal_compile_sum": ideal["compile_seconds"],
            "ideal_repeats": len(ideal_walls),
            "seconds_ideal_passes": ideal_walls,
            "seconds_memory_passes": [float(s.seconds) for s in self.memory_passes],
            # lower bound of any pass that compiles every unique kernel (tuning/floor.py): the fastest
            # measured compile of each unique kernel over every pass of this run, summed, / jobs (or the
            # slowest such kernel when larger)
            "seconds_floor": floor["floor_s"],
            "seconds_floor_compile_sum": floor["compile_sum_s"],
            "floor_kernels": floor["kernels"],
            "floor_compiles_measured": floor["compiles_measured"],
            "floor_complete": floor["complete"],
            "ratio_vs_floor": (main["seconds"] / floor["floor_s"])
            if floor["floor_s"] and floor["floor_s"] > 0
            else None,
        }

    def _own_cache_json(self) -> dict[str, Any]:
        """The compiler's own cache and what the cache saved against it (issue 45)."""
        from ..compile import compiler_cache

        walls = self.walls()
        own = self.own_caches or {
            name: str(s.frame["compiler_cache"].iloc[0])
            for name, s in self.scenarios.items()
            if "compiler_cache" in s.frame.columns and len(s.frame)
        }
        return {
            # the compiler's own cache in the cache's pass, each scenario's, and the setting that chose them
            "compiler_cache": own.get(self.primary, ""),
            "compiler_cache_setting": compiler_cache.mode(),
            "compiler_cache_by_scenario": own,
            "rounds": max((len(w) for w in walls.values()), default=0),
            "pass_walls": walls,
            **self.savings(),
        }


#: ``to_json``'s note on which saving to quote and why the two differ
_SAVED_QUOTE = (
    "seconds_saved: seconds_without_cache - seconds, both wall times of this run "
    "(seconds_without_cache_source says whether the cache-off pass was measured); "
    "seconds_saved_recorded sums the recorded compile time of each hit (serial-equivalent, "
    "larger than the wall-time saving with --jobs > 1)"
)


def candidates_by_problem(tl: TuningList) -> list[list[str]]:
    """Each problem's distinct candidates (in list order; public: the report's candidate count is
    pinned through it)."""
    seen: dict[str, dict[str, None]] = {}
    for e in tl.entries:
        seen.setdefault(e.problem, {})[e.candidate] = None
    return [list(v) for v in seen.values()] or [[]]


def _json_safe(obj: Any) -> Any:
    """NaN and infinity become None: strict JSON has no such numbers (``outside_compiler_seconds``
    is undefined for parallel passes)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def empty_frame() -> pd.DataFrame:
    base = events_frame([])
    for col in REPLAY_COLUMNS:
        base[col] = pd.Series(dtype="int64" if col in ("entry", "jobs") else "object")
    return base
