"""Sweeps over kernels x sizes x rotating counts x flush modes, with tidy results.

Every configuration produces raw sample rows and one summary row (columns: docs/ARCHITECTURE.md,
"Benchmark frames"). Per (kernel, size) a cold reference is taken first (single launches, each
after an l2-read flush) and every summary reports its bias against it (median / reference - 1).

With ``out=FILE.parquet`` the samples go to FILE.parquet, the summary to FILE.summary.parquet and
the provenance to FILE.meta.json, all rewritten atomically after each configuration: an
interrupted sweep keeps what finished, and running it again with the same ``out`` resumes (done
configurations are skipped). ``on_samples(frame)`` then ``on_result(summary_row)`` are called after each configuration and
``should_stop()`` before each one, so a widget can show live results and stop the sweep.
"""
from __future__ import annotations

import json
import math
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from ..devices import device_label, get_device
from ..devices.base import FLUSH_MODES, Device, check_flush_mode
from ..errors import BenchmarkError, ConfigError
from ..kernels import catalog
from ..kernels.spec import KernelSpec
from . import rotating as rot
from .flush import Flusher, make_flusher
from .stats import Measurement, StopRule
from .timing import DEFAULT_CHUNK, Workload, time_cold_reference, time_launches

SAMPLE_COLUMNS = (
    "run_id", "device", "device_name", "kernel", "size_bytes", "footprint_bytes", "rotating",
    "rotating_requested", "flush", "iteration", "buffer_set", "time_s", "flush_s", "gap_s",
)
SUMMARY_COLUMNS = (
    "run_id", "device", "device_name", "kernel", "size_bytes", "footprint_bytes", "rotating",
    "rotating_requested", "flush", "n", "median_s", "mean_s", "min_s", "p5_s", "p95_s", "iqr_rel", "cv",
    "ci_low_s", "ci_high_s", "n_outliers", "reference_median_s", "bias", "bandwidth_gbs",
    "peak_bandwidth_gbs", "rotating_cap_bytes", "warning",
)
COLD_REFERENCE = "cold-reference"
#: Metadata keys that must be equal for a sweep to resume into an existing output (how rows were
#: measured); kernels, sizes, rotating counts and flush modes may grow.
RESUME_MUST_MATCH = ("sweep.stop_rule", "sweep.chunk", "sweep.mem_fraction", "sweep.reference_samples",
                     "sweep.flush_end_event", "device.llc_bytes", "flush.factor.")
_SAMPLE_DTYPES = {"size_bytes": "int64", "footprint_bytes": "int64", "rotating": "int64", "iteration": "int64",
                  "buffer_set": "int64", "time_s": "float64", "flush_s": "float64", "gap_s": "float64"}


@dataclass
class SweepResult:
    samples: pd.DataFrame
    summary: pd.DataFrame
    metadata: dict[str, str]
    path: Path | None = None
    stopped: bool = False
    skipped: list[tuple[str, int, str, str]] = field(default_factory=list)


def output_paths(out: str | os.PathLike) -> tuple[Path, Path, Path]:
    """FILE.parquet -> (FILE.parquet, FILE.summary.parquet, FILE.meta.json)."""
    p = Path(out)
    if p.suffix != ".parquet":
        raise ConfigError(f"sweep output must be a .parquet file name, got {str(p)!r}")
    stem = p.with_suffix("")
    return p, Path(f"{stem}.summary.parquet"), Path(f"{stem}.meta.json")


def parse_size(text: str | int) -> int:
    """'1MiB', '256M', '4096', '64KiB', '1GiB' -> bytes."""
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        if text <= 0:
            raise ConfigError(f"size must be positive, got {text}")
        return int(text)
    t = str(text).strip()
    units = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1000, "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
             "g": 1 << 30, "gib": 1 << 30, "gb": 10**9}
    num = t.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    unit = t[len(num):].strip().lower()
    try:
        val = float(num)
    except ValueError:
        val = -1
    if unit not in units or val <= 0:
        raise ConfigError(f"size {text!r} is not a positive size like 4096, 64KiB, 1MiB, 256M or 1GiB")
    return int(val * units[unit])


