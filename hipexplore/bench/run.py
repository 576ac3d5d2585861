"""``run(spec, device)``: the parent of a sweep — resume, where its units run, its files.

Every configuration produces raw sample rows and one summary row (columns: ``hipexplore.schema``,
documented in docs/ARCHITECTURE.md "Benchmark frames"). Per (kernel, size) a cold reference is
taken (single launches, each after an l2-read flush) and every summary reports its bias against it.

The parent never measures: it reads what the out file already holds (``bench.io``: one reader, one
resume check), decides where the measuring units run (``run_location``: this process or a worker
process per unit), hands each unit the configurations still to do and records what comes back
(``bench.recorder``: the files, rewritten as one unit after each configuration, the hooks, the
progress bar). A unit is a ``bench.sweeprun.SweepRun``; a sweep in passes is several (``bench.passes``).

With ``out=FILE.parquet`` an interrupted sweep keeps what finished, and running it again with the
same ``out`` resumes (done configurations are skipped) when they were measured the same way (the
recorded spec's ``measurement()``, the device, each kernel's code). ``hooks.on_samples(frame)`` then
``hooks.on_result(summary_row)`` run after each configuration and ``hooks.should_stop()`` before
each one, so a widget can show live results and stop the sweep.
"""
from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any, Sequence

from ..devices.base import Device
from ..errors import ConfigError, KernelFault
from ..schema import Configuration
from .flush import check_flush_mode
from .inputs import shared_folder
from .io import Previous, check_resume, kernel_identity, output_paths, previous_results
from .recorder import Recorder
from .result import SweepHooks, SweepResult
from .spec import SweepSpec
from .stats import Measurement
from .sweeprun import SweepRun, fault_status, reference_schedule, verify

#: where a unit of a sweep runs (``run_location``)
IN_PROCESS, WORKER = "in-process", "worker"
#: kept for callers of the former private name
_reference_schedule = reference_schedule


def run_location(spec: SweepSpec, device: Any, worker: bool | None) -> str:
    """Where the measuring units of ``spec`` run: ``WORKER`` (a fresh process per unit) or
    ``IN_PROCESS``. The one place this is decided (a cluster run is ``bench.cluster``'s).

    Python callables cannot leave this process. A sweep in passes on a GPU runs every pass in a
    process of its own, whatever ``worker`` says: the event floor is fixed per process (BENCHMARKS.md
    "Run-to-run drift"), and the passes are orchestrated from here, since from a worker one more
    idle CUDA context sat beside every pass and read L2-resident triads 1.6-4% slower on the H200.
    Otherwise ``worker`` decides; None: ``HIPEXPLORE_SWEEP_WORKER``, else a worker for GPU devices."""
    from .worker import use_worker

    has_callable = any(k.call is not None for k in spec.specs())
    if has_callable and worker is None:
        return IN_PROCESS
    if worker is None and getattr(device, "kind", "host") == "host" and any(k.code_object for k in spec.specs()):
        # a precompiled host library: no source to check --args against (kernels.build.check_host_signature),
        # so a spec shorter than the function must fault a worker, not this process
        return WORKER
    if spec.units != 1 and getattr(device, "kind", "host") != "host" and not has_callable:
        return WORKER
    return WORKER if use_worker(device, worker) else IN_PROCESS


