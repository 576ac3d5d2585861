"""``run(spec, device)``: the sweep loop over a ``SweepSpec``.

Every configuration produces raw sample rows and one summary row (columns: ``hipexplore.schema``,
documented in docs/ARCHITECTURE.md "Benchmark frames"). Per (kernel, size) a cold reference is
taken first (single launches, each after an l2-read flush) and every summary reports its bias
against it (median / reference - 1).

With ``out=FILE.parquet`` the results are rewritten atomically after each configuration
(``bench.io``): an interrupted sweep keeps what finished, and running it again with the same
``out`` resumes (done configurations are skipped) when the recorded spec measured rows the same
way (``SweepSpec.measurement()``) on the same device. ``hooks.on_samples(frame)`` then
``hooks.on_result(summary_row)`` run after each configuration and ``hooks.should_stop()`` before
each one, so a widget can show live results and stop the sweep.
"""
from __future__ import annotations

import contextlib
import math
import os
import re
import uuid
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..devices import device_label
from ..devices.base import BoundKernel, Device, check_flush_mode
from ..errors import BenchmarkError, ConfigError, DeviceError, KernelFault
from ..kernels.build import kernel_for
from ..kernels.spec import KernelSpec
from ..schema import COLD_REFERENCE, SAMPLE_COLUMNS, SUMMARY_COLUMNS
from . import rotating as rot
from .callable import check_callable, sets_for
from .check import check_outputs
from .floor import floor_columns, measure_floor, wants_floor
from .flush import Flusher, make_flusher
from .io import empty_frame, output_paths, read_results, samples_frame, summary_frame, write_results
from .spec import SweepSpec
from ..devices.telemetry import for_device, wait_for_stable_clock
from .interleave import interleaved_launches
from .result import SweepHooks, SweepResult
from .stats import Measurement, is_timeout, set_bias as _set_bias
from .timing import InKernelTimer, Workload, time_cold_reference, time_launches, warm_up


def verify(device: Device, spec: KernelSpec, sets: Any, kernel: Any, grid: tuple[int, int, int],
           block: tuple[int, int, int], rtol: float | None = None, *, config: str = "") -> float:
    """The output check (``bench.check``): one launch on set 0 with poisoned outputs, compared element
    by element with the reference (NumPy function, second kernel, or a callable's reference).

    Returns the largest ||out - ref|| / ||ref||; raises ``BenchmarkError`` naming the configuration
    and the worst element. Kernels without a reference return NaN (nothing to check).
    """
    if spec.call is not None:
        return check_callable(device, spec, sets, config=config or f"callable {spec.name!r} at n={sets.n}")
    return check_outputs(device, spec, sets, kernel, grid, block, config=config, rtol=rtol)


def _check_resume(paths: tuple[Path, Path, Path], old_summary: pd.DataFrame, old_meta: dict[str, str] | None,
                  spec: SweepSpec, dev: Device) -> None:
    """Finished rows are kept only when they came from this device and were measured the way new
    rows will be: the recorded spec's measurement (and the LLC it sized flushes by) must match."""
    names = set(old_summary["device_name"].unique())
    if names and names != {dev.name}:
        raise ConfigError(f"cannot resume {str(paths[0])!r}: it holds results from {sorted(names)}, not {dev.name!r}; use another out file")
    if old_meta is None:
        return
    then = {**SweepSpec.recorded_measurement(old_meta),
            **({"device.llc_bytes": old_meta["device.llc_bytes"]} if "device.llc_bytes" in old_meta else {})}
    now = {**spec.measurement(), "device.llc_bytes": str(dev.llc_bytes)}
    # a recorded spec is compared whole (a flush factor set only now differs too); a legacy file's
    # loose keys only where it has them, as before specs were recorded
    keys = sorted(set(then) | set(now)) if old_meta.get("sweep.spec") else sorted(then)
    differ = [f"{k}: {then.get(k, '')!r} then, {now.get(k, '')!r} now" for k in keys if then.get(k, "") != now.get(k, "")]
    if differ:
        raise ConfigError(f"cannot resume {str(paths[0])!r}: its finished rows were measured with other settings "
                          f"({'; '.join(differ)}); use the same settings, --no-resume, or another out file")