def _write_atomic(df: pd.DataFrame, path: Path, metadata: dict[str, str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[b"hipexplore"] = json.dumps(metadata, sort_keys=True).encode()
    table = table.replace_schema_metadata(meta)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _empty(columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=_SAMPLE_DTYPES.get(c, "object")) for c in columns})


def verify(device: Device, spec: KernelSpec, sets: rot.BufferSets, kernel: Any, grid: tuple[int, int, int],
           block: tuple[int, int, int], rtol: float = 1e-5) -> float:
    """Run the kernel once on set 0 with poisoned outputs and compare with the numpy reference.

    Returns the largest ||out - ref|| / ||ref|| (float32 FMA contraction stays far below rtol); raises ``BenchmarkError`` above ``rtol``. Kernels without a
    reference return NaN (nothing to check).
    """
    if spec.reference is None:
        return math.nan
    outs = [a for a in spec.buffers() if a.role in ("out", "inout")]
    poison = {a.name: np.full(a.elements(sets.n), np.nan if np.issubdtype(np.dtype(a.dtype), np.floating) else 0x7F, dtype=a.dtype)
              for a in outs if a.role == "out"}
    for name, arr in poison.items():
        device.copy_to_device(sets.buffers[0][name], arr)
    device.synchronize()
    device.launch(kernel, grid, block, sets.args[0])
    device.synchronize()
    expected = spec.reference(sets.host, sets.scalars)
    worst = 0.0
    for name, ref in expected.items():
        got = np.empty_like(ref)
        device.copy_to_host(sets.buffers[0][name], got)
        if not np.all(np.isfinite(got)) and np.all(np.isfinite(ref)):
            raise BenchmarkError(f"kernel {spec.name!r} left unwritten (poisoned) elements in {name!r} at n={sets.n}")
        ref64 = ref.astype(np.float64)
        norm = float(np.linalg.norm(ref64))
        err = float(np.linalg.norm(got.astype(np.float64) - ref64) / norm) if norm > 0 else float(np.abs(got).max(initial=0.0))
        worst = max(worst, err)
        if err > rtol:
            raise BenchmarkError(f"kernel {spec.name!r} output {name!r} differs from the numpy reference at n={sets.n}: "
                                 f"||got - ref|| / ||ref|| = {err:.3g} > {rtol:g}")
    # restore set 0's outputs to the same data as the other sets
    for a in outs:
        device.copy_to_device(sets.buffers[0][a.name], sets.host[a.name])
    device.synchronize()
    return worst


