"""``MeasuredInfo``: what the units measured with, typed: the one report a unit sends through its channel.

Why: a unit told its channel what it measured with as text entries (a floor's median as
``"2.6e-06"``), formatted where they were measured and carried as ``dict[str, str]`` to the files.
Now a unit reports typed facts (a floor in seconds, a pad in bytes, a verification's relative
error), the orchestrator merges them into the run's ``bench.runinfo.RunInfo``, and only
``bench.io`` writes them as text, through the formats the registry declares (``bench.info``).

What a unit reports: the telemetry's source and the device's top clock, each flush mode's buffer,
the LLC and where its size was read, the clock warm-up, each (kernel, size)'s output check, the
launch floor per flush mode, whether interleaved kernels shared their sets, a worker's pad and how
each unit's inputs were made. ``None`` (or an empty mapping) is what the unit did not report.

Across a process boundary (a sweep worker's pipe, a cluster unit's result) the report travels as
the frames' text entries (``entries``) and is read back exactly (``of_entries``: a key no unit
reports, or a value written otherwise than its key writes it, is refused; ``bench.guard``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from .info import (
    DEVICE_LLC_BYTES,
    DEVICE_LLC_SOURCE,
    FLOOR,
    FLUSH_BYTES,
    POOL,
    TELEMETRY_MAX_CLOCK_MHZ,
    TELEMETRY_SOURCE,
    UNIT_INPUTS,
    UNIT_REPORTED,
    VERIFY,
    WARMUP_CLOCK,
    WORKER_PAD_BYTES,
    Family,
    Key,
)


@dataclass
class MeasuredInfo:
    """What the units measured with (module docstring); a unit's report has only what it learned set."""

    telemetry_source: str | None = None
    telemetry_max_clock_mhz: float | None = None  #: MHz; nan: unknown
    flush_bytes: dict[str, int] = field(default_factory=dict)  #: flush mode -> its buffer's bytes
    llc_bytes: int | None = None
    llc_source: str | None = None
    warmup_clock: str | None = None
    verify: dict[str, float] = field(default_factory=dict)  #: "<kernel>.<size>" -> the relative L2 error
    floors: dict[str, float] = field(default_factory=dict)  #: flush mode -> the launch floor's median (s)
    pools: dict[int, bool] = field(default_factory=dict)  #: size -> whether interleaved kernels shared sets
    worker_pad_bytes: int | None = None
    inputs: dict[int, str] = field(default_factory=dict)  #: unit -> how its inputs were made (drawn, mapped)

    # -- what a unit reports ------------------------------------------------------------------------
    @classmethod
    def initialized(cls, telemetry: Any, flush_bytes: Mapping[str, int], device: Any) -> "MeasuredInfo":
        """A unit's device opened: its telemetry, each flush's buffer, its LLC."""
        return cls(
            telemetry_source=telemetry.source,
            telemetry_max_clock_mhz=float(telemetry.max_clock_mhz),
            flush_bytes={str(f): int(n) for f, n in flush_bytes.items()},
            llc_bytes=int(device.llc_bytes),
            llc_source=device.llc_source,
        )

    @classmethod
    def verified(cls, kernel: str, size: int, error: float) -> "MeasuredInfo":
        """A (kernel, size)'s output checked: its relative L2 error."""
        return cls(verify={f"{kernel}.{size}": float(error)})

    # -- merged into the run's --------------------------------------------------------------------
    def merge(self, report: "MeasuredInfo") -> None:
        """``report``'s facts added to these, as a unit reports them: the latest says."""
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(report, f.name)
            if isinstance(mine, dict):
                mine.update(theirs)
            elif theirs is not None:
                setattr(self, f.name, theirs)

    def new_to(self, known: "MeasuredInfo") -> "MeasuredInfo":
        """This report less the facts ``known`` has already, every output check kept: what a cluster's
        unit adds to the run's (the first worker's device description, every unit's verification)."""
        out = MeasuredInfo()
        for f in dataclasses.fields(self):
            mine, theirs = getattr(known, f.name), getattr(self, f.name)
            if isinstance(theirs, dict):
                setattr(out, f.name, {k: v for k, v in theirs.items() if f.name == "verify" or k not in mine})
            elif mine is None:
                setattr(out, f.name, theirs)
        return out

    # -- as text (``bench.io``'s files, a worker's frames) and back ---------------------------------
    def entries(self) -> dict[str, str]:
        """The flat keys of the facts reported, written by the registry's formats."""
        out: dict[str, str] = {}
        for name, key in _FIELDS.items():
            value = getattr(self, name)
            if isinstance(key, Family):
                out.update(key.entries(value))
            elif value is not None:
                out.update(key.entry(value))
        return out

    @classmethod
    def take(cls, meta: dict[str, str]) -> "MeasuredInfo":
        """The facts in a flat ``meta`` whose text is what their key writes, taken out of it (the rest
        stays, to be written back as it was: ``RunInfo.other``)."""
        got: dict[str, Any] = {}
        for name, key in _FIELDS.items():
            if isinstance(key, Family):
                got[name] = key.take(meta)
            elif key.name in meta:
                try:
                    got[name] = key.exact(meta[key.name])
                except ValueError:
                    continue
                del meta[key.name]
        return cls(**got)

    @classmethod
    def of_entries(cls, entries: Mapping[str, str]) -> "MeasuredInfo":
        """A report read back from a frame's entries, exactly: ``ValueError`` naming the first entry that
        is not a unit's (``reports``) or not written as its key writes it."""
        left = {str(k): str(v) for k, v in entries.items()}
        report = cls.take(left)
        for key, value in left.items():
            if not cls.reports(key):
                raise ValueError(f"{key!r} is not what a unit reports")
            raise ValueError(f"{key!r} = {value!r} is not how a unit writes it")
        return report

    @staticmethod
    def reports(key: str) -> bool:
        """Whether ``key`` is one a unit reports (``info.UNIT_REPORTED``)."""
        return any(k.owns(key) if isinstance(k, Family) else k.name == key for k in UNIT_REPORTED)


#: each field, the key or the family that writes it
_FIELDS: dict[str, Key | Family] = {
    "telemetry_source": TELEMETRY_SOURCE,
    "telemetry_max_clock_mhz": TELEMETRY_MAX_CLOCK_MHZ,
    "flush_bytes": FLUSH_BYTES,
    "llc_bytes": DEVICE_LLC_BYTES,
    "llc_source": DEVICE_LLC_SOURCE,
    "warmup_clock": WARMUP_CLOCK,
    "verify": VERIFY,
    "floors": FLOOR,
    "pools": POOL,
    "worker_pad_bytes": WORKER_PAD_BYTES,
    "inputs": UNIT_INPUTS,
}

__all__ = ["MeasuredInfo"]
