"""A sweep's files read back as untrusted input: the one check of samples and summary frames and
of the metadata stored with them, for every reader (resume and compare through ``bench.io``, the
report's recorded data through ``report.recorded``).

Why: a run file is data someone else may have written or edited (a colleague's result, a file
attached to a ticket). Before these checks ``hipexplore compare`` took sample times scaled by
1e-300 and answered "faster (-100%)" on every row; zero and negative times, a negative or 2**62
``size_bytes`` and times stored as text were all taken, and a meta.json nested 100,000 deep ended
in a traceback. Each file kind is checked once, when it is read, against what a sweep can have
written: the columns the readers compute with have their types (integer columns integers, times
floating-point numbers, names text) and physically possible values. Every refusal is one
``ConfigError`` line naming the file, the column, the row and value, and what was expected.

Bounds (every one far outside what a real sweep writes):

* ``time_s`` of every sample, and the time statistics of a summary row where measured (NaN
  where not), in ``[MIN_TIME_S, MAX_TIME_S]``: 0.1 ns (no launch or call is shorter) to one hour (no
  benchmarked launch is longer);
* ``size_bytes`` in ``[1, MAX_SIZE_BYTES]`` (1 PiB: above any device's memory); other byte counts
  in ``[0, MAX_BYTES]`` (the largest ``bytes_per_launch`` a kernel may declare); counts and indices
  in ``[0, MAX_COUNT]``; other numbers finite or NaN;
* names (kernel, flush, rotating, timer, device, run id, cluster worker) printable text
  (``untrusted.check_name``);
* at most ``MAX_ROWS`` rows and ``MAX_COLUMNS`` columns, checked from the file's footer before the
  file is read; metadata JSON at most ``MAX_METADATA_BYTES`` and ``untrusted.MAX_DEPTH`` deep.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..kernels.spec import MAX_COUNT_PER_LAUNCH
from ..schema import CLUSTER_COLUMNS, SAMPLES, SUMMARY, Configuration
from ..untrusted import check_name, load_json, shown

MIN_TIME_S = 1e-10
MAX_TIME_S = 3600.0
MAX_SIZE_BYTES = 1 << 50
MAX_BYTES = MAX_COUNT_PER_LAUNCH
MAX_COUNT = 1 << 53
MAX_ROWS = 20_000_000
MAX_COLUMNS = 1000
MAX_METADATA_BYTES = 16 << 20

#: text columns that name a configuration: text on every row
_NAMES = ("kernel", "rotating_requested", "flush")
#: other text columns (a row may lack one: legacy files, cluster columns of rows no worker measured,
#: counter columns of rows nothing counted)
_TEXTS = (
    "run_id",
    "device",
    "device_name",
    "timer",
    *CLUSTER_COLUMNS,
    "cache_state",
    "cold_promise",
    "counter_backend",
)
_COUNT = (0, MAX_COUNT)
_INTS: dict[str, dict[str, tuple[int, int]]] = {
    SAMPLES: {
        "size_bytes": (1, MAX_SIZE_BYTES),
        "footprint_bytes": (0, MAX_BYTES),
        "rotating": (1, MAX_COUNT),
        "iteration": _COUNT,
        "pass_index": _COUNT,
        "chunk": _COUNT,
        "position": _COUNT,
        "buffer_set": _COUNT,
    },
    SUMMARY: {
        "size_bytes": (1, MAX_SIZE_BYTES),
        "footprint_bytes": (0, MAX_BYTES),
        "rotating": (1, MAX_COUNT),
        "n": _COUNT,
        "passes": _COUNT,
        "n_outliers": _COUNT,
        "n_throttled": _COUNT,
        "rotating_cap_bytes": (0, MAX_BYTES),
    },
}
_BOOLS = ("throttled", "dropped", "timed_out")
#: times of launches: in [MIN_TIME_S, MAX_TIME_S] (a summary's NaN where nothing was measured)
_TIMES = {
    SAMPLES: ("time_s",),
    SUMMARY: ("median_s", "mean_s", "min_s", "p5_s", "p95_s", "reference_median_s", "floor_s"),
}
#: other numbers: finite or NaN
_NUMBERS = {
    SAMPLES: ("flush_s", "gap_s", "clock_mhz", "temp_c", "power_w", "host_load", "host_busy", "host_steal"),
    SUMMARY: (
        "iqr_rel",
        "cv",
        "ci_low_s",
        "ci_high_s",
        "bimodality",
        "bias",
        "bias_ci_low",
        "bias_ci_high",
        "bandwidth_gbs",
        "peak_bandwidth_gbs",
        "clock_mhz",
        "net_median_s",
        # the counter pass's numbers (schema.COUNTER_COLUMNS): NaN where nothing was counted
        "dram_read_bytes",
        "dram_write_bytes",
        "l2_hit_rate",
        "input_bytes",
        "cold_fraction",
        "counter_launches",
    ),
}
#: what a reader computes with: a file of the kind without one of these is not a sweep's file
_REQUIRED = {SAMPLES: (*Configuration.UNTIMED_COLUMNS, "time_s"), SUMMARY: Configuration.UNTIMED_COLUMNS}


def check_footer(path: str | Path) -> None:
    """Refuse a parquet file larger than any sweep writes, from its footer, before it is read.
    A file pyarrow cannot open is left to the caller's read (which names it in its own words)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(str(path))
    except Exception:  # noqa: BLE001 - not parquet at all: the caller's read says so
        return
    if meta.num_rows > MAX_ROWS or meta.num_columns > MAX_COLUMNS:
        raise ConfigError(
            f"{str(path)!r} holds {meta.num_rows} rows of {meta.num_columns} columns; a sweep's file has at "
            f"most {MAX_ROWS} rows and {MAX_COLUMNS} columns"
        )


