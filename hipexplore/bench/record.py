"""``Record``: a sweep's results per (configuration, unit), durable as each one finishes.

Why: a sweep in units used to keep its units in memory and write their merge once the planned
units were all in, so an interrupted default sweep (3 units) kept nothing. Here every finished
(configuration, unit) is added to the record and the files are rewritten at once (``bench.io``:
samples, the rows per unit, then the summary as the commit record), so an interrupt loses at most
the (configuration, unit) being measured, and a resumed sweep measures only what is missing.

What it holds: per configuration its summary row and its sample rows as the files hold them; for
a sweep in units also each unit's own rows and samples (chunk ids as the unit measured them), from
which the merged row is computed (``bench.passes``): a configuration's row again when a unit of it
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

from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from ..schema import COUNTER_COLUMNS, SAMPLE_COLUMNS, SUMMARY_COLUMNS, Configuration, Timer, UntimedKey
from . import interrupts
from . import passes as ps
from .counters.summary import CounterSummary, with_counters
from .io import Previous, samples_frame, summary_frame, write_results
from .result import SweepHooks, SweepResult
from .stats import Measurement


def _by_configuration(frame: pd.DataFrame) -> dict[Configuration, pd.DataFrame]:
    """``frame``'s rows per configuration, in the order the configurations first appear."""
    if not len(frame):
        return {}
    if "timer" not in frame.columns:
        frame = frame.assign(timer=Timer.EVENTS.name)
    out = {}
    for key, g in frame.groupby(list(Configuration.COLUMNS), sort=False, dropna=False):
        out[Configuration.of_key(key)] = g.reset_index(drop=True)
    return out



