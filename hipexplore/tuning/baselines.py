"""The replay against the compilers' own caches: every scenario in alternated rounds, each pass in
fresh compiler processes (issue 45).

Why: the replay's "cache off" pass was the baseline of every saving, but NVRTC 13 caches on its own
(on by default, wherever a driver loads), so on a GPU host that pass could already be served by
NVRTC's cache (tails repeated within the pass; a second run of the same flow), and nothing said
whether it was. Two baselines are measured beside the cache's passes:

* ``cold``: every compiler cache off (NVRTC ``--no-cache``; COMGR ``AMD_COMGR_CACHE=0``; Triton's
  always off): the true cost of compiling the list;
* ``compiler-cache``: hipexplore's cache off, the compiler's own on and warm from an earlier pass of
  the same list (the round's ``off`` pass when that ran with the compiler's cache on, else an
  untimed warming pass): what a user gets who installs nothing.

``off``, ``memory``, ``disk-cold``/``disk-warm`` and ``ideal`` run as before, with the compiler's
own cache as ``HIPEXPLORE_COMPILER_CACHE`` says, and each pass records it (``compiler_cache``).

Every pass gets a new isolated compiler (its workers warmed up, untimed, on kernels of no list),
so no pass inherits another's process state, and a salt of its own, so no pass profits from
another unless the scenario says so (``compiler-cache`` shares the salt, and the own-cache folder,
of the pass it warms from). Each compiler's own cache is placed in a folder of the run's
(``compiler_cache.pass_environment``): the user's caches are neither read nor filled. The rounds
alternate (the order of the scenarios reversed every other round, the warm pairs kept together), so
a drift of a shared machine's speed favours no scenario; ``tuning.savings`` turns the passes' walls
into savings with intervals.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Callable

from .. import settings
from ..compile import compiler_cache
from ..compile.cache import CompileCache
from ..compile.isolation import IsolatedCompiler
from ..errors import ConfigError
from .lists import TuningList
from .replay import (
    AUTO,
    _check_jobs,
    check_target,
    measure_ideal,
    replay_through_cache,
    resolve_granularity,
    salted,
    warm_up,
)
from .results import ReplayReport, ScenarioResult

#: the baselines, measured in every round beside the cache's own passes
BASELINES = ("cold", "compiler-cache")
#: the cache's passes per ``--cache`` mode (disk: cold on an empty folder, then warm in a new cache object)
CACHE_PASSES = {
    "off": (),
    "memory": ("memory",),
    "disk": ("disk-cold", "disk-warm"),
    "all": ("memory", "disk-cold", "disk-warm"),
}
MAX_PASSES = 100


def round_units(cache: str) -> list[tuple[str, ...]]:
    """The scenarios of one round as units that stay together and in order (``off`` then the
    ``compiler-cache`` pass warmed from it; ``disk-cold`` then ``disk-warm``)."""
    if cache not in CACHE_PASSES:
        raise ConfigError(f"cache must be one of {', '.join(CACHE_PASSES)}; got {cache!r}")
    units: list[tuple[str, ...]] = [("ideal",), ("cold",), ("off", "compiler-cache")]
    tail = CACHE_PASSES[cache]
    if "memory" in tail:
        units.append(("memory",))
    if "disk-cold" in tail:
        units.append(("disk-cold", "disk-warm"))
    return units


def round_order(cache: str, r: int) -> list[str]:
    """Round ``r``'s passes: the units in order, reversed every other round."""
    units = round_units(cache)
    return [name for unit in (units if r % 2 == 0 else units[::-1]) for name in unit]