def read_frame(path: str | Path, kind: str, *, required: bool = True) -> Any:
    """The frame of one sweep file of ``kind`` (``schema.SAMPLES`` or ``SUMMARY``), bounded and
    checked (module docstring); a file that is not readable parquet is one line too."""
    import pandas as pd

    check_footer(path)
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - ArrowInvalid, OSError, ...: a truncated or foreign file
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(
            f"{str(path)!r} is not a readable parquet file ({shown(first, 200)}); expected a sweep's "
            f"{kind} file (hipexplore bench --out)"
        ) from None
    return check_frame(frame, kind, str(path), required=required)


def check_frame(frame: Any, kind: str, source: str, *, required: bool = True) -> Any:
    """``frame`` if its columns hold what a sweep's ``kind`` file can (module docstring); else one
    ConfigError line naming ``source``, the column, the row and the value. ``required``: the
    columns readers compute with must be there (legacy untagged files are checked where they
    have a column, not for the columns they lack)."""
    if not len(frame):
        return frame  # an empty file: its columns are typed object, and no value is there to check
    where = repr(source)
    if required:
        missing = [c for c in _REQUIRED[kind] if c not in frame.columns]
        if missing:
            raise ConfigError(
                f"{where} has no column {missing[0]!r}; expected a sweep's {kind} file (hipexplore bench --out) "
                f"with columns {', '.join(_REQUIRED[kind])}"
            )
    for col in (*_NAMES, *_TEXTS):
        if col in frame.columns:
            _check_texts(frame[col], where, col, missing_ok=col not in _NAMES)
    for col, (lo, hi) in _INTS[kind].items():
        if col in frame.columns:
            _check_ints(frame[col], where, col, lo, hi)
    for col in _BOOLS:
        if col in frame.columns and frame[col].dtype.kind != "b":
            raise ConfigError(f"{where}: column {col!r} holds {_kind_of(frame[col])}; expected true/false (bool)")
    for col in _TIMES[kind]:
        if col in frame.columns:
            _check_times(frame[col], where, col, nan_ok=kind == SUMMARY)
    for col in _NUMBERS[kind]:
        if col in frame.columns:
            _numbers(frame[col], where, col, "numbers")
            values = frame[col].to_numpy(dtype=float, na_value=math.nan)
            _first_bad(values, ~_isinf(values), where, col, "a finite number (or NaN where not measured)")
    return frame


def _kind_of(series: Any) -> str:
    import pandas as pd

    inferred = pd.api.types.infer_dtype(series, skipna=True)
    return {
        "string": "text",
        "floating": "floating-point numbers",
        "integer": "integers",
        "boolean": "true/false",
        "bytes": "bytes",
        "empty": "nothing but missing values",
        "mixed": "values of mixed types",
    }.get(inferred, inferred)


def _isinf(values: Any) -> Any:
    import numpy as np

    return np.isinf(values)


def _first_bad(values: Any, ok: Any, where: str, col: str, expected: str) -> None:
    import numpy as np

    if not ok.all():
        row = int(np.flatnonzero(~ok)[0])
        raise ConfigError(f"{where}: column {col!r} holds {values[row].item()!r} at row {row}; expected {expected}")


def _numbers(series: Any, where: str, col: str, what: str, kinds: str = "fiu") -> None:
    """The column holds numbers (a column of nothing but missing values reads as NaN)."""
    import pandas as pd

    if series.dtype.kind in kinds:
        return
    if series.dtype.kind == "O" and pd.api.types.infer_dtype(series, skipna=True) == "empty":
        return
    raise ConfigError(f"{where}: column {col!r} holds {_kind_of(series)}; expected {what}")


