"""A sweep's files: FILE.parquet (samples), FILE.summary.parquet, FILE.meta.json.

Why apart from the loop: what is on disk is a contract the report reads back (by the schema tag
each parquet file carries, see ``hipexplore.schema``) and that resume builds on, and it is easier
to keep atomic (temp file + ``os.replace``, samples before summary: a summary row never exists
without its samples) when the writing lives in one place.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from ..errors import ConfigError
from ..schema import SAMPLE_COLUMNS, SAMPLES, SUMMARY, SUMMARY_COLUMNS, write_parquet

_SAMPLE_DTYPES = {"size_bytes": "int64", "footprint_bytes": "int64", "rotating": "int64", "iteration": "int64",
                  "pass_index": "int64", "chunk": "int64", "position": "int64", "lead": "int64", "buffer_set": "int64", "time_s": "float64", "flush_s": "float64",
                  "gap_s": "float64", "clock_mhz": "float64", "temp_c": "float64", "power_w": "float64",
                  "throttled": "bool", "dropped": "bool"}


def output_paths(out: str | os.PathLike) -> tuple[Path, Path, Path]:
    """FILE.parquet -> (FILE.parquet, FILE.summary.parquet, FILE.meta.json)."""
    p = Path(out)
    if p.suffix != ".parquet":
        raise ConfigError(f"sweep output must be a .parquet file name, got {str(p)!r}")
    stem = p.with_suffix("")
    return p, Path(f"{stem}.summary.parquet"), Path(f"{stem}.meta.json")


def empty_frame(columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=_SAMPLE_DTYPES.get(c, "object")) for c in columns})


def samples_frame(parts: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(parts, ignore_index=True) if parts else empty_frame(SAMPLE_COLUMNS)


def summary_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)) if rows else empty_frame(SUMMARY_COLUMNS)


def write_results(paths: tuple[Path, Path, Path], samples_parts: list[pd.DataFrame], summary_rows: list[dict[str, Any]],
                  metadata: dict[str, str], columns: tuple[Sequence[str], Sequence[str]] | None = None) -> None:
    """Rewrite all three files atomically, samples first (``columns``: the samples' and the
    summary's columns, when not the schema's: a cluster sweep adds ``CLUSTER_COLUMNS``)."""
    samples_path, summary_path, meta_path = paths
    samples_path.parent.mkdir(parents=True, exist_ok=True)
    sample_cols, summary_cols = columns or (SAMPLE_COLUMNS, SUMMARY_COLUMNS)
    samples = samples_frame(samples_parts)
    write_parquet(samples if columns is None else samples.reindex(columns=list(sample_cols)), samples_path, SAMPLES, metadata)
    write_parquet(pd.DataFrame(summary_rows, columns=list(summary_cols)), summary_path, SUMMARY, metadata)
    tmp = meta_path.with_name(f".{meta_path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(metadata, indent=1, sort_keys=True))
    os.replace(tmp, meta_path)


def read_results(paths: tuple[Path, Path, Path]) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str] | None] | None:
    """(samples, summary, metadata or None) of an earlier sweep, None when there is none."""
    if not (paths[0].exists() and paths[1].exists()):
        return None
    try:
        samples, summary = pd.read_parquet(paths[0]), pd.read_parquet(paths[1])
    except Exception as exc:  # pyarrow's ArrowInvalid & co: a truncated or foreign file; leave it as it is
        raise ConfigError(f"cannot resume from {str(paths[0])!r}: it or {paths[1].name} is not a readable parquet file "
                          f"({type(exc).__name__}: {str(exc)[:200]}); nothing was changed: move it away, or start over "
                          f"with --no-resume (resume=False)") from None
    meta: dict[str, str] | None = None
    if paths[2].exists():
        try:
            meta = json.loads(paths[2].read_text())
        except (OSError, ValueError):
            meta = {}
    return samples, summary, meta