def run(spec: SweepSpec, device: Device, *, out: str | os.PathLike | None = None, resume: bool = True,
        hooks: SweepHooks | None = None, progress: bool = True, run_id: str | None = None,
        command: str | Sequence[str] | None = None, worker: bool | None = False) -> SweepResult:
    """Measure every configuration of ``spec`` on ``device``; see the module docstring
    (``worker``: as ``run_location`` takes it; default False, this process)."""
    if not isinstance(spec, SweepSpec):
        raise ConfigError(f"run() takes a SweepSpec; got {type(spec).__name__}")
    for f in spec.flush:
        check_flush_mode(device, f)
    for kspec in spec.specs():
        kspec.source_for(device.compiler)  # a kernel without a source for this device fails now, not mid-sweep
    paths = output_paths(out) if out is not None else None
    previous = previous_results(paths, resume)
    if spec.units != 1:  # rows of an interrupted sweep in units with fewer units than planned: measured again
        from . import units as us

        previous = us.drop_partial(previous, us.planned(spec, device)[0])
    metadata = _metadata(spec, device, command)
    if paths is not None and (previous.metadata is not None or len(previous.summary)):
        check_resume(str(paths[0]), previous, {**spec.measurement(), "device.llc_bytes": str(device.llc_bytes),
                                               **_identities(metadata)}, {device.name})
    metadata["run_id"] = run_id = run_id or previous.run_id or uuid.uuid4().hex[:12]
    configurations = spec.configurations()
    rec = Recorder(metadata, previous=previous, paths=paths, hooks=hooks, total=len(configurations), progress=progress,
                   write=spec.units == 1)
    where = run_location(spec, device, worker)
    try:
        if spec.units != 1:
            stopped = _units(spec, device, rec, previous, where, run_id)
        else:
            stopped = measure_unit(spec, device, rec, where=where, run_id=run_id, done=previous.done,
                                   refs=_references(previous))
    except KernelFault as exc:
        exc.result = rec.result()
        raise
    finally:
        rec.close()
    if not stopped or spec.units == 1:  # a sweep in units stopped part-way: _units wrote its finished units
        rec.write(final=True)
    return rec.result(stopped, sorted(c for c in previous.done if not c.is_reference))


def measure_unit(spec: SweepSpec, device: Device, channel: Any, *, where: str, run_id: str,
                 done: set[Configuration] | frozenset[Configuration] = frozenset(),
                 refs: dict[tuple[str, int, str], Measurement] | None = None, pad_bytes: int = 0, unit: int = 0,
                 started: Any = None, inputs_dir: str | None = None) -> bool:
    """One unit (``SweepRun``) of ``spec`` at ``where``, reporting to ``channel``; True if stopped
    (``unit``: its index, which seeds its draws; ``started``: a worker started ahead for it;
    ``inputs_dir``: the sweep's shared input folder, ``bench.inputs``)."""
    if where == WORKER:
        from .worker import unit_in_worker

        return unit_in_worker(spec, device, channel, run_id=run_id, done=set(done), refs=refs or {}, pad_bytes=pad_bytes,
                              unit=unit, started=started, inputs_dir=inputs_dir)
    return SweepRun(spec, device, channel, run_id=run_id, done=done, refs=refs, unit=unit).measure()