class Record:
    """Previous rows plus what the units add, per (configuration, unit); see the module docstring.
    ``merged``: the sweep is in units (``SweepSpec.units != 1``); ``planned``: its planned units."""

    def __init__(self, previous: Previous, *, merged: bool, planned: int,
                 columns: tuple[Sequence[str], Sequence[str]] = (SAMPLE_COLUMNS, SUMMARY_COLUMNS)) -> None:
        self.merged, self.planned, self.columns = merged, planned, columns
        self.order: list[Configuration] = []
        self.rows: dict[Configuration, dict[str, Any]] = {}
        self.samples: dict[Configuration, pd.DataFrame] = {}
        self.units: dict[Configuration, dict[int, tuple[pd.DataFrame, dict[str, Any]]]] = {}
        self.peak = float("nan")
        self.added = 0  # (configuration, unit)s this run added
        #: the counter pass's summary per (kernel, size, rotating, flush) (``bench.counters``): both
        #: timers' rows get its columns when the summary is written; kept from the file, added by a pass
        self.counters: dict[UntimedKey, CounterSummary] = {}
        self.evidence: list[Any] = []  # a counter pass's evidence, written once with the files (``count``)
        self.counting = bool(set(COUNTER_COLUMNS) & set(self.columns[1]))
        self._load(previous)

    # -- what the files held --------------------------------------------------------------------
    def _load(self, previous: Previous) -> None:
        rows = {Configuration.of(r): r for r in previous.summary.to_dict("records")}
        samples = _by_configuration(previous.samples)
        if self.merged and previous.units is not None and len(previous.units):
            self._load_units(previous.units, samples)
        elif self.merged:  # written before rows per unit: a partial configuration is measured again whole
            rows = {c: r for c, r in rows.items() if int(r.get("passes") or 1) >= self.planned}
        for c, r in rows.items():
            self._keep(c, r, samples.get(c))
            counted = CounterSummary.of_row(r)
            if counted is not None:
                self.counters[c.untimed_key] = counted
        remerged = []
        for c in list(self.units):
            if c not in self.order:
                self.order.append(c)
            if c not in self.rows or int(self.rows[c].get("passes") or 1) != len(self.units[c]):
                self._merge(c)  # a kill between the units file and the summary: merged again from the units
                remerged.append(c)
        for c in remerged:  # a reference merged again: the kept rows' biases were taken against it as it was before
            if c.is_reference:
                self._rebias_against(c)

    def _load_units(self, unit_rows: pd.DataFrame, samples: dict[Configuration, pd.DataFrame]) -> None:
        held = set(Configuration.of_frame(unit_rows))
        frames = [samples[c] for c in samples if c in held]
        local = ps.unstack(pd.concat(frames, ignore_index=True)) if frames else {}
        per_unit = {k: _by_configuration(f) for k, f in local.items()}
        for r in unit_rows.to_dict("records"):
            c, k = Configuration.of(r), int(r.pop("pass_index"))
            frame = per_unit.get(k, {}).get(c)
            if frame is None:  # a row whose samples were not kept: as if never measured
                continue
            self.units.setdefault(c, {})[k] = (frame, r)
            self.samples[c] = samples[c]
        for c in self.units:
            self.peak = float(next(iter(self.units[c].values()))[1].get("peak_bandwidth_gbs", self.peak))

    def _keep(self, c: Configuration, row: dict[str, Any], samples: pd.DataFrame | None) -> None:
        if c not in self.rows:
            self.order.append(c)
        self.rows[c] = row
        self.samples[c] = samples if samples is not None else pd.DataFrame(columns=list(self.columns[0]))

    # -- what the units add ---------------------------------------------------------------------
    def units_of(self, c: Configuration) -> set[int]:
        """The units of ``c`` recorded (a one-unit sweep's and a kept configuration's: {0} ... the planned ones)."""
        if c in self.units:
            return set(self.units[c])
        if c in self.rows:
            return set(range(max(1, int(self.rows[c].get("passes") or 1))))
        return set()

    def add(self, c: Configuration, unit: int, frame: pd.DataFrame, row: dict[str, Any]) -> None:
        """A finished (configuration, unit)."""
        self.added += 1
        if c not in self.order:
            self.order.append(c)
        if not self.merged:
            self.rows[c], self.samples[c] = row, frame
            return
        self.peak = float(row.get("peak_bandwidth_gbs", self.peak))
        self.units.setdefault(c, {})[unit] = (frame, row)
        self._merge(c)
        if c.is_reference:
            self._rebias_against(c)

    def _rebias_against(self, c: Configuration) -> None:
        """Every merged row's bias against the reference ``c``, again (``c``'s units changed)."""
        for d in self.units:
            if not d.is_reference and d.reference() == c and d in self.rows:
                ps.rebias(self.rows[d], self._measurement(d), self._measurement(c))

    def update(self, unit: int, rows: list[dict[str, Any]]) -> None:
        """Rows of ``unit`` filled in again (their biases, once its reference is whole)."""
        for r in rows:
            c = Configuration.of(r)
            if not self.merged:
                if c in self.rows:
                    self.rows[c] = r
            elif unit in self.units.get(c, {}):
                self.units[c][unit] = (self.units[c][unit][0], r)

    def _merge(self, c: Configuration) -> None:
        """``c``'s merged row, its key group's samples stacked again (chunk ids stay apart across units)."""
        group = [d for d in self.order if d in self.units and d.setup == c.setup]  # the configuration less its kernel
        top = max(k for d in group for k in self.units[d]) + 1
        frames = [pd.concat([self.units[d][k][0] for d in group if k in self.units[d]] or [pd.DataFrame()], ignore_index=True)
                  for k in range(top)]
        stacked = _by_configuration(ps.stack(frames))
        for d in group:
            self.samples[d] = stacked[d]
        g = pd.DataFrame([self.units[c][k][1] for k in sorted(self.units[c])])
        m = ps.measurement_of(tuple(c.columns().values()), self.samples[c])
        row = ps.merged_row(g, m, self.samples[c], self.peak)
        ps.rebias(row, m, m if c.is_reference else self._measurement(c.reference()))
        self.rows[c] = row

    def _measurement(self, c: Configuration) -> Measurement | None:
        frame = self.samples.get(c)
        if frame is None or not len(frame):
            return None
        return ps.measurement_of(tuple(c.columns().values()), frame)

    # -- what it is -----------------------------------------------------------------------------
    def complete(self) -> set[Configuration]:
        """Configurations with every planned unit (a one-unit sweep's: every recorded one)."""
        return {c for c in self.rows if len(self.units_of(c)) >= (self.planned if self.merged else 1)}

    def kept(self) -> int:
        """(configuration, unit)s in the record (what an interrupt leaves on disk)."""
        return sum(min(len(self.units_of(c)), self.planned if self.merged else 1) for c in self.rows)

    def unit_rows(self) -> list[dict[str, Any]] | None:
        if not self.merged:
            return None
        return [{**row, "pass_index": k} for c in self.order if c in self.units for k, (_f, row) in sorted(self.units[c].items())]

    def write(self, paths: tuple[Path, Path, Path] | None, metadata: dict[str, str]) -> None:
        if paths is not None:
            with interrupts.held():  # a pair is written whole; the signal lands after it
                write_results(paths, self.sample_parts(), self.summary_rows(), metadata, columns=self.columns,
                              unit_rows=self.unit_rows())
                while self.evidence:  # once: beside the files, as ``bench.counters.collect`` reads it
                    self.evidence.pop(0).keep(evidence_folder(paths))

    def sample_parts(self) -> list[pd.DataFrame]:
        return [self.samples[c] for c in self.order if c in self.samples and len(self.samples[c])]

    def summary_rows(self) -> list[dict[str, Any]]:
        rows = [self.rows[c] for c in self.order if c in self.rows]
        if not self.counting:
            return rows
        return [with_counters(r, self.counters.get(Configuration.of(r).untimed_key)) for r in rows]

    def count(self, summaries: dict[UntimedKey, CounterSummary], evidence: Any = None) -> None:
        """A counter pass's summaries, each for its configuration's rows, and its evidence
        (``bench.counters.CounterEvidence``), kept below ``evidence_folder`` at the next write."""
        self.counters.update(summaries)
        if evidence is not None:
            self.evidence.append(evidence)

    def result(self, metadata: dict[str, str], path: Path | None, stopped: bool = False,
               skipped: list[tuple] | None = None) -> SweepResult:
        return SweepResult(samples_frame(self.sample_parts(), self.columns[0]), summary_frame(self.summary_rows(), self.columns[1]),
                           metadata, path, stopped, list(skipped or []))