class _Run:
    """One replay in rounds: the list, its folder for the compilers' own caches, the passes so far."""

    def __init__(
        self,
        tl: TuningList,
        jobs: int,
        granularity: str,
        salt: bool,
        timeout: float | None,
        step: Callable[[str], None],
        folder: str,
    ) -> None:
        self.tl, self.jobs, self.granularity, self.salt, self.timeout, self.step = (
            tl,
            jobs,
            granularity,
            salt,
            timeout,
            step,
        )
        self.folder = folder
        self.run_salt = f"{os.getpid()}_{time.time_ns()}"
        self.passes: list[ScenarioResult] = []
        self.own: dict[str, str] = {}
        self.kwargs = {"allow_unknown_targets": True} if tl.compiler == "hiprtc" else {}

    def compiler(self, mode: str, where: str) -> IsolatedCompiler:
        env = compiler_cache.pass_environment(self.tl.compiler, mode, os.path.join(self.folder, where))
        return IsolatedCompiler(self.tl.compiler, self.kwargs, workers=self.jobs, timeout=self.timeout, env=env)

    def listed(self, tag: str) -> TuningList:
        return salted(self.tl, f"{self.run_salt}_{tag}") if self.salt else self.tl

    def one(self, scenario: str, r: int, mode: str, where: str, tag: str, disk: str = "", keep: bool = True) -> str:
        """One pass in a fresh compiler; returns the own-cache label its events recorded."""
        comp = self.compiler(mode, where)
        try:
            warm_up(comp, self.tl.compiler, self.tl.target, self.jobs)  # workers started and loaded, untimed
            tl = self.listed(tag)
            if scenario == "ideal":
                res = measure_ideal(tl, comp, self.jobs)
            else:
                cache = (
                    CompileCache(max_entries=4096, max_bytes=1 << 30, disk_dir=disk, remote=False)
                    if disk
                    else CompileCache(max_entries=4096, max_bytes=1 << 30, disk_dir=False, remote=False)
                    if scenario == "memory"
                    else CompileCache(max_entries=0, max_bytes=0, disk_dir=False, remote=False)
                )
                res = replay_through_cache(
                    tl,
                    comp,
                    cache,
                    "compiler-cache" if scenario == "warming" else scenario,
                    self.jobs,
                    self.granularity,
                )
        finally:
            comp.close()
        label = str(res.frame["compiler_cache"].iloc[0]) if len(res.frame) else ""
        if keep:
            self.passes.append(ScenarioResult(scenario, res.jobs, res.seconds, res.frame, res.cpu_seconds, round=r))
            self.own.setdefault(scenario, label)
        return label

    def round(self, r: int, cache: str) -> None:
        user = compiler_cache.mode()
        off_label = ""
        for scenario in round_order(cache, r):
            self.step(scenario)
            if scenario == "cold":
                self.one("cold", r, "off", f"r{r}-cold", f"cold{r}")
            elif scenario == "off":
                off_label = self.one("off", r, user, f"r{r}-off", f"off{r}")
            elif scenario == "compiler-cache":
                self.compiler_cache_pass(r, off_label)
            elif scenario in ("disk-cold", "disk-warm"):
                disk = os.path.join(self.folder, f"r{r}-disk")
                self.one(scenario, r, user, f"r{r}-{scenario}", f"disk{r}", disk=disk)
            else:
                self.one(scenario, r, user, f"r{r}-{scenario}", f"{scenario}{r}")

    def compiler_cache_pass(self, r: int, off_label: str) -> None:
        """Warm from this round's ``off`` pass when its compiler cache was on (same salt, same
        folder), else from an untimed warming pass of its own; a compiler without a cache of its
        own is not warmed (there is nothing to warm)."""
        if off_label.startswith("on"):
            self.one("compiler-cache", r, "on", f"r{r}-off", f"off{r}")
            return
        probe = self.compiler("on", f"r{r}-cc")
        try:
            has_cache = probe.own_cache((), probe.identity()).cache == "on"
        finally:
            probe.close()
        if has_cache:
            self.one("warming", r, "on", f"r{r}-cc", f"cc{r}", keep=False)
        self.one("compiler-cache", r, "on", f"r{r}-cc", f"cc{r}")


def run_rounds(
    tuning_list: TuningList,
    jobs: int = 1,
    cache: str = "memory",
    passes: int = 3,
    granularity: str = AUTO,
    salt: bool = True,
    on_pass: Callable[[str], None] | None = None,
    timeout: float | None = None,
) -> ReplayReport:
    """Every scenario of ``round_order`` ``passes`` times in alternated rounds, each pass in fresh
    compiler processes (see the module's docstring); the report's ``scenarios`` hold each
    scenario's pass of median wall time, ``passes`` all of them, ``savings()`` the comparisons."""
    _check_jobs(jobs)
    if isinstance(passes, bool) or not isinstance(passes, int) or not 1 <= passes <= MAX_PASSES:
        raise ConfigError(f"passes must be an integer from 1 to {MAX_PASSES}; got {passes!r}")
    granularity = resolve_granularity(granularity, jobs)
    round_units(cache)
    compiler_cache.check(tuning_list.compiler)  # a folder its own cache cannot use: one line, before any pass
    probe = IsolatedCompiler(tuning_list.compiler, workers=1)
    try:
        check_target(probe, tuning_list.target)
    finally:
        probe.close()
    with tempfile.TemporaryDirectory(
        prefix=f"hipexplore-own-caches-{os.getpid()}-"
    ) as folder:  # a killed run's: leftovers.py
        run = _Run(
            tuning_list,
            jobs,
            granularity,
            salt,
            timeout or settings.COMPILE_TIMEOUT.get(),
            on_pass or (lambda _n: None),
            folder,
        )
        for r in range(passes):
            run.round(r, cache)
    scenarios: dict[str, ScenarioResult] = {}
    for name in dict.fromkeys(p.scenario for p in run.passes):
        mine = sorted((p for p in run.passes if p.scenario == name), key=lambda p: p.seconds)
        scenarios[name] = mine[(len(mine) - 1) // 2]  # the median pass (the lower of two middles)
    primary = {"off": "off", "memory": "memory", "disk": "disk-cold", "all": "memory"}[cache]
    return ReplayReport(
        tuning_list,
        jobs,
        cache,
        True,
        primary,
        scenarios,
        "",
        granularity,
        salt,
        [p for p in run.passes if p.scenario == "ideal"],
        [p for p in run.passes if p.scenario == "memory"],
        passes=run.passes,
        own_caches=run.own,
    )


__all__ = ["BASELINES", "CACHE_PASSES", "round_order", "round_units", "run_rounds"]
