"""``Record``: a sweep's results per (configuration, unit), durable as each one finishes.

Why: a sweep in units used to keep its units in memory and write their merge once the planned
units were all in, so an interrupted default sweep (3 units) kept nothing. Here every finished
(configuration, unit) is added to the record and the files are rewritten at once (``bench.io``:
samples, the rows per unit, then the summary as the commit record), so an interrupt loses at most
the (configuration, unit) being measured, and a resumed sweep measures only what is missing.

What it holds: per configuration its ``bench.outcome.ConfigurationResult`` (samples, statistics,
bias, floor, named summaries: what the files' rows say, made into rows only by ``bench.io``); for a
sweep in units also each unit's own result (chunk ids as the unit measured them), keyed by
(configuration, unit), from which the merged result is computed (``bench.passes.merged_result``): a configuration's row again when a unit of it
is added, and every bias against a reference when a unit of that reference is added (or when resuming
merges that reference again from its units: a kill after the units file took its unit, before the summary
did, left the other rows' biases taken against it as it was before). A one-unit
sweep's rows are the unit's rows (nothing is merged, as before). Files written by earlier
releases without rows per unit: finished configurations are kept as they are; those with fewer
units than planned are measured again whole (their units cannot be told apart).

``Collector`` is a unit's channel that keeps what one unit reports, in memory (a cluster worker's
unit, a test's).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..schema import COUNTER_COLUMNS, SAMPLE_COLUMNS, SUMMARY_COLUMNS, Configuration, UntimedKey
from . import interrupts
from . import passes as ps
from .io import (
    Previous,
    metadata_text,
    results_frames,
    sample_frame,
    samples_by_configuration,
    summary_row,
    unit_samples,
    write_results,
)
from .measured import MeasuredInfo
from .outcome import MERGED, ConfigurationResult, CounterSummary, Rebiased, Samples
from .result import SweepHooks, SweepResult
from .runinfo import RunInfo
from .trust import with_flags


class Record:
    """Previous results plus what the units add, per (configuration, unit); see the module docstring.
    ``merged``: the sweep is in units (``SweepSpec.units != 1``); ``planned``: its planned units."""

    def __init__(
        self,
        previous: Previous,
        *,
        merged: bool,
        planned: int,
        columns: tuple[Sequence[str], Sequence[str]] = (SAMPLE_COLUMNS, SUMMARY_COLUMNS),
    ) -> None:
        self.merged, self.planned, self.columns = merged, planned, columns
        self.order: list[Configuration] = []
        #: each configuration's result (a sweep in units: merged over its units)
        self.results: dict[Configuration, ConfigurationResult] = {}
        #: a sweep in units: each (configuration, unit)'s own result
        self.units: dict[Configuration, dict[int, ConfigurationResult]] = {}
        self.peak = float("nan")
        self.added = 0  # (configuration, unit)s this run added
        #: the counter pass's summary per (kernel, size, rotating, flush) (``bench.counters``): both
        #: timers' results get it when the summary is written; kept from the file, added by a pass
        self.counters: dict[UntimedKey, CounterSummary] = {}
        self.evidence: list[Any] = []  # a counter pass's evidence, written once with the files (``count``)
        self.counting = bool(set(COUNTER_COLUMNS) & set(self.columns[1]))
        self._load(previous)

    # -- what the files held --------------------------------------------------------------------
    def _load(self, previous: Previous) -> None:
        rows = {Configuration.of(r): r for r in previous.summary.to_dict("records")}
        samples = samples_by_configuration(previous.samples, self.columns[0])
        if self.merged and previous.units is not None and len(previous.units):
            self._load_units(previous.units, previous.samples)
        elif self.merged:  # written before rows per unit: a partial configuration is measured again whole
            rows = {c: r for c, r in rows.items() if int(r.get("passes") or 1) >= self.planned}
        empty = Samples({c: pd.Series([], dtype=object).to_numpy() for c in self.columns[0]})
        for c, r in rows.items():
            result = ConfigurationResult.of_columns(
                r, samples.get(c, empty), MERGED if self.merged else 0, groups=self.merged
            )
            self._keep(result)
            if result.counters is not None:
                self.counters[c.untimed_key] = result.counters
        remerged = []
        for c in list(self.units):
            if c not in self.order:
                self.order.append(c)
            if c not in self.results or int(self.results[c].run.passes or 1) != len(self.units[c]):
                self._merge(c)  # a kill between the units file and the summary: merged again from the units
                remerged.append(c)
        for c in remerged:  # a reference merged again: the kept results' biases were taken against it as it was before
            if c.is_reference:
                self._rebias_against(c)

    def _load_units(self, unit_rows: pd.DataFrame, samples: pd.DataFrame) -> None:
        per_unit = unit_samples(samples, set(Configuration.of_frame(unit_rows)), self.columns[0])
        for r in unit_rows.to_dict("records"):
            c, k = Configuration.of(r), int(r["pass_index"])
            got = per_unit.get(k, {}).get(c)
            if got is None:  # a row whose samples were not kept: as if never measured
                continue
            self.units.setdefault(c, {})[k] = ConfigurationResult.of_columns(r, got, k)
        for c in self.units:
            self.peak = float(next(iter(self.units[c].values())).run.peak_bandwidth_gbs)

    def _keep(self, result: ConfigurationResult) -> None:
        c = result.configuration
        if c not in self.results:
            self.order.append(c)
        self.results[c] = result

    # -- what the units add ---------------------------------------------------------------------
    def units_of(self, c: Configuration) -> set[int]:
        """The units of ``c`` recorded (a one-unit sweep's and a kept configuration's: {0} ... the planned ones)."""
        if c in self.units:
            return set(self.units[c])
        if c in self.results:
            return set(range(max(1, int(self.results[c].run.passes or 1))))
        return set()

    def add(self, result: ConfigurationResult) -> None:
        """A finished (configuration, unit)."""
        c = result.configuration
        self.added += 1
        if c not in self.order:
            self.order.append(c)
        if not self.merged:
            self.results[c] = result
            return
        self.peak = float(result.run.peak_bandwidth_gbs)
        self.units.setdefault(c, {})[result.unit] = result
        self._merge(c)
        if c.is_reference:
            self._rebias_against(c)

    def _rebias_against(self, c: Configuration) -> None:
        """Every merged result's bias against the reference ``c``, again (``c``'s units changed)."""
        ref = self.results[c].measurement
        for d in self.units:
            if not d.is_reference and d.reference() == c and d in self.results:
                self.results[d] = ps.rebiased(self.results[d], ref)

    def update(self, unit: int, rebiased: list[Rebiased]) -> None:
        """Results of ``unit`` filled in again (their biases, once its reference is whole)."""
        for r in rebiased:
            c = r.configuration
            if not self.merged:
                if c in self.results:
                    self.results[c] = r.apply(self.results[c])
            elif unit in self.units.get(c, {}):
                self.units[c][unit] = r.apply(self.units[c][unit])

    def _merge(self, c: Configuration) -> None:
        """``c``'s merged result, its key group's samples stacked again (chunk ids stay apart across units)."""
        group = [d for d in self.order if d in self.units and d.setup == c.setup]  # the configuration less its kernel
        stacked = ps.stack_units([{k: r.samples for k, r in self.units[d].items()} for d in group])
        for d, samples in zip(group, stacked):
            if d != c and d in self.results:
                self.results[d] = dataclasses.replace(
                    self.results[d],
                    samples=samples,
                    measurement=samples.measurement(" ".join(map(str, d)), groups=True) if samples.n else None,
                )
        merged = ps.merged_result([self.units[c][k] for k in sorted(self.units[c])], stacked[group.index(c)], self.peak)
        ref = merged.measurement if c.is_reference else self._measurement(c.reference())
        self.results[c] = ps.rebiased(merged, ref)

    def _measurement(self, c: Configuration) -> Any:
        r = self.results.get(c)
        return r.measurement if r is not None else None

    # -- what it is -----------------------------------------------------------------------------
    def complete(self) -> set[Configuration]:
        """Configurations with every planned unit (a one-unit sweep's: every recorded one)."""
        return {c for c in self.results if len(self.units_of(c)) >= (self.planned if self.merged else 1)}

    def kept(self) -> int:
        """(configuration, unit)s in the record (what an interrupt leaves on disk)."""
        return sum(min(len(self.units_of(c)), self.planned if self.merged else 1) for c in self.results)

    def unit_results(self) -> list[ConfigurationResult] | None:
        """Each (configuration, unit)'s own result, in order (None: a one-unit sweep has none apart)."""
        if not self.merged:
            return None
        return [r for c in self.order if c in self.units for _k, r in sorted(self.units[c].items())]

    def unit_frames(self, confs: list[Configuration]) -> list[pd.DataFrame]:
        """The recorded (configuration, unit)s' sample frames of ``confs``, ``pass_index`` their unit."""
        if not self.merged:
            return []
        return [sample_frame(r.samples).assign(pass_index=k) for c in confs for k, r in self.units.get(c, {}).items()]

    def samples_of(self, c: Configuration, unit: int | None = None) -> Samples | None:
        """``c``'s samples as recorded (``unit``: that unit's own), None when there are none."""
        r = self.results.get(c) if unit is None else self.units.get(c, {}).get(unit)
        return r.samples if r is not None and r.samples.n else None

    def write(self, paths: tuple[Path, Path, Path] | None, info: RunInfo | Mapping[str, str]) -> None:
        """The files rewritten (``bench.io``) with the run's metadata, ``info`` (a ``RunInfo``; a file's
        flat metadata, as read back, is read as one)."""
        if paths is not None:
            with interrupts.held():  # a pair is written whole; the signal lands after it
                write_results(paths, self.summary_results(), info, columns=self.columns, units=self.unit_results())
                while self.evidence:  # once: beside the files, as ``bench.counters.collect`` reads it
                    self.evidence.pop(0).keep(evidence_folder(paths))

    def summary_results(self) -> list[ConfigurationResult]:
        """Each configuration's result as the summary holds it: with its counters (a counting sweep's;
        empty where nothing counted it), their broken promise's line joined to its warning once."""
        results = [self.results[c] for c in self.order if c in self.results]
        if not self.counting:
            return results
        out = []
        for r in results:
            counted = self.counters.get(r.configuration.untimed_key)
            r = r.with_summary(counted or CounterSummary.uncounted())
            out.append(
                r
                if counted is None
                else dataclasses.replace(r, warning=with_flags(r.warning, [counted.counter_warning]))
            )
        return out

    def summary_rows(self) -> list[dict[str, Any]]:
        return [summary_row(r) for r in self.summary_results()]

    def count(self, summaries: dict[UntimedKey, CounterSummary], evidence: Any = None) -> None:
        """A counter pass's summaries, each for its configuration's results, and its evidence
        (``bench.counters.CounterEvidence``), kept below ``evidence_folder`` at the next write."""
        self.counters.update(summaries)
        if evidence is not None:
            self.evidence.append(evidence)

    def result(
        self,
        info: RunInfo | Mapping[str, str],
        path: Path | None,
        stopped: bool = False,
        skipped: list[tuple] | None = None,
    ) -> SweepResult:
        samples, summary = results_frames(self.summary_results(), self.columns)
        return SweepResult(samples, summary, metadata_text(info), path, stopped, list(skipped or []))


def evidence_folder(paths: tuple[Path, Path, Path]) -> Path:
    """Where a counter pass's evidence is kept: ``FILE.counters/`` beside the result ``FILE.parquet``."""
    return Path(f"{paths[0].with_suffix('')}.counters")


class Collector:
    """A unit's channel (``bench.sweeprun.Channel``) keeping its results in memory; ``hooks`` see them too."""

    def __init__(self, info: RunInfo | None = None, hooks: SweepHooks | None = None) -> None:
        self.info = info if info is not None else RunInfo()  # what the unit reports is merged into its measured
        self.hooks = hooks or SweepHooks()
        self.results: list[ConfigurationResult] = []
        self.counted_entries: list[dict[str, Any]] = []  # a counting unit's (bench.counters)
        # one per entry: the summary its worker counted in its own process, None where a report is parsed instead
        self.counted_summaries: list[CounterSummary | None] = []

    def started(self, where: list[str]) -> None:
        self.hooks.started(where)

    def stop_now(self) -> bool:
        return self.hooks.stop_now()

    def meta(self, report: MeasuredInfo) -> None:
        self.info.measured.merge(report)

    def add(self, result: ConfigurationResult) -> None:
        self.results.append(result)
        if self.hooks.on_samples is not None:
            self.hooks.on_samples(sample_frame(result.samples))
        if self.hooks.on_result is not None:
            self.hooks.on_result(summary_row(result))

    def counted(self, entry: dict[str, Any], summary: CounterSummary | None = None) -> None:
        self.counted_entries.append(dict(entry))
        self.counted_summaries.append(summary)

    def update(self, rebiased: list[Rebiased]) -> None:
        new = {r.configuration: r for r in rebiased}
        self.results = [new[r.configuration].apply(r) if r.configuration in new else r for r in self.results]

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The results as summary rows (``bench.io``)."""
        return [summary_row(r) for r in self.results]

    @property
    def frames(self) -> list[pd.DataFrame]:
        """The results' samples as frames (``bench.io``)."""
        return [sample_frame(r.samples) for r in self.results]

    def result(self, stopped: bool = False) -> SweepResult:
        samples, summary = results_frames(self.results)
        return SweepResult(samples, summary, metadata_text(self.info), None, stopped)


__all__ = ["Collector", "Record", "evidence_folder"]