def run(
    spec: SweepSpec,
    device: Device,
    *,
    out: str | os.PathLike | None = None,
    resume: bool = True,
    hooks: SweepHooks | None = None,
    progress: bool = True,
    run_id: str | None = None,
    command: str | Sequence[str] | None = None,
) -> SweepResult:
    """Measure every configuration of ``spec`` on ``device``; see the module docstring."""
    if not isinstance(spec, SweepSpec):
        raise ConfigError(f"run() takes a SweepSpec; got {type(spec).__name__}")
    hooks = hooks or SweepHooks()
    dev = device
    specs = spec.specs()
    rule = spec.stop
    flush_list = list(spec.flush)
    for f in flush_list:
        check_flush_mode(dev, f)
    for kspec in specs:
        kspec.source_for(dev.compiler)  # a kernel without a source for this device fails now, not mid-sweep

    from ..provenance import code_provenance, collect

    metadata = collect(dev, command)
    metadata.update(code_provenance(specs, dev.compiler))
    metadata.update({
        **spec.record(),
        "timing.method": ("perf_counter_ns around each synchronous ctypes call (host: no launch queue, no latency to hide)"
                          if dev.kind == "host" else
                          "per-launch event pairs enqueued in chunks behind a blocking kernel (nvbench's method)"),
    })

    paths = output_paths(out) if out is not None else None
    old_samples, old_summary = empty_frame(SAMPLE_COLUMNS), empty_frame(SUMMARY_COLUMNS)
    previous = read_results(paths) if paths is not None and resume else None
    if previous is not None:
        old_samples, old_summary, old_meta = previous
        assert paths is not None  # previous results come only from an out file
        _check_resume(paths, old_summary, old_meta, spec, dev)
        if run_id is None and len(old_summary):
            run_id = str(old_summary["run_id"].iloc[0])
    run_id = run_id or uuid.uuid4().hex[:12]
    metadata["run_id"] = run_id
    old_timer = old_summary["timer"] if "timer" in old_summary.columns else pd.Series(["events"] * len(old_summary))
    done = {(r.kernel, int(r.size_bytes), str(r.rotating_requested), r.flush, str(t))
            for r, t in zip(old_summary.itertuples(), old_timer)}
    refs: dict[tuple[str, int, str], Measurement] = {}
    if len(old_samples):
        old_t = old_samples["timer"] if "timer" in old_samples.columns else pd.Series(["events"] * len(old_samples))
        cold = old_samples[(old_samples["flush"] == COLD_REFERENCE).to_numpy()]
        for (kernel, size, timer), g in cold.assign(timer=old_t[cold.index]).groupby(["kernel", "size_bytes", "timer"]):
            refs[(kernel, int(size), str(timer))] = Measurement(g["time_s"].to_numpy(), label=f"{kernel} {size} cold",
                                                               chunks=g["chunk"].to_numpy() if "chunk" in g else None)
    if "pass_index" not in old_samples.columns:  # written before passes existed: one pass each
        old_samples = old_samples.assign(pass_index=np.zeros(len(old_samples), dtype=np.int64))
    if "lead" not in old_samples.columns:  # written before chunk leads existed: none
        old_samples = old_samples.assign(lead=np.zeros(len(old_samples), dtype=np.int64))
    if "passes" not in old_summary.columns:
        old_summary = old_summary.assign(passes=np.ones(len(old_summary), dtype=np.int64))
    if spec.passes > 1:
        return _measure_passes(spec, dev, specs, flush_list, metadata, paths, done, old_samples, old_summary, hooks, progress)
    return _measure(spec, dev, specs, rule, flush_list, metadata, paths, done, refs, old_samples, old_summary,
                    hooks, progress)


