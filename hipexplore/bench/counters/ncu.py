"""NVIDIA: Nsight Compute's CLI (``ncu``) as the command prefix of the counting unit's worker.

    ncu --target-processes all --profile-from-start off --replay-mode kernel --cache-control none
        --clock-control none -k regex:<the kernels' names> --metrics <one group of NCU_GROUPS>
        --csv --print-units base --log-file ncu.log  python -I -c <sweep worker> ...

Why these options: ``--cache-control none`` (by default ncu flushes every cache before each
profiled launch, which would make every configuration cold) and ``--clock-control none`` (its
default locks the base clock) leave the sequence's own cache state and clocks alone;
``--profile-from-start off`` profiles only between the counting unit's ``cuProfilerStart`` and
``cuProfilerStop``, around the counted chunks (``counters.phase``), so the warm-up launches are not
replayed; ``-k`` keeps the flush kernels (and the floor's empty kernel) out: they run, uncounted, as
in the timed run. The metrics go in groups of one replay pass each (``NCU_GROUPS``), one counting
unit per group: with metrics needing a second pass, kernel replay saves the memory a launch can
reach before the first, which read every configuration cold (1 set of 1 MiB too) in the sweep
worker, whose flush buffers are hundreds of MiB. Nsight Compute 2025.3.1 on the lent H200/H100
(driver 580) with this command shape.

The CSV is ncu's default "details" page: one row per (launch, metric) with ``ID``, ``Kernel Name``,
``Metric Name``, ``Metric Unit``, ``Metric Value``; the "raw" page (one row per launch, metrics as
columns, a units row) parses too. Values may carry thousands separators (``2,097,152``); units are
turned into bytes, seconds and percent.
"""

from __future__ import annotations

import csv
import math
import re
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from .backends import CounterError, Launch, find_tool, name_pattern

#: the metrics counted, in groups of one replay pass each: DRAM bytes read and written (the cold
#: fraction), then the L2 sector hit rate. Why groups: a launch whose metrics need a second replay
#: pass is first saved by ncu's kernel replay (everything the launch can reach, so the pass can be
#: restored), and the save streams the process's allocations through the L2: on an H100 a triad of
#: 1 MiB on one set read 1.00 cold with an unused 512 MiB allocation beside it once the hit rate was
#: among its metrics, 0.00 with the DRAM metrics alone (benchmarks/h200/counters_replay.py, part D).
#: Each group is its own counting unit replaying the same sequence; they are joined launch by launch.
NCU_GROUPS = (("dram__bytes_read.sum", "dram__bytes_write.sum"), ("lts__t_sector_hit_rate.pct",))
NCU_METRICS = tuple(m for g in NCU_GROUPS for m in g)
#: where ncu is looked for after PATH (the CUDA toolkit's link, then the installer's folders)
NCU_PLACES = ("/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu")
LOG = "ncu.log"
#: ncu's --replay-mode values the backend passes on
REPLAY_MODES = ("kernel", "application")
#: the default: kernel replay, one pass per group (``NCU_GROUPS``). Application replay starts the
#: program once per pass: a sweep worker started again gets no job over its pipe, so ncu counted
#: nothing (the probe's part B), and it needed several runs even for the four metrics of a torch loop.
REPLAY = "kernel"
_BYTES = {
    "byte": 1.0,
    "kbyte": 1e3,
    "mbyte": 1e6,
    "gbyte": 1e9,
    "tbyte": 1e12,
    "kibyte": 2.0**10,
    "mibyte": 2.0**20,
    "gibyte": 2.0**30,
}
_SECONDS = {
    "second": 1.0,
    "msecond": 1e-3,
    "usecond": 1e-6,
    "nsecond": 1e-9,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "ns": 1e-9,
}
_ID_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Kernel Time",
    "Kernel Duration",
    "Section Name",
    "Rule Name",
    "Rule Type",
    "Rule Description",
    "Estimated Speedup Type",
    "Estimated Speedup",
)