def _units(spec: SweepSpec, dev: Device, rec: Recorder, previous: Previous, where: str, run_id: str) -> bool:
    """The units of ``spec`` (``bench.units``: planned, then adaptive extras) over the
    configurations not done yet, each with its share of the samples and its own placement, merged
    (``bench.passes.merge``); the merged rows join ``rec``. Workers are started one unit ahead."""
    from . import passes as ps
    from . import units as us

    pads: list[int] = []
    ahead: list[Any] = []

    def run_unit(one: SweepSpec, k: int, done: set) -> SweepResult:
        unit = Recorder(rec.metadata, hooks=rec.hooks, write=False)
        try:
            return measured(one, k, done, unit)
        except KernelFault:  # what the units measured before the fault is kept, recorded and written
            done_units.append(unit.result(True))
            _record_merged(rec, base_samples, base_rows, done_units, dev, final=True)
            raise

    def measured(one: SweepSpec, k: int, done: set, unit: Recorder) -> SweepResult:
        pad = ps.pad_bytes(k, seed=spec.interleave_seed)
        pads.append(pad)
        if where == WORKER:
            from .worker import start_unit_worker

            started = ahead.pop() if ahead else start_unit_worker()
            ahead.append(start_unit_worker())  # the next unit's interpreter starts while this one measures
            stopped = measure_unit(one, dev, unit, where=where, run_id=run_id, done=done, pad_bytes=pad, unit=k,
                                   started=started, inputs_dir=folder[0])
        else:
            unit_dev = dev.fresh() if k and hasattr(dev, "fresh") else dev  # host: the library loaded anew
            pad_buf = unit_dev.alloc(pad) if pad else None
            try:
                stopped = measure_unit(one, unit_dev, unit, where=where, run_id=run_id, done=done, unit=k)
            finally:
                if pad_buf is not None:
                    unit_dev.free(pad_buf)
                if unit_dev is not dev:
                    unit_dev.close()
        done_units.append(unit.result(stopped))
        if not stopped and len(done_units) >= lo:
            # written once every planned unit is in, then after each extra one: a kill loses only the
            # unit under way (before the planned units are in, resume would measure every row again
            # anyway: units.drop_partial), and each merge re-bootstraps every row
            _record_merged(rec, base_samples, base_rows, done_units, dev, final=True)
            merged_at[0] = len(done_units)
        return done_units[-1]

    lo = us.planned(spec, dev)[0]
    done_units: list[SweepResult] = []
    merged_at = [0]
    base_samples, base_rows = list(rec.samples), list(rec.rows)
    folder: list[str | None] = [None]
    with contextlib.ExitStack() as stack:
        if where == WORKER:  # the units' processes draw each input layout once between them (bench.inputs)
            folder[0] = stack.enter_context(shared_folder())
        try:
            results = us.measure(spec, dev, run_unit, set(previous.done))
        finally:
            for started in ahead:
                started.discard()
    stopped = any(r.stopped for r in results)
    rec.meta({"sweep.unit_pad_bytes": ",".join(map(str, pads)),
              "sweep.units_done": str(len(results) - (1 if stopped else 0)),
              "sweep.units_planned": str(lo),
              "sweep.unit_location": where})
    finished = [r for r in results if not r.stopped]
    if stopped:  # what the result shows: the units finished (else the one stopped); only finished ones are written
        _record_merged(rec, base_samples, base_rows, finished or results, dev, final=bool(finished))
    elif merged_at[0] != len(finished):
        _record_merged(rec, base_samples, base_rows, finished, dev)
    return stopped


def _record_merged(rec: Recorder, samples: list, rows: list, results: list[SweepResult], dev: Device,
                   final: bool = False) -> None:
    """``rec`` holds the previous rows plus the units' merge (``bench.passes.merge``); written when ``final``."""
    from . import passes as ps

    merged_s, merged_m = ps.merge([r.samples for r in results], [r.summary for r in results],
                                  peak_bandwidth_gbs=float(dev.peak_bandwidth_gbs))
    rec.samples = [*samples, *([merged_s] if len(merged_s) else [])]
    rec.rows = [*rows, *merged_m.to_dict("records")]
    if final:
        rec.write(final=True)


def _references(previous: Previous) -> dict[tuple[str, int, str], Measurement]:
    """The cold references an earlier run took, for the biases of configurations measured now."""
    return {key: Measurement(g["time_s"].to_numpy(), label=f"{key[0]} {key[1]} cold", chunks=g["chunk"].to_numpy())
            for key, g in previous.references().items()}


def _metadata(spec: SweepSpec, dev: Device, command: str | Sequence[str] | None) -> dict[str, str]:
    """Provenance, the code under test and its identities, the spec, the timing method."""
    from ..provenance import code_provenance, collect

    metadata = collect(dev, command)
    metadata.update(code_provenance(spec.specs(), dev.compiler))
    metadata.update({f"identity.{k.name}": kernel_identity(k, dev) for k in spec.specs()})
    metadata.update({
        **spec.record(),
        "timing.method": ("perf_counter_ns around each synchronous ctypes call (host: no launch queue, no latency to hide)"
                          if dev.kind == "host" else
                          "per-launch event pairs enqueued in chunks behind a blocking kernel (nvbench's method)"),
    })
    return metadata


def _identities(metadata: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in metadata.items() if k.startswith("identity.")}


__all__ = ["IN_PROCESS", "WORKER", "SweepHooks", "SweepResult", "fault_status", "measure_unit", "run", "run_location", "verify"]
