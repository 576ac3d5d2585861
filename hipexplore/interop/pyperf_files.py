"""pyperf JSON, both ways, through pyperf's own objects (``pyperf.BenchmarkSuite``, ``Benchmark``, ``Run``).

Reading: each pyperf benchmark is one configuration named by the benchmark's name; each of its runs
is one *unit* (pyperf runs every run in a worker process of its own, which is exactly what
hipexplore's units are: a process and a placement each), each value a sample (the time of one loop,
averaged over the run's ``loops``) in a chunk of its own. So the verdict rule applies unchanged: the
between-unit interval over pyperf's processes. What pyperf does not record is said (``LACKS``):
sizes, rotating buffers and flush modes do not exist there, and its times are wall-clock times of
the host (``perf_counter``), not device events.

Writing (``bench --export pyperf``): one pyperf benchmark per configuration (its name the
configuration's label), one run per unit of the sweep with that unit's samples as values, so
``pyperf compare_to`` and ``pyperf stats`` read a sweep as they read their own files.
"""

from __future__ import annotations

import gzip
import io
import math
from pathlib import Path
from typing import Any, Mapping

from ..bench.info import DEVICE_KIND, DEVICE_NAME, RUN_ID, SOURCE_FORMAT
from ..errors import ConfigError
from ..extras import require
from ..schema import Configuration, Timer
from ..untrusted import load_json, shown

#: a pyperf file larger than this (after decompression) is refused before pyperf parses it
MAX_BYTES = 256 << 20
#: what a pyperf file does not hold that a sweep does (said beside every verdict on one)
LACKS = (
    "pyperf records no size, rotating buffer sets, flush mode or device timer: each benchmark is one row "
    "keyed by its name; its runs (one worker process each) are the units, its values the samples "
    "(host wall-clock time per loop)"
)
#: the timer name rows read from pyperf carry
TIMER = Timer.PYPERF.name


def _text(path: Path) -> str:
    """The file's text, bounded: a .gz is decompressed up to ``MAX_BYTES`` (a gzip bomb stops there)."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
        if path.suffix == ".gz":
            raw = gzip.GzipFile(fileobj=io.BytesIO(raw)).read(MAX_BYTES + 1)
    except (OSError, EOFError) as exc:
        raise ConfigError(f"cannot read pyperf file {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(
            f"pyperf file {str(path)!r} is larger than {MAX_BYTES >> 20} MiB; expected a pyperf result file"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"pyperf file {str(path)!r} is not UTF-8 text; expected pyperf JSON") from None


def looks_like(obj: Any) -> bool:
    """A parsed JSON document of pyperf's shape (a suite, or a single benchmark file)."""
    return (
        isinstance(obj, dict) and "version" in obj and ("benchmarks" in obj and "devices" not in obj or "runs" in obj)
    )