def evidence_folder(paths: tuple[Path, Path, Path]) -> Path:
    """Where a counter pass's evidence is kept: ``FILE.counters/`` beside the result ``FILE.parquet``."""
    return Path(f"{paths[0].with_suffix('')}.counters")


class Collector:
    """A unit's channel (``bench.sweeprun.Channel``) keeping what it reports in memory; ``hooks`` see it too."""

    def __init__(self, metadata: dict[str, str] | None = None, hooks: SweepHooks | None = None) -> None:
        self.metadata = metadata if metadata is not None else {}
        self.hooks = hooks or SweepHooks()
        self.frames: list[pd.DataFrame] = []
        self.rows: list[dict[str, Any]] = []
        self.counted_entries: list[dict[str, Any]] = []  # a counting unit's (bench.counters)
        self.counted_summaries: list[CounterSummary] = []  # those its worker counted in its own process

    def started(self, where: list[str]) -> None:
        self.hooks.started(where)

    def stop_now(self) -> bool:
        return self.hooks.stop_now()

    def meta(self, entries: dict[str, str]) -> None:
        self.metadata.update(entries)

    def add(self, rows: pd.DataFrame, row: dict[str, Any]) -> None:
        self.frames.append(rows)
        self.rows.append(row)
        if self.hooks.on_samples is not None:
            self.hooks.on_samples(rows.copy())
        if self.hooks.on_result is not None:
            self.hooks.on_result(dict(row))

    def counted(self, entry: dict[str, Any], summary: CounterSummary | None = None) -> None:
        self.counted_entries.append(dict(entry))
        if summary is not None:
            self.counted_summaries.append(summary)

    def update(self, rows: list[dict[str, Any]]) -> None:
        new = {Configuration.of(r): r for r in rows}
        self.rows = [new.get(Configuration.of(r), r) for r in self.rows]

    def result(self, stopped: bool = False) -> SweepResult:
        return SweepResult(samples_frame(self.frames), summary_frame(self.rows), self.metadata, None, stopped)


__all__ = ["Collector", "Record", "evidence_folder"]