def _check_texts(series: Any, where: str, col: str, missing_ok: bool) -> None:
    import pandas as pd

    inferred = pd.api.types.infer_dtype(series, skipna=True)
    if inferred not in ("string", "empty"):
        raise ConfigError(f"{where}: column {col!r} holds {_kind_of(series)}; expected text")
    missing = series.isna().to_numpy()
    if not missing_ok and missing.any():
        raise ConfigError(
            f"{where}: column {col!r} has no value at row {int(missing.argmax())}; expected text on every row"
        )
    for value in pd.unique(series[~missing]):
        check_name(value, f"{where}: column {col!r} holds", allow_empty=missing_ok)


def _check_ints(series: Any, where: str, col: str, lo: int, hi: int) -> None:
    if series.dtype.kind not in "iu":
        raise ConfigError(f"{where}: column {col!r} holds {_kind_of(series)} ({series.dtype}); expected integers")
    values = series.to_numpy()
    _first_bad(values, (values >= lo) & (values <= hi), where, col, f"an integer in [{lo}, {_power(hi)}]")


def _power(n: int) -> str:
    """``2**50`` rather than 1125899906842624."""
    return f"2**{n.bit_length() - 1}" if n > 1 << 20 and n & (n - 1) == 0 else str(n)


def _check_times(series: Any, where: str, col: str, nan_ok: bool) -> None:
    import numpy as np

    _numbers(series, where, col, "floating-point seconds", kinds="f" if not nan_ok else "fiu")
    values = series.to_numpy(dtype=float, na_value=math.nan)
    with np.errstate(invalid="ignore"):
        ok = (values >= MIN_TIME_S) & (values <= MAX_TIME_S)
    if nan_ok:
        ok |= np.isnan(values)
    _first_bad(
        values, ok, where, col, f"the seconds one launch took, in [{MIN_TIME_S:g}, {MAX_TIME_S:g}] (positive, finite)"
    )


def metadata_of(text: str, source: str) -> dict[str, str]:
    """A sweep's metadata (meta.json, or the copy in the summary's parquet metadata): a JSON object
    of text values, parsed bounded; else a ConfigError naming ``source``."""
    if len(text) > MAX_METADATA_BYTES:
        raise ConfigError(f"{source}: {len(text)} characters of metadata; expected at most {MAX_METADATA_BYTES}")
    obj = load_json(text, source)
    if not isinstance(obj, dict):
        raise ConfigError(f"{source}: the metadata is {shown(obj)}; expected a JSON object")
    bad = next((k for k, v in obj.items() if not isinstance(v, str)), None)
    if bad is not None:
        raise ConfigError(f"{source}: metadata {shown(bad)} is {shown(obj[bad])}; expected text")
    return obj


__all__ = [
    "MAX_BYTES",
    "MAX_COUNT",
    "MAX_ROWS",
    "MAX_SIZE_BYTES",
    "MAX_TIME_S",
    "MIN_TIME_S",
    "check_footer",
    "check_frame",
    "metadata_of",
    "read_frame",
]


def embedded_metadata(path: Path) -> dict[str, str] | None:
    """The metadata embedded in a parquet file of ours; None where it carries none or none readable."""
    import pyarrow.parquet as pq

    from ..schema import METADATA_KEY

    raw = (pq.read_schema(str(path)).metadata or {}).get(METADATA_KEY.encode())
    try:
        return metadata_of(raw.decode("utf-8"), f"{path}: its metadata") if raw else None
    except (ValueError, UnicodeDecodeError):  # ConfigError is a ValueError: unreadable, as when it is absent
        return None


def read_metadata(path: str | Path) -> dict[str, str]:
    """The flat metadata a sweep's file carries (``bench.runinfo.RunInfo.read`` types it): a parquet
    file's embedded copy, or FILE.meta.json's; ``{}`` where none is readable."""
    p = Path(path)
    if p.suffix == ".json":
        return metadata_file(p)
    return embedded_metadata(p) or {}


def metadata_file(path: Path) -> dict[str, str]:
    """meta.json's metadata; ``{}`` when unreadable (not JSON, too large or deep, not an object of
    text): the summary's embedded copy is the committed one, this file a readable copy of it."""
    try:
        if path.stat().st_size > MAX_METADATA_BYTES:
            return {}
        return metadata_of(path.read_text(encoding="utf-8"), str(path))
    except (OSError, ValueError):  # UnicodeDecodeError and ConfigError are ValueErrors
        return {}