@lru_cache(maxsize=8)
def _help_text(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--help"], capture_output=True, text=True, timeout=60)
        return out.stdout + out.stderr
    except (OSError, subprocess.SubprocessError):
        return ""


@lru_cache(maxsize=8)
def ncu_version(ncu: str) -> str:
    """``ncu 2025.3.1`` from ``ncu --version`` (``ncu`` when it says no version)."""
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "ncu"
    m = re.search(r"Version\s+(\d+(?:\.\d+){1,2})", out.stdout + out.stderr)
    return f"ncu {m.group(1)}" if m else "ncu"


class NcuBackend:
    """Nsight Compute's CLI around the counting unit's worker (see the module docstring)."""

    name = "ncu"

    def __init__(
        self,
        ncu: str | None = None,
        metrics: tuple[str, ...] | None = None,
        *,
        profiler_range: bool = True,
        replay: str = REPLAY,
        groups: Any = None,
    ) -> None:
        """``profiler_range=False``: profile from the start (every launch of the kernels, the warm-up
        too, dropped by order): slower, for a driver or ncu that ignores cuProfilerStart/Stop.
        ``replay``: ncu's ``--replay-mode`` (``REPLAY_MODES``; see ``REPLAY``). ``metrics``: one group
        of one's own instead of ``NCU_GROUPS``; ``groups``: several (each one replay pass, or the save
        before the second pass changes the cache state the counters read)."""
        if replay not in REPLAY_MODES:
            raise ConfigError(f"ncu replay mode must be one of {', '.join(REPLAY_MODES)}, got {replay!r}")
        self.replay = replay
        self.explicit = ncu
        if groups:
            self.metric_groups = tuple(tuple(g) for g in groups)
        else:
            self.metric_groups = (tuple(metrics),) if metrics else NCU_GROUPS
        self.metrics = tuple(m for g in self.metric_groups for m in g)
        self.profiler_range = bool(profiler_range)
        self.marker = "cuda-profiler" if self.profiler_range else "none"
        self.captures_warmup = not self.profiler_range
        self.counts_in_worker = False  # its report is parsed at the unit's finish step
        self._path: str | None = None
        # what its ncu says of itself, learnt where it runs (``available``: on a cluster, on the worker)
        self._print_units: bool | None = None
        self._label = ""

    @property
    def path(self) -> str | None:
        if self._path is None:
            self._path = find_tool(self.explicit, "ncu", NCU_PLACES)
        return self._path

    def available(self, device: Any) -> str | None:
        kind = device.kind
        if kind != "cuda":
            return f"ncu counts NVIDIA GPUs; the device is {kind}:{device.index}"
        if self.path is None:
            where = (
                f"{self.explicit!r} is not an executable"
                if self.explicit
                else f"not on PATH nor at {', '.join(NCU_PLACES)}"
            )
            return (
                f"Nsight Compute (ncu) not found: {where} (install the CUDA toolkit's Nsight Compute, or pass ncu=PATH)"
            )
        # asked here, where the counting units run: a cluster's client may have no ncu of its own
        self._print_units = "--print-units" in _help_text(self.path)
        self._label = ncu_version(self.path)
        return None

    def groups(self, device: Any) -> list[tuple[str, ...]]:
        return [tuple(g) for g in self.metric_groups]

    def prefix(self, group: tuple[str, ...], out_dir: Path, entries: list[str]) -> list[str]:
        if self.path is None:
            raise CounterError("ncu is not available (ask available(device) first)")
        return ncu_command(
            self.path,
            group,
            name_pattern(entries),
            out_dir / LOG,
            print_units=self._print_units
            if self._print_units is not None
            else "--print-units" in _help_text(self.path),
            profiler_range=self.profiler_range,
            replay=self.replay,
        )

    def parse(self, out_dir: Path, entries: list[dict[str, Any]] | None = None) -> tuple[list[Launch], str]:
        text = _read_log(out_dir)
        return parse_csv(text), pass_note(text)

    def per_launch(self, values: dict[str, float]) -> dict[str, float]:
        out = {
            "dram_read_bytes": values.get("dram__bytes_read.sum", math.nan),
            "dram_write_bytes": values.get("dram__bytes_write.sum", math.nan),
            # ncu's sector hit rate reads 100-106% on the H200 for a fully L2-resident launch (hits also
            # counted for sectors the L2 fills itself, recorded in data/counters/h200/): a rate, so at most 1
            "l2_hit_rate": min(values.get("lts__t_sector_hit_rate.pct", math.nan) / 100.0, 1.0),
            "duration_s": values.get("gpu__time_duration.sum", math.nan),
        }
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self._label or (ncu_version(self.path) if self.path else "ncu"),
            "metrics": list(self.metrics),
            "groups": [list(g) for g in self.metric_groups],
            "profiler_range": self.profiler_range,
            "replay": self.replay,
            "path": self.path or "",
        }


def ncu_command(
    ncu: str,
    metrics: tuple[str, ...],
    pattern: str,
    log: Path,
    *,
    print_units: bool = True,
    profiler_range: bool = True,
    replay: str = "",
) -> list[str]:
    """The prefix: ``ncu`` with cache and clock control off, profiling only between the unit's
    cuProfilerStart/Stop (``profiler_range``), the kernels matching ``pattern``, ``metrics`` as CSV
    into ``log`` (``print_units``: in base units, bytes and nanoseconds, where ncu has ``--print-units``)."""
    return [
        ncu,
        "--target-processes",
        "all",
        *(["--profile-from-start", "off"] if profiler_range else []),
        *(["--replay-mode", replay] if replay else []),
        "--cache-control",
        "none",
        "--clock-control",
        "none",
        "-k",
        f"regex:{pattern}",
        "--metrics",
        ",".join(metrics),
        "--csv",
        *(["--print-units", "base"] if print_units else []),
        "--log-file",
        str(log),
    ]


