"""AMD: rocprofiler-sdk's ``rocprofv3`` (ROCm >= 6.2) as the command prefix of the counting unit's worker.
BUILT, NOT RUN: written to the documented interface; no AMD GPU has run it (what-ran-where says so).

    rocprofv3 --pmc TCC_HIT_sum TCC_MISS_sum --kernel-include-regex <the kernels' names>
              --output-format csv -d <out>/rocprof -o counters -- python -I -c <sweep worker> ...

From rocprofiler-sdk's "Using rocprofv3" (source/docs/how-to/using-rocprofv3.rst): ``--pmc`` takes
counters separated by spaces or commas and "the job fails if the entire set of counters can't be
collected in a single pass", so the counters are split into groups of two and the counting unit
runs once per group (the same counted launches each time: a fixed count, seeded leads; the groups'
values are joined launch by launch, each group's launches before the range dropped by its own
manifest). Each run writes ``*counter_collection.csv`` under the output directory, one row per
(dispatch, counter): ``Correlation_Id, Dispatch_Id, Agent_Id, Queue_Id, Process_Id, Thread_Id,
Grid_Size, Kernel_Id, Kernel_Name, ..., Counter_Name, Counter_Value, Start_Timestamp, End_Timestamp``.
rocprofv3 counts every dispatch of a matching kernel (no start/stop marker is used), so the
launches before the range (the clock warm-up, the timing path's warm-up) are reported too and
dropped by order (the manifest's ``warmup``: every launch of the kernel passes the unit's tap).

Bytes, as rocprofiler-sdk's ``FETCH_SIZE`` / ``WRITE_SIZE`` derive them (counter_defs.yaml):
gfx942/gfx950 (MI300, MI350; the ``TCC_EA0_*`` names): read = 128*TCC_BUBBLE + 64*(RDREQ - BUBBLE -
RDREQ_32B) + 32*RDREQ_32B; gfx90a (MI200; ``TCC_EA_*``): read = 64*(RDREQ - RDREQ_32B) + 32*RDREQ_32B;
write = 64*WRREQ_64B + 32*(WRREQ - WRREQ_64B); L2 hit rate = TCC_HIT / (TCC_HIT + TCC_MISS). These
count what leaves the L2 (TCC) for the fabric: on MI300 a part of it may be served by the Infinity
Cache (MALL) rather than HBM, so "cold" there means "not served by the L2".
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from .backends import CounterError, Launch, find_tool, name_pattern

ROCPROF_PLACES = ("/opt/rocm/bin/rocprofv3", "/opt/rocm-*/bin/rocprofv3")
OUTPUT = "rocprof"
_GFX942 = (
    ("TCC_EA0_RDREQ_sum", "TCC_EA0_RDREQ_32B_sum"),
    ("TCC_BUBBLE_sum",),
    ("TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum"),
    ("TCC_HIT_sum", "TCC_MISS_sum"),
)
_GFX90A = (
    ("TCC_EA_RDREQ_sum", "TCC_EA_RDREQ_32B_sum"),
    ("TCC_EA_WRREQ_sum", "TCC_EA_WRREQ_64B_sum"),
    ("TCC_HIT_sum", "TCC_MISS_sum"),
)
#: counter groups per architecture (each group one hardware pass, one counting unit)
GROUPS = {"gfx942": _GFX942, "gfx940": _GFX942, "gfx941": _GFX942, "gfx950": _GFX942, "gfx90a": _GFX90A}
STATUS = "built, not run"


def arch_of(target: str) -> str:
    """``gfx942:sramecc+:xnack-`` -> ``gfx942``."""
    return str(target).split(":", 1)[0].strip()


class RocprofBackend:
    """rocprofv3 around the counting unit's worker (see the module docstring)."""

    name = "rocprofv3"
    marker = "none"
    captures_warmup = True
    counts_in_worker = False  # its report is parsed at the unit's finish step

    def __init__(self, rocprofv3: str | None = None, arch: str = "") -> None:
        self.explicit = rocprofv3
        self.arch = arch
        self._path: str | None = None

    @property
    def path(self) -> str | None:
        if self._path is None:
            self._path = find_tool(self.explicit, "rocprofv3", ROCPROF_PLACES)
        return self._path

    def available(self, device: Any) -> str | None:
        kind = device.kind
        if kind != "hip":
            return f"rocprofv3 counts AMD GPUs; the device is {kind}:{device.index}"
        arch = arch_of(device.target)
        if arch not in GROUPS:
            return f"rocprofv3 counters are set up for {', '.join(sorted(GROUPS))}; the device is {arch or 'unknown'}"
        self.arch = arch
        if self.path is None:
            return f"rocprofv3 not found: not on PATH nor at {', '.join(ROCPROF_PLACES)} (rocprofiler-sdk, ROCm >= 6.2)"
        return None

    def groups(self, device: Any) -> list[tuple[str, ...]]:
        self.arch = arch_of(device.target) or self.arch
        if self.arch not in GROUPS:
            raise CounterError(f"no rocprofv3 counter groups for {self.arch!r}; expected one of {sorted(GROUPS)}")
        return [tuple(g) for g in GROUPS[self.arch]]

    def prefix(self, group: tuple[str, ...], out_dir: Path, entries: list[str]) -> list[str]:
        tool = self.path or "rocprofv3"
        return [
            tool,
            "--pmc",
            *group,
            "--kernel-include-regex",
            name_pattern(entries),
            "--output-format",
            "csv",
            "-d",
            str(out_dir / OUTPUT),
            "-o",
            "counters",
            "--",
        ]

    def parse(self, out_dir: Path, entries: list[dict[str, Any]] | None = None) -> tuple[list[Launch], str]:
        files = sorted((out_dir / OUTPUT).rglob("*counter_collection.csv")) if (out_dir / OUTPUT).is_dir() else []
        if not files:
            raise CounterError(f"rocprofv3 wrote no *counter_collection.csv under {out_dir / OUTPUT}")
        launches: list[Launch] = []
        for f in files:
            launches += parse_counter_collection(f.read_text(errors="replace"))
        return launches, ""

    def per_launch(self, values: dict[str, float]) -> dict[str, float]:
        return tcc_bytes(values, self.arch)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label": f"rocprofv3 ({STATUS})", "arch": self.arch, "path": self.path or ""}