def _measure_passes(spec: SweepSpec, dev: Device, specs: list[KernelSpec], flush_list: list[str], metadata: dict[str, str],
                    paths: tuple[Path, Path, Path] | None, done: set, old_samples: pd.DataFrame, old_summary: pd.DataFrame,
                    hooks: SweepHooks, progress: bool) -> SweepResult:
    """``spec.passes`` one-pass sweeps of the configurations not done yet, merged (``bench.passes``)."""
    import dataclasses

    from . import passes as ps

    one = dataclasses.replace(spec, passes=1, stop=ps.pass_rule(spec.stop, spec.passes),
                              reference_samples=max(1, math.ceil(spec.reference_samples / spec.passes)))
    empty_s, empty_m = empty_frame(SAMPLE_COLUMNS), empty_frame(SUMMARY_COLUMNS)
    results: list[SweepResult] = []

    # on a GPU each pass runs in a process of its own: the event floor is fixed per process (BENCHMARKS.md
    # "Run-to-run drift"); Python-callable kernels cannot leave this process
    own_process = dev.kind != "host" and not any(k.call is not None for k in specs)

    def measure(k: int) -> SweepResult:
        if results and results[-1].stopped:
            return results[-1]
        if own_process:
            res = ps.pass_in_worker(one, dev, hooks=hooks, run_id=metadata["run_id"], done=done, metadata=metadata,
                                    pad=ps.pad_bytes(k))
        else:
            res = _measure(one, dev, specs, one.stop, flush_list, metadata, None, done, {}, empty_s, empty_m, hooks, progress)
        results.append(res)
        return res

    ps.run_passes(dev, spec.passes, measure, pad=not own_process)
    metadata["sweep.pass_pad_bytes"] = ",".join(str(ps.pad_bytes(k)) for k in range(len(results)))
    stopped = any(r.stopped for r in results)
    metadata["sweep.passes_done"] = str(len(results) - (1 if stopped else 0))
    merged_s, merged_m = ps.merge([r.samples for r in results], [r.summary for r in results],
                                  peak_bandwidth_gbs=float(dev.peak_bandwidth_gbs))
    samples_parts = [p for p in (old_samples, merged_s) if len(p)]
    summary_rows = old_summary.to_dict("records") + merged_m.to_dict("records")
    if paths is not None and not stopped:
        write_results(paths, samples_parts, summary_rows, metadata)
    skipped = sorted(d for d in done if d[3] != COLD_REFERENCE)
    return SweepResult(samples_frame(samples_parts), summary_frame(summary_rows), metadata, paths[0] if paths else None,
                       stopped, skipped)