def _read_log(out_dir: Path) -> str:
    """ncu's log (its CSV and ``==PROF==`` lines), else a recorded stdout if ncu wrote there."""
    for name in (LOG, "stdout.txt"):
        p = out_dir / name
        if p.is_file():
            text = p.read_text(errors="replace")
            if '"ID"' in text:
                return text
    raise CounterError(
        f"ncu wrote no CSV table under {out_dir} (looked in {LOG} and stdout.txt): "
        f"{_tail(out_dir / LOG) or _tail(out_dir / 'stderr.txt') or 'both empty'}"
    )


def _tail(path: Path, limit: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-limit:].strip()
    except OSError:
        return ""


def pass_counts(text: str) -> list[int]:
    """Replay passes per profiled launch, from ncu's ``==PROF== Profiling "k" - 0: ... - 1 pass`` lines."""
    return [int(m.group(1)) for m in re.finditer(r"==PROF== Profiling\b[^\n]*?-\s*(\d+)\s+pass", text)]


def pass_note(text: str) -> str:
    """A note when any launch needed more than one replay pass (else "")."""
    most = max(pass_counts(text), default=1)
    if most <= 1:
        return ""
    return (
        f"ncu replayed launches in up to {most} passes: counters of passes after the first saw a cache the first pass "
        f"had warmed (use fewer metrics)"
    )


def number(text: str) -> float:
    """A CSV cell as a float: thousands separators dropped, ``n/a`` and empty -> NaN."""
    t = str(text).strip().replace(",", "").replace("\u202f", "").replace(" ", "")
    if not t or t.lower() in ("n/a", "nan", "-"):
        return math.nan
    try:
        return float(t)
    except ValueError:
        return math.nan


def to_base(value: float, unit: str) -> float:
    """``value`` in ``unit`` as bytes or seconds (percent, counts and other units unchanged)."""
    u = unit.strip().lower()
    if u in _BYTES:
        return value * _BYTES[u]
    if u in _SECONDS:
        return value * _SECONDS[u]
    return value  # percent, counts, and any unit none of the counted metrics uses


def _csv_rows(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise CounterError('ncu output has no CSV header (a line starting with "ID")')
    return list(csv.reader(lines[start:]))


def parse_csv(text: str) -> list[Launch]:
    """The profiled launches of an ncu ``--csv`` output (details or raw page), in launch order."""
    rows = _csv_rows(text)
    head = rows[0]
    col = {h: i for i, h in enumerate(head)}
    if "Metric Name" in col:
        return _long(rows[1:], col)
    return _wide(rows[1:], head, col)


def _long(rows: list[list[str]], col: dict[str, int]) -> list[Launch]:
    launches: dict[str, Launch] = {}
    need = max(col.get(c, 0) for c in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"))
    for r in rows:
        if len(r) <= need or not r[col["Metric Name"]]:
            continue
        launch = launches.setdefault(r[col["ID"]], Launch(r[col["Kernel Name"]]))
        unit = r[col["Metric Unit"]] if "Metric Unit" in col else ""
        launch.values[r[col["Metric Name"]]] = to_base(number(r[col["Metric Value"]]), unit)
    return [launches[k] for k in sorted(launches, key=_id_order)]


def _wide(rows: list[list[str]], head: list[str], col: dict[str, int]) -> list[Launch]:
    units = [""] * len(head)
    if rows and not rows[0][col["ID"]].strip():  # the raw page's units row
        units, rows = rows[0], rows[1:]
    metrics = [(i, h) for i, h in enumerate(head) if h not in _ID_COLUMNS]
    out = []
    for r in sorted(rows, key=lambda r: _id_order(r[col["ID"]])):
        if len(r) < len(head):
            continue
        out.append(Launch(r[col["Kernel Name"]], {h: to_base(number(r[i]), units[i]) for i, h in metrics}))
    return out


def _id_order(ident: str) -> float:
    v = number(ident)
    return v if math.isfinite(v) else math.inf


__all__ = [
    "LOG",
    "NCU_GROUPS",
    "NCU_METRICS",
    "REPLAY",
    "REPLAY_MODES",
    "NCU_PLACES",
    "NcuBackend",
    "ncu_command",
    "ncu_version",
    "number",
    "parse_csv",
    "pass_counts",
    "pass_note",
    "to_base",
]