def read(path: str | Path, parsed: Any = None) -> tuple[Any, dict[str, str]]:
    """(samples frame, metadata) of a pyperf file, every value checked as untrusted input
    (``bench.readback``: printable names, times in the possible range)."""
    import pandas as pd

    from ..bench.readback import check_frame
    from ..schema import SAMPLES

    pyperf = require("pyperf", "reading a pyperf file", "interop")
    path = Path(path)
    if parsed is None:
        parsed = load_json(_text(path), f"pyperf file {str(path)!r}", max_depth=12)
    if not looks_like(parsed):
        raise ConfigError(
            f"{str(path)!r} is not a pyperf file (no 'version' and 'benchmarks'); expected pyperf JSON "
            f"(python -m pyperf ... -o FILE.json)"
        )
    try:
        suite = pyperf.BenchmarkSuite.load(str(path))
    except Exception as exc:  # noqa: BLE001 - pyperf raises ValueError, KeyError, TypeError on a malformed file
        raise ConfigError(f"pyperf cannot read {str(path)!r}: {type(exc).__name__}: {shown(str(exc), 160)}") from None
    rows, meta = [], {}
    for bench in suite.get_benchmarks():
        name = bench.get_name()
        unit = bench.get_unit()
        if unit != "second":
            raise ConfigError(
                f"pyperf file {str(path)!r}: benchmark {shown(name)} measures {shown(unit)}, not time; "
                f"expected a benchmark of seconds"
            )
        bmeta = bench.get_metadata()
        for key in ("cpu_model_name", "hostname", "platform", "python_version"):
            if key in bmeta and f"pyperf.{key}" not in meta:
                meta[f"pyperf.{key}"] = str(bmeta[key])
        device = str(bmeta.get("cpu_model_name") or bmeta.get("hostname") or "pyperf host")
        for u, run in enumerate(r for r in bench.get_runs() if r.values):
            for i, value in enumerate(run.values):
                rows.append(
                    {
                        "kernel": name,
                        "size_bytes": 1,
                        "rotating_requested": "-",
                        "flush": "-",
                        "timer": TIMER,
                        "device_name": device,
                        "time_s": float(value),
                        "chunk": u * 1_000_000 + i,
                        "pass_index": u,
                        "dropped": False,
                    }
                )
    if not rows:
        raise ConfigError(f"pyperf file {str(path)!r} holds no run with values; expected a pyperf result file")
    frame = pd.DataFrame(rows)
    check_frame(frame, SAMPLES, str(path))
    meta.update(
        {
            **DEVICE_NAME.entry(str(frame["device_name"].iloc[0])),
            **DEVICE_KIND.entry("pyperf"),
            **SOURCE_FORMAT.entry("pyperf"),
        }
    )
    return frame, meta


def benchmark_names(frame: Any) -> list[str]:
    return sorted(map(str, frame["kernel"].unique()))


def write(summary: Any, samples: Any, metadata: dict[str, str]) -> str:
    """The pyperf JSON text of a sweep: one benchmark per configuration, one run per unit."""

    pyperf = require("pyperf", "bench --export pyperf", "interop")
    keys = list(Configuration.COLUMNS)
    kept = samples[~samples["dropped"].astype(bool)] if "dropped" in samples.columns else samples
    benches = []
    for key, g in kept.groupby(keys, sort=True):
        row = dict(zip(keys, key))
        name = config_label(row)
        common = {
            "name": name,
            "unit": "second",
            "loops": 1,
            "hipexplore_device": DEVICE_NAME.of(metadata, ""),
            "hipexplore_run_id": RUN_ID.of(metadata, ""),
        }
        units = g.groupby("pass_index", sort=True) if "pass_index" in g.columns else [(0, g)]
        runs = []
        for _u, part in units:
            values = [float(v) for v in part["time_s"].to_numpy(float) if math.isfinite(v) and v > 0]
            if values:
                runs.append(pyperf.Run(values, metadata=dict(common), collect_metadata=False))
        if runs:
            benches.append(pyperf.Benchmark(runs))
    if not benches:
        raise ConfigError("the run holds no samples to export to pyperf")
    suite = pyperf.BenchmarkSuite(benches)
    buf = io.StringIO()
    suite.dump(buf, compact=False)
    return buf.getvalue()


__all__ = ["LACKS", "MAX_BYTES", "TIMER", "benchmark_names", "config_label", "looks_like", "read", "write"]


def config_label(row: Mapping[str, Any]) -> str:
    """A configuration's name in another tool: ``triad 1 MiB r=1 l2-read`` (+ the timer when not events)."""
    from ..verdict_rule import size_text

    from ..schema import Timer

    t = Timer.of_cell(row.get("timer"))
    timer = "" if t.default else f" {t}"
    kern = f"{row['kernel']} " if isinstance(row.get("kernel"), str) else ""
    return f"{kern}{size_text(row['size_bytes'])} r={row['rotating_requested']} {row['flush']}{timer}"