def _reference_schedule(groups: int, parts: int, samples: int) -> list[tuple[int, int]]:
    """(group index before which a part is taken — ``groups`` meaning after the last — and its
    samples), parts spread evenly from before the first group to after the last."""
    parts = max(1, min(parts, samples))
    where = [0] if parts == 1 else [round(i * groups / (parts - 1)) for i in range(parts)]
    sizes = [samples // parts + (1 if i < samples % parts else 0) for i in range(parts)]
    out: dict[int, int] = {}
    for w, k in zip(where, sizes):
        out[w] = out.get(w, 0) + k
    return sorted(out.items())


def _clock_warmup_s(spec: SweepSpec, dev: Device) -> float:
    if spec.clock_warmup_s is not None:
        return float(spec.clock_warmup_s)
    return {"hip": 0.4, "cuda": 0.2}.get(dev.kind, 0.0)


def _measure(spec: SweepSpec, dev: Device, specs: list[KernelSpec], rule: Any, flush_list: list[str],
             metadata: dict[str, str], paths: tuple[Path, Path, Path] | None, done: set, refs: dict,
             old_samples: pd.DataFrame, old_summary: pd.DataFrame, hooks: SweepHooks, progress: bool) -> SweepResult:
    run_id = metadata["run_id"]
    size_list, rot_list, timers = list(spec.sizes), list(spec.rotating), list(spec.timers)
    reference, verify_results = spec.reference, spec.verify
    chunk, warmup_s, mem_fraction, flush_end_event = spec.chunk, spec.warmup_s, spec.mem_fraction, spec.flush_end_event
    samples_parts: list[pd.DataFrame] = [old_samples] if len(old_samples) else []
    summary_rows: list[dict[str, Any]] = old_summary.to_dict("records")
    label = device_label(dev)
    telemetry = for_device(dev)
    metadata["telemetry.source"] = telemetry.source
    metadata["telemetry.max_clock_mhz"] = f"{telemetry.max_clock_mhz:g}"
    throttle_mhz = spec.throttle_threshold * telemetry.max_clock_mhz if telemetry.available else math.nan

    # flushers first, so their memory is taken before rotating sets are sized against free memory
    factors = spec.flush_factor
    flushers: dict[str, Flusher | None] = {}
    where: list[str] = []  # (kernel, configuration) being measured: what a fault names
    faulted = False
    try:
        for f in set(flush_list) | ({"l2-read"} if reference else set()):
            flushers[f] = make_flusher(dev, f, factor=factors.get(f))
        free, _total = dev.memory_info()
        plans: dict[tuple[str, int, str], rot.RotatingPlan] = {}
        for kspec in specs:
            for size in size_list:
                n = kspec.elements(size)
                for r in rot_list:
                    p = rot.plan(r, footprint_bytes=kspec.footprint(n), set_bytes=kspec.set_bytes(n),
                                 llc_bytes=dev.llc_bytes, free_bytes=free, mem_fraction=mem_fraction)
                    if not rule.adaptive:
                        rot.check_iterations(int(rule.iterations or 0), p.count)
                    plans[(kspec.name, size, str(r))] = p
        for f in flush_list:
            metadata[f"flush.{f}.bytes"] = str(flushers[f].nbytes if flushers.get(f) else 0)
        metadata["device.llc_bytes"] = str(dev.llc_bytes)
        metadata["device.llc_source"] = dev.llc_source

        bar = _progress(spec.configurations(), progress, done_count=len(done))
        stopped = False
        warmed = False

        def emit(rows: pd.DataFrame, row: dict[str, Any]) -> None:
            samples_parts.append(rows)
            summary_rows.append(row)
            if paths is not None:
                write_results(paths, samples_parts, summary_rows, metadata)
            if hooks.on_samples is not None:
                hooks.on_samples(rows.copy())
            if hooks.on_result is not None:
                hooks.on_result(dict(row))
            bar.update(1)

        def measured(raw: Any, what: str, notes: list[str]) -> tuple[Measurement, np.ndarray]:
            throttled = raw.clock_mhz < throttle_mhz if not math.isnan(throttle_mhz) else np.zeros(len(raw.time_s), bool)
            keep = ~throttled if spec.drop_throttled else np.ones(len(raw.time_s), bool)
            notes = list(notes)
            if throttled.any():
                if spec.drop_throttled and keep.any():
                    notes.append(f"throttled: {int(throttled.sum())} sample(s) ran below {spec.throttle_threshold:.0%} of the "
                                 f"{telemetry.max_clock_mhz:g} MHz maximum clock and are left out of the statistics")
                else:
                    keep = np.ones(len(raw.time_s), bool)
                    notes.append(f"throttled: {int(throttled.sum())} sample(s) ran below {spec.throttle_threshold:.0%} of the "
                                 f"{telemetry.max_clock_mhz:g} MHz maximum clock (kept: "
                                 f"{'every sample was throttled' if spec.drop_throttled else 'drop_throttled=False'})")
            if is_timeout(raw.stop_reason):
                notes.append(f"stopped by its {raw.stop_reason.split(' reached', 1)[0]} before convergence")
            m = Measurement(raw.time_s[keep], label=what, notes=notes, chunks=raw.chunk[keep])
            return m, throttled

        floors: dict[str, float] = {}

        def floor_of(f: str) -> float | None:
            """The launch floor after flush ``f`` in this process (``bench.floor``), timed once."""
            if not wants_floor(spec.floor, dev):
                return None
            if f not in floors:
                floors[f] = measure_floor(dev, flushers.get(f), chunk=chunk, warmup_s=warmup_s, telemetry=telemetry,
                                          lead=spec.chunk_lead, trail=spec.chunk_trail)
                metadata[f"floor.{f}.median_s"] = f"{floors[f]:.6g}"
            return floors[f]

        pending: dict[tuple[str, int, str, str, str], Any] = {}
        rng = np.random.default_rng(spec.interleave_seed)

        def interleaved(key: tuple[str, int, str, str, str], wl: Workload) -> Any:
            """This configuration of every interleaved kernel in shuffled turns (``bench.interleave``);
            the partners' raw times wait in ``pending`` until the loop reaches their kernel."""
            if key in pending:
                return pending.pop(key)
            name, size, requested, f, t = key
            partners = [o for o in specs if o.name != name and (o.name, size, requested, f, t) not in done
                        and (o.name, size, requested, f, t) not in pending]
            with contextlib.ExitStack() as stack:
                wls = {name: wl}
                for o in partners:
                    n_o = o.elements(size)
                    sets_o = stack.enter_context(sets_for(dev, o, n_o, plans[(o.name, size, requested)].count))
                    grid_o, block_o, shared_o = o.launch(n_o, dev)
                    k_o = _bound(kernel_for(dev, o, inline_icache=True) if f == "inline-icache" else
                                 kernel_for(dev, o, timed=(t == "in-kernel")), shared_o)
                    timer_o = InKernelTimer(dev, sets_o.args, chunk) if t == "in-kernel" else None
                    if timer_o is not None:
                        stack.callback(timer_o.free)
                    wls[o.name] = Workload(dev, k_o, grid_o, block_o, sets_o.args, timer=timer_o)
                got = interleaved_launches(wls, {k: flushers.get(f) for k in wls}, rule, chunk=chunk, rng=rng,
                                           warmup_s=warmup_s, flush_end_event=flush_end_event, telemetry=telemetry,
                                           lead=spec.chunk_lead, trail=spec.chunk_trail)
            for o in partners:
                pending[(o.name, size, requested, f, t)] = got.raws[o.name]
            return got.raws[name]

        for kspec in specs:
            for size in size_list:
                where.clear()  # building and loading are not the kernel's fault: a DeviceError there is raised as is
                n = kspec.elements(size)
                footprint = kspec.footprint(n)
                grid, block, shared = kspec.launch(n, dev)
                kernels = {t: _bound(kernel_for(dev, kspec, timed=(t == "in-kernel")), shared) for t in timers}
                plain = kernels.get("events") or _bound(kernel_for(dev, kspec), shared)
                where[:] = [kspec.name, f"size={size}"]
                base = dict(run_id=run_id, device=label, device_name=dev.name, kernel=kspec.name, size_bytes=size,
                            footprint_bytes=footprint)
                if hooks.stop_now():
                    stopped = True
                    break
                if not warmed:  # once per sweep: until the clock is stable (MI300 ramps for >= 400 ms)
                    where[1] = f"size={size} (clock warm-up)"
                    hooks.started(where)
                    with sets_for(dev, kspec, n, 1) as sets:
                        wl = Workload(dev, plain, grid, block, sets.args)
                        spent, what = wait_for_stable_clock(telemetry, lambda: warm_up(wl, None, 0.005),
                                                            min_s=_clock_warmup_s(spec, dev))
                    metadata["warmup.clock"] = what
                    warmed = True
                if verify_results:
                    where[1] = f"size={size} (output check)"
                    hooks.started(where)
                    with sets_for(dev, kspec, n, 1) as sets:
                        err = verify(dev, kspec, sets, plain, grid, block,
                                     config=f"kernel {kspec.name} size={size} (n={n}, grid={grid}, block={block}, shared={shared})")
                        metadata[f"verify.{kspec.name}.{size}"] = f"rel_l2_error={err:.3g}"
                groups = []
                for r in rot_list:
                    p = plans[(kspec.name, size, str(r))]
                    todo = [(f, t) for f in flush_list for t in timers if (kspec.name, size, p.requested, f, t) not in done]
                    if todo:
                        groups.append((p, todo))
                need_ref = [t for t in timers if reference and (kspec.name, size, "1", COLD_REFERENCE, t) not in done]
                schedule = dict(_reference_schedule(len(groups), spec.reference_parts, spec.reference_samples)) if need_ref else {}
                ref_raw: dict[str, list[Any]] = {t: [] for t in need_ref}
                group_rows: list[dict[str, Any]] = []

                def take_reference(k: int) -> None:
                    with sets_for(dev, kspec, n, 1) as sets:
                        for t in need_ref:
                            where[1] = f"size={size} rotating=1 flush={COLD_REFERENCE} timer={t}"
                            hooks.started(where)
                            timer = InKernelTimer(dev, sets.args, chunk) if t == "in-kernel" else None
                            try:
                                wl = Workload(dev, kernels[t], grid, block, sets.args, timer=timer)
                                raw = time_cold_reference(wl, flushers["l2-read"], k, chunk=chunk, warmup_s=warmup_s,  # type: ignore[arg-type]
                                                          telemetry=telemetry, lead=spec.chunk_lead, trail=spec.chunk_trail)
                            finally:
                                if timer is not None:
                                    timer.free()
                            if ref_raw[t]:
                                raw.chunk = raw.chunk + int(ref_raw[t][-1].chunk.max()) + 1
                            ref_raw[t].append(raw)
                            refs[(kspec.name, size, t)] = measured(_concat(ref_raw[t]), f"{kspec.name} {size} cold", [])[0]

                for gi, group in enumerate([*groups, None]):
                    if gi in schedule:
                        if hooks.stop_now():
                            stopped = True
                            break
                        take_reference(schedule[gi])
                    if group is None:
                        break
                    p, todo = group
                    if hooks.stop_now():
                        stopped = True
                        break
                    with sets_for(dev, kspec, n, p.count) as sets:
                        for f, t in todo:
                            if hooks.stop_now():
                                stopped = True
                                break
                            if f == "inline-icache" and t == "in-kernel":
                                continue  # the inline flush has no timed variant (its wrapper has no timer slot)
                            where[1] = f"size={size} rotating={p.requested} flush={f}" + ("" if t == "events" else f" timer={t}")
                            hooks.started(where)
                            k = _bound(kernel_for(dev, kspec, inline_icache=True), shared) if f == "inline-icache" else kernels[t]
                            timer = InKernelTimer(dev, sets.args, chunk) if t == "in-kernel" else None
                            try:
                                wl = Workload(dev, k, grid, block, sets.args, timer=timer)
                                if spec.interleave and len(specs) > 1:
                                    raw = interleaved((kspec.name, size, p.requested, f, t), wl)
                                else:
                                    raw = time_launches(wl, flushers.get(f), rule, chunk=chunk, warmup_s=warmup_s,
                                                        flush_end_event=flush_end_event, telemetry=telemetry,
                                                        lead=spec.chunk_lead, trail=spec.chunk_trail)
                            finally:
                                if timer is not None:
                                    timer.free()
                            notes = ([p.note] if p.note else []) + list(raw.notes)
                            if f == "inline-icache":
                                notes.append("by design time_s includes the s_icache_inv + 16 s_nop 0 at the kernel entry")
                            m, throttled = measured(raw, f"{kspec.name} {size} r={p.requested} {f} {t}", notes)
                            rows, row = _frames(base, p.count, p.requested, f, t, raw, m, throttled,
                                                refs.get((kspec.name, size, t)), dev, footprint, p.cap_bytes)
                            row.update(floor_columns(floor_of(f) if t == "events" else None, row["median_s"], t))
                            group_rows.append(row)
                            emit(rows, row)
                    if stopped:
                        break
                for t in need_ref:  # the reference row, then every bias against the whole reference
                    if not ref_raw[t]:
                        continue
                    raw = _concat(ref_raw[t])
                    m, throttled = measured(raw, f"{kspec.name} {size} cold", list(raw.notes))
                    refs[(kspec.name, size, t)] = m
                    rows, row = _frames(base, 1, "1", COLD_REFERENCE, t, raw, m, throttled, m, dev, footprint,
                                        int(free * mem_fraction))
                    row.update(floor_columns(floor_of("l2-read") if t == "events" else None, row["median_s"], t))
                    row["warning"] = "; ".join(filter(None, [row["warning"], f"taken in {len(ref_raw[t])} part(s) through the sweep"]))
                    for r in group_rows:
                        if r["timer"] == t:
                            _set_bias(r, _measurement_of(samples_parts, r), m)
                    emit(rows, row)
                if stopped:
                    break
            if stopped:
                break
        bar.close()
    except DeviceError as exc:
        if not where:
            raise
        faulted = True
        partial = SweepResult(samples_frame(samples_parts), summary_frame(summary_rows), metadata, paths[0] if paths else None)
        raise KernelFault(where[0], where[1], fault_status(str(exc)), partial) from exc
    finally:
        for fl in flushers.values():
            if fl is not None:
                try:
                    fl.free()
                except DeviceError:
                    if not faulted:  # after a fault the context is gone: freeing fails too
                        raise
        telemetry.close()
    samples_df = samples_frame(samples_parts)
    summary_df = summary_frame(summary_rows)
    if paths is not None:
        write_results(paths, samples_parts, summary_rows, metadata)
    skipped = sorted(d for d in done if d[3] != COLD_REFERENCE)  # resumed: finished before this run
    return SweepResult(samples_df, summary_df, metadata, paths[0] if paths else None, stopped, skipped)


def _concat(raws: list[Any]) -> Any:
    """Reference parts as one RawTimes (chunk ids already made distinct by the caller)."""
    from .timing import RawTimes

    if len(raws) == 1:
        return raws[0]
    cat = lambda name: np.concatenate([getattr(r, name) for r in raws])  # noqa: E731
    return RawTimes(time_s=cat("time_s"), flush_s=cat("flush_s"), gap_s=cat("gap_s"), buffer_set=cat("buffer_set"),
                    chunk=cat("chunk"), position=cat("position"), lead=cat("lead"), clock_mhz=cat("clock_mhz"),
                    temp_c=cat("temp_c"), power_w=cat("power_w"), notes=[x for r in raws for x in r.notes],
                    hold_timeouts=sum(r.hold_timeouts for r in raws), chunks=sum(r.chunks for r in raws),
                    stop_reason=raws[-1].stop_reason, timer=raws[-1].timer)


def _measurement_of(samples_parts: list[pd.DataFrame], row: dict[str, Any]) -> Measurement:
    """The kept samples of a summary row's configuration, from the sample frames."""
    for part in reversed(samples_parts):
        if len(part) and part["kernel"].iloc[0] == row["kernel"] and int(part["size_bytes"].iloc[0]) == int(row["size_bytes"]) \
                and str(part["rotating_requested"].iloc[0]) == str(row["rotating_requested"]) and part["flush"].iloc[0] == row["flush"] \
                and part["timer"].iloc[0] == row["timer"]:
            kept = part[~part["dropped"].to_numpy(bool)]
            return Measurement(kept["time_s"].to_numpy(), chunks=kept["chunk"].to_numpy())
    raise BenchmarkError(f"no samples for {row['kernel']} {row['size_bytes']} {row['flush']}")  # pragma: no cover


def fault_status(message: str) -> str:
    """The runtime status in a device error (``CUDA_ERROR_ILLEGAL_ADDRESS``), else the message."""
    m = re.search(r"\b(CUDA_ERROR_\w+|hipError\w+)", message)
    return m.group(1) if m else message


def _bound(kernel: Any, shared: int) -> Any:
    """The loaded function with its dynamic shared memory (``Device.launch`` unwraps it)."""
    return BoundKernel(kernel, shared) if shared else kernel


def _frames(base: dict[str, Any], count: int, requested: str, flush: str, timer: str, raw: Any, m: Measurement,
            throttled: np.ndarray, ref: Measurement | None, dev: Device, footprint: int,
            cap: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    k = len(raw.time_s)
    dropped = throttled if m.n < k else np.zeros(k, bool)
    rows = pd.DataFrame({
        **{c: [base[c]] * k for c in ("run_id", "device", "device_name", "kernel")},
        "size_bytes": np.full(k, base["size_bytes"], dtype=np.int64),
        "footprint_bytes": np.full(k, footprint, dtype=np.int64),
        "rotating": np.full(k, count, dtype=np.int64),
        "rotating_requested": [requested] * k,
        "flush": [flush] * k,
        "timer": [timer] * k,
        "iteration": np.arange(k, dtype=np.int64),
        "pass_index": np.zeros(k, dtype=np.int64),
        "chunk": raw.chunk.astype(np.int64),
        "position": raw.position.astype(np.int64),
        "lead": raw.lead.astype(np.int64),
        "buffer_set": raw.buffer_set.astype(np.int64),
        "time_s": raw.time_s,
        "flush_s": raw.flush_s,
        "gap_s": raw.gap_s,
        "clock_mhz": raw.clock_mhz,
        "temp_c": raw.temp_c,
        "power_w": raw.power_w,
        "throttled": throttled.astype(bool),
        "dropped": dropped.astype(bool),
    }, columns=list(SAMPLE_COLUMNS))
    s = m.summary()
    row: dict[str, Any] = {**base, "rotating": count, "rotating_requested": requested, "flush": flush, "timer": timer}
    row["passes"] = 1
    row.update({key: s[key] for key in ("n", "median_s", "mean_s", "min_s", "p5_s", "p95_s", "iqr_rel", "cv", "ci_low_s",
                                        "ci_high_s", "n_outliers", "bimodality")})
    _set_bias(row, m, ref)
    row["bandwidth_gbs"] = footprint / m.median / 1e9 if m.median > 0 else math.nan
    row["peak_bandwidth_gbs"] = float(dev.peak_bandwidth_gbs)
    row["rotating_cap_bytes"] = int(cap)
    row["stop_reason"] = raw.stop_reason
    row["timed_out"] = bool(is_timeout(raw.stop_reason))
    row["n_throttled"] = int(throttled.sum())
    row["clock_mhz"] = float(np.nanmedian(raw.clock_mhz)) if np.isfinite(raw.clock_mhz).any() else math.nan
    row["warning"] = s["warning"]
    return rows, row


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


__all__ = ["SweepHooks", "SweepResult", "run", "verify"]