def parse_counter_collection(text: str) -> list[Launch]:
    """One rocprofv3 ``counter_collection.csv`` as launches in dispatch order (a counter reported
    in several rows of one dispatch, one per dimension instance, is summed)."""
    reader = csv.DictReader(text.splitlines())
    need = {"Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value"}
    if reader.fieldnames is None or not need <= set(reader.fieldnames):
        raise CounterError(f"a rocprofv3 counter_collection.csv needs columns {sorted(need)}; got {reader.fieldnames}")
    by_dispatch: dict[tuple[str, int], Launch] = {}
    for row in reader:
        key = (row.get("Process_Id", ""), int(float(row["Dispatch_Id"])))
        launch = by_dispatch.setdefault(key, Launch(row["Kernel_Name"]))
        name = row["Counter_Name"]
        launch.values[name] = launch.values.get(name, 0.0) + float(row["Counter_Value"])
    return [by_dispatch[k] for k in sorted(by_dispatch, key=lambda k: k[1])]


def tcc_bytes(values: dict[str, float], arch: str) -> dict[str, float]:
    """DRAM-side bytes read and written and the L2 hit rate of one dispatch from its TCC counters."""
    v = lambda name: float(values.get(name, math.nan))  # noqa: E731
    if arch in ("gfx942", "gfx940", "gfx941", "gfx950"):
        rd, rd32, bubble = v("TCC_EA0_RDREQ_sum"), v("TCC_EA0_RDREQ_32B_sum"), v("TCC_BUBBLE_sum")
        read = 128 * bubble + 64 * (rd - bubble - rd32) + 32 * rd32
        wr, wr64 = v("TCC_EA0_WRREQ_sum"), v("TCC_EA0_WRREQ_64B_sum")
    elif arch == "gfx90a":
        rd, rd32 = v("TCC_EA_RDREQ_sum"), v("TCC_EA_RDREQ_32B_sum")
        read = 64 * (rd - rd32) + 32 * rd32
        wr, wr64 = v("TCC_EA_WRREQ_sum"), v("TCC_EA_WRREQ_64B_sum")
    else:
        raise CounterError(f"no TCC byte formula for {arch!r}; expected one of {sorted(GROUPS)}")
    hit, miss = v("TCC_HIT_sum"), v("TCC_MISS_sum")
    lookups = hit + miss
    return {
        "dram_read_bytes": read,
        "dram_write_bytes": 64 * wr64 + 32 * (wr - wr64),
        "l2_hit_rate": hit / lookups if lookups > 0 else math.nan,
        "duration_s": math.nan,
    }


__all__ = [
    "GROUPS",
    "OUTPUT",
    "ROCPROF_PLACES",
    "RocprofBackend",
    "STATUS",
    "arch_of",
    "parse_counter_collection",
    "tcc_bytes",
]