def sweep(
    kernels: str | KernelSpec | Iterable[str | KernelSpec] = "triad",
    sizes: int | str | Iterable[int | str] = (1 << 20,),
    rotating: int | str | Iterable[int | str] = (1,),
    flush: str | Iterable[str] = ("none",),
    *,
    device: str | Device = "auto",
    iterations: int | None = None,
    stop: StopRule | None = None,
    reference: bool = True,
    reference_samples: int = 30,
    out: str | os.PathLike | None = None,
    resume: bool = True,
    progress: bool = True,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    on_samples: Callable[[pd.DataFrame], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    mem_fraction: float = rot.DEFAULT_MEM_FRACTION,
    chunk: int = DEFAULT_CHUNK,
    warmup_s: float = 0.02,
    verify_results: bool = True,
    flush_factor: dict[str, float] | None = None,
    flush_end_event: bool = False,
    run_id: str | None = None,
    command: str | Sequence[str] | None = None,
    cache: Any = None,
) -> SweepResult:
    """Benchmark every (kernel, size, rotating, flush) combination; see the module docstring.

    ``iterations=N`` takes exactly N samples per configuration (N must be >= the buffer sets);
    otherwise ``stop`` (default ``StopRule()``, adaptive) decides. Sizes are bytes per array.
    """
    specs = [catalog.get(k) for k in ([kernels] if isinstance(kernels, (str, KernelSpec)) else list(kernels))]
    size_list = [parse_size(s) for s in ([sizes] if isinstance(sizes, (int, str)) else list(sizes))]
    rot_list = [rot.parse_rotating(r) for r in ([rotating] if isinstance(rotating, (int, str)) else list(rotating))]
    flush_list = [flush] if isinstance(flush, str) else list(flush)
    if not specs or not size_list or not rot_list or not flush_list:
        raise ConfigError("sweep needs at least one kernel, size, rotating count and flush mode")
    for f in flush_list:
        if f not in FLUSH_MODES:
            raise ConfigError(f"flush mode {f!r} is unknown; expected one of {', '.join(FLUSH_MODES)}")
    if iterations is not None and stop is not None:
        raise ConfigError("give either iterations (fixed count) or stop (a StopRule), not both")
    rule = StopRule(iterations=iterations) if iterations is not None else (stop or StopRule())
    dev = get_device(device, cache=cache) if isinstance(device, str) else device
    if cache is not None and getattr(dev, "cache", None) is None:
        dev.cache = cache  # type: ignore[attr-defined]
    for f in flush_list:
        check_flush_mode(dev, f)
    for spec in specs:
        spec.source_for(dev.compiler)  # a kernel without a source for this device fails now, not mid-sweep

    from ..provenance import collect

    metadata = collect(dev, command)
    metadata.update({
        "sweep.kernels": ",".join(s.name for s in specs),
        "sweep.sizes": ",".join(str(s) for s in size_list),
        "sweep.rotating": ",".join(str(r) for r in rot_list),
        "sweep.flush": ",".join(flush_list),
        "sweep.stop_rule": repr(rule),
        "sweep.chunk": str(chunk),
        "sweep.mem_fraction": str(mem_fraction),
        "sweep.reference_samples": str(reference_samples if reference else 0),
        "sweep.flush_end_event": str(flush_end_event),
        **{f"flush.factor.{k}": str(v) for k, v in (flush_factor or {}).items()},
        "timing.method": ("perf_counter_ns around each synchronous ctypes call (host: no launch queue, no latency to hide)"
                          if dev.kind == "host" else
                          "per-launch event pairs enqueued in chunks behind a blocking kernel (nvbench's method)"),
    })

    paths = output_paths(out) if out is not None else None
    old_samples, old_summary = _empty(SAMPLE_COLUMNS), _empty(SUMMARY_COLUMNS)
    if paths is not None and resume and paths[0].exists() and paths[1].exists():
        old_samples, old_summary = pd.read_parquet(paths[0]), pd.read_parquet(paths[1])
        names = set(old_summary["device_name"].unique())
        if names and names != {dev.name}:
            raise ConfigError(f"cannot resume {str(paths[0])!r}: it holds results from {sorted(names)}, not {dev.name!r}; use another out file")
        if paths[2].exists():  # finished rows must have been measured the way new rows will be
            try:
                old_meta = json.loads(paths[2].read_text())
            except (OSError, ValueError):
                old_meta = {}
            now = {**metadata, "device.llc_bytes": str(dev.llc_bytes),
                   **{f"flush.factor.{k}": str(v) for k, v in (flush_factor or {}).items()}}
            differ = [f"{k}: {old_meta[k]!r} then, {now.get(k, '')!r} now" for k in sorted(old_meta)
                      if k.startswith(RESUME_MUST_MATCH) and old_meta[k] != now.get(k, "")]
            if differ:
                raise ConfigError(f"cannot resume {str(paths[0])!r}: its finished rows were measured with other settings "
                                  f"({'; '.join(differ)}); use the same settings, --no-resume, or another out file")
        if run_id is None and len(old_summary):
            run_id = str(old_summary["run_id"].iloc[0])
    run_id = run_id or uuid.uuid4().hex[:12]
    metadata["run_id"] = run_id
    done = {(r.kernel, int(r.size_bytes), str(r.rotating_requested), r.flush) for r in old_summary.itertuples()}
    ref_medians = {(r.kernel, int(r.size_bytes)): float(r.median_s) for r in old_summary.itertuples() if r.flush == COLD_REFERENCE}

    samples_parts: list[pd.DataFrame] = [old_samples] if len(old_samples) else []
    summary_rows: list[dict[str, Any]] = old_summary.to_dict("records")
    label = device_label(dev)

    # flushers first, so their memory is taken before rotating sets are sized against free memory
    factors = flush_factor or {}
    flushers: dict[str, Flusher | None] = {}
    try:
        for f in set(flush_list) | ({"l2-read"} if reference else set()):
            flushers[f] = make_flusher(dev, f, factor=factors.get(f))
        free, _total = dev.memory_info()
        plans: dict[tuple[str, int, str], rot.RotatingPlan] = {}
        for spec in specs:
            for size in size_list:
                n = spec.elements(size)
                for r in rot_list:
                    p = rot.plan(r, footprint_bytes=spec.footprint(n), set_bytes=spec.set_bytes(n),
                                 llc_bytes=dev.llc_bytes, free_bytes=free, mem_fraction=mem_fraction)
                    if not rule.adaptive:
                        rot.check_iterations(int(rule.iterations or 0), p.count)
                    plans[(spec.name, size, str(r))] = p
        for f in flush_list:
            metadata[f"flush.{f}.bytes"] = str(flushers[f].nbytes if flushers.get(f) else 0)
        metadata["device.llc_bytes"] = str(dev.llc_bytes)
        metadata["device.llc_source"] = dev.llc_source

        total = len(specs) * len(size_list) * (len(rot_list) * len(flush_list) + (1 if reference else 0))
        bar = _progress(total, progress, done_count=len(done))
        stopped = False

        def emit(rows: pd.DataFrame, row: dict[str, Any]) -> None:
            samples_parts.append(rows)
            summary_rows.append(row)
            if paths is not None:
                _flush_to_disk(paths, samples_parts, summary_rows, metadata)
            if on_samples is not None:
                on_samples(rows.copy())
            if on_result is not None:
                on_result(dict(row))
            bar.update(1)

        for spec in specs:
            for size in size_list:
                n = spec.elements(size)
                footprint = spec.footprint(n)
                grid, block = spec.geometry(n, dev)
                kernel = dev.compiled_kernel(spec.name)  # type: ignore[attr-defined]
                base = dict(run_id=run_id, device=label, device_name=dev.name, kernel=spec.name, size_bytes=size,
                            footprint_bytes=footprint)
                ref_key = (spec.name, size)
                need_ref = reference and (spec.name, size, "1", COLD_REFERENCE) not in done
                if need_ref or verify_results:
                    if should_stop is not None and should_stop():
                        stopped = True
                        break
                    with rot.BufferSets(dev, spec, n, 1) as sets:
                        if verify_results:
                            err = verify(dev, spec, sets, kernel, grid, block)
                            metadata[f"verify.{spec.name}.{size}"] = f"rel_l2_error={err:.3g}"
                        if need_ref:
                            wl = Workload(dev, kernel, grid, block, sets.args)
                            raw = time_cold_reference(wl, flushers["l2-read"], reference_samples, chunk=chunk, warmup_s=warmup_s)  # type: ignore[arg-type]
                            m = Measurement(raw.time_s, label=f"{spec.name} {size} cold", notes=list(raw.notes))
                            ref_medians[ref_key] = m.median
                            cap = int(free * mem_fraction)
                            rows, row = _frames(base, 1, "1", COLD_REFERENCE, raw, m, ref_medians[ref_key], dev, footprint, cap)
                            emit(rows, row)
                for r in rot_list:
                    p = plans[(spec.name, size, str(r))]
                    todo = [f for f in flush_list if (spec.name, size, p.requested, f) not in done]
                    if not todo:
                        continue
                    if should_stop is not None and should_stop():
                        stopped = True
                        break
                    with rot.BufferSets(dev, spec, n, p.count) as sets:
                        for f in todo:
                            if should_stop is not None and should_stop():
                                stopped = True
                                break
                            k = dev.compiled_kernel(spec.name, inline_icache=True) if f == "inline-icache" else kernel  # type: ignore[attr-defined]
                            wl = Workload(dev, k, grid, block, sets.args)
                            raw = time_launches(wl, flushers.get(f), rule, chunk=chunk, warmup_s=warmup_s, flush_end_event=flush_end_event)
                            notes = ([p.note] if p.note else []) + list(raw.notes)
                            if f == "inline-icache":
                                notes.append("by design time_s includes the s_icache_inv + 16 s_nop 0 at the kernel entry")
                            m = Measurement(raw.time_s, label=f"{spec.name} {size} r={p.requested} {f}", notes=notes)
                            rows, row = _frames(base, p.count, p.requested, f, raw, m, ref_medians.get(ref_key, math.nan), dev, footprint, p.cap_bytes)
                            emit(rows, row)
                    if stopped:
                        break
                if stopped:
                    break
            if stopped:
                break
        bar.close()
    finally:
        for fl in flushers.values():
            if fl is not None:
                fl.free()
    samples_df = pd.concat(samples_parts, ignore_index=True) if samples_parts else _empty(SAMPLE_COLUMNS)
    summary_df = pd.DataFrame(summary_rows, columns=list(SUMMARY_COLUMNS)) if summary_rows else _empty(SUMMARY_COLUMNS)
    if paths is not None:
        _flush_to_disk(paths, samples_parts, summary_rows, metadata)
    return SweepResult(samples_df, summary_df, metadata, paths[0] if paths else None, stopped)


def _frames(base: dict[str, Any], count: int, requested: str, flush: str, raw: Any, m: Measurement, ref: float,
            dev: Device, footprint: int, cap: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    k = len(raw.time_s)
    rows = pd.DataFrame({
        **{c: [base[c]] * k for c in ("run_id", "device", "device_name", "kernel")},
        "size_bytes": np.full(k, base["size_bytes"], dtype=np.int64),
        "footprint_bytes": np.full(k, footprint, dtype=np.int64),
        "rotating": np.full(k, count, dtype=np.int64),
        "rotating_requested": [requested] * k,
        "flush": [flush] * k,
        "iteration": np.arange(k, dtype=np.int64),
        "buffer_set": raw.buffer_set.astype(np.int64),
        "time_s": raw.time_s,
        "flush_s": raw.flush_s,
        "gap_s": raw.gap_s,
    }, columns=list(SAMPLE_COLUMNS))
    s = m.summary()
    row: dict[str, Any] = {**base, "rotating": count, "rotating_requested": requested, "flush": flush}
    row.update({key: s[key] for key in ("n", "median_s", "mean_s", "min_s", "p5_s", "p95_s", "iqr_rel", "cv", "ci_low_s", "ci_high_s", "n_outliers")})
    row["reference_median_s"] = ref
    row["bias"] = (m.median / ref - 1.0) if ref and not math.isnan(ref) else math.nan
    row["bandwidth_gbs"] = footprint / m.median / 1e9 if m.median > 0 else math.nan
    row["peak_bandwidth_gbs"] = float(dev.peak_bandwidth_gbs)
    row["rotating_cap_bytes"] = int(cap)
    row["warning"] = s["warning"]
    return rows, row


def _flush_to_disk(paths: tuple[Path, Path, Path], samples_parts: list[pd.DataFrame], summary_rows: list[dict[str, Any]],
                   metadata: dict[str, str]) -> None:
    samples_path, summary_path, meta_path = paths
    samples_path.parent.mkdir(parents=True, exist_ok=True)
    samples = pd.concat(samples_parts, ignore_index=True) if samples_parts else _empty(SAMPLE_COLUMNS)
    summary = pd.DataFrame(summary_rows, columns=list(SUMMARY_COLUMNS))
    # samples first: a summary row never exists without its samples
    _write_atomic(samples, samples_path, metadata)
    _write_atomic(summary, summary_path, metadata)
    tmp = meta_path.with_name(f".{meta_path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(metadata, indent=1, sort_keys=True))
    os.replace(tmp, meta_path)


class _NullBar:
    def update(self, k: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


def _progress(total: int, enabled: bool, done_count: int) -> Any:
    if not enabled:
        return _NullBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return _NullBar()
    return tqdm(total=total, initial=min(done_count, total), desc="hipexplore sweep", unit="config", leave=False)


__all__ = ["COLD_REFERENCE", "SAMPLE_COLUMNS", "SUMMARY_COLUMNS", "SweepResult", "output_paths", "parse_size", "sweep", "verify"]
