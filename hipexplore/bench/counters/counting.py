"""The counter pass, the parent's side: after a sweep's timed units, one counting unit per (kernel,
size) group in a sweep worker started under the profiler's command, then the profiler's raw output
parsed into one ``CounterRecord`` per configuration (``run_counter_pass``); ``collect`` reads a pass
folder back without the GPU or the profiler.

The orchestrator (``bench.orchestrator``) asks ``counter_backend(spec, device)`` before any timed
unit runs (so the summary's columns are known, and a sweep that cannot count says so in one line
and runs on unchanged), then ``run_counter_pass`` with the configurations no counter has counted.
Each counting unit is a ``bench.sweeprun.SweepRun`` of its group with ``counting`` set
(``counters.phase``): it reports, per configuration, a manifest entry (``CountChannel.counted``),
written here as ``group-N/manifest.json`` beside the profiler's output, and the profiler's launches
are attributed to configurations by the manifest's order and counts (``attribute``: each reported
kernel name checked against the configuration's). A backend whose counters need several hardware
passes (rocprofv3) runs the unit once per counter group; the groups are joined launch by launch.

The pass never runs a timed unit under a profiler and never between timed launches: its units
start after the last timed unit of the sweep has finished.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ...errors import ConfigError
from ...files import write_file
from ...schema import Configuration, Timer, UntimedKey
from .backends import MANIFEST, CounterError, Launch, reports
from .manifest import manifest_json, read_description, read_manifest
from .registry import backend_for, from_description
from .phase import DEFAULT_COUNT, Counting
from .record import CounterRecord, make_record, records_frame

#: what the backend was and how it was run, written once per pass folder
BACKEND_FILE = "backend.json"


class CountersSkipped(UserWarning):
    """A sweep asked for counters and has none: the one line says why (the host, no profiler, a
    cluster, a failed pass); the timed results are the same as without counters."""


@dataclass
class CounterPass:
    """What a counter pass counted: a record per configuration, a row per counted launch, and how."""

    records: list[CounterRecord]
    launches: list[dict[str, Any]]
    backend: str
    commands: list[list[str]] = field(default_factory=list)
    wall_s: float = math.nan
    workdir: Path | None = None
    notes: list[str] = field(default_factory=list)

    def frame(self) -> Any:
        """One row per configuration (``record.RECORD_COLUMNS``)."""
        return records_frame(self.records)

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "wall_s": self.wall_s, "workdir": str(self.workdir or ""), "notes": self.notes,
                "commands": self.commands, "records": [r.as_row() for r in self.records], "launches": self.launches}


def counted_configurations(spec: Any, configurations: Iterable[Configuration] | None = None) -> list[Configuration]:
    """The configurations a pass counts, in order: ``configurations`` (default: the spec's), the
    cold reference left out, one per (kernel, size, rotating, flush) (the timers launch the same
    data; the events variant is the one counted)."""
    seen: dict[UntimedKey, Configuration] = {}
    for c in (configurations if configurations is not None else spec.configurations()):
        c = Configuration(*c)
        if not c.is_reference:
            seen.setdefault(c.untimed_key, Configuration(c.kernel, int(c.size), str(c.rotating), c.flush, Timer.EVENTS))
    if not seen:
        raise ConfigError("no configuration to count (the cold reference is not counted)")
    return list(seen.values())


def counter_backend(spec: Any, device: Any) -> tuple[Any, str]:
    """(the backend that counts ``spec`` on ``device``, "") or (None, one line saying why there are
    no counters): ``spec.counters`` names the backend (True: the device's, ncu on NVIDIA, rocprofv3
    on AMD); the host, a missing profiler and Python-callable kernels have none."""
    be = backend_for(device, None if spec.counters is True else str(spec.counters))
    why = be.available(device)
    if why:
        return None, why
    callables = [k.name for k in spec.specs() if k.call is not None]
    if callables:
        return None, (f"kernel(s) {', '.join(callables)} are Python callables: a profiler counts launches of a process it "
                      f"starts, and a callable cannot leave this one")
    return be, ""


class CountChannel:
    """A counting unit's channel (``bench.sweeprun.Channel``): its entries; ``should_stop`` is the
    sweep's; a counting unit takes no timed sample, so ``add`` is an error; its metadata is its own."""

    def __init__(self, stop_now: Any = None) -> None:
        self.entries: list[dict[str, Any]] = []
        self.where: list[str] = []
        self._stop = stop_now

    def started(self, where: list[str]) -> None:
        self.where = list(where)

    def stop_now(self) -> bool:
        return bool(self._stop()) if self._stop is not None else False

    def meta(self, entries: dict[str, str]) -> None:
        pass  # the timed units' flush buffers, warm-up and floors are the run's; a counting unit's are not recorded

    def add(self, result: Any) -> None:
        raise CounterError("a counting unit sent a timed sample: counting units take none")

    def update(self, rebiased: list[Any]) -> None:
        pass

    def counted(self, entry: dict[str, Any]) -> None:
        self.entries.append(dict(entry))


def _folder_name(kernel: str, size: int) -> str:
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', kernel)[:60]}-{int(size)}"


def count_group(spec: Any, device: Any, backend: Any, configurations: list[Configuration], folder: Path, *,
                run_id: str = "", count: int = DEFAULT_COUNT, stop_now: Any = None) -> list[list[str]]:
    """One counting unit per counter group of ``backend`` for ``configurations`` (of one (kernel,
    size) of ``spec``, or of several for a backend that counts in the worker itself), each in a
    sweep worker started under the backend's prefix (``WorkerExecutor(prefix=...)``), the profiler
    writing into ``folder``/group-N beside the unit's manifest; the prefixes it ran under."""
    from ..executors import UnitRun, WorkerExecutor
    from ..units import UnitJob

    names = list(dict.fromkeys(c.kernel for c in configurations))
    kspecs = tuple(k for k in spec.specs() if k.name in names)
    sizes = tuple(s for s in spec.sizes if int(s) in {int(c.size) for c in configurations})
    group_spec = dataclasses.replace(spec, kernels=kspecs, sizes=sizes, units=1)
    wanted = {c.untimed_key for c in configurations}
    done = frozenset(c for c in group_spec.configurations() if c.untimed_key not in wanted)
    commands = []
    for gi, group in enumerate(backend.groups(device)):
        out = folder / f"group-{gi}"
        out.mkdir(parents=True, exist_ok=True)
        prefix = tuple(backend.prefix(group, out, [k.entry for k in kspecs]))
        commands.append(list(prefix))
        ex = WorkerExecutor(device, prefix=prefix)
        channel = CountChannel(stop_now)
        counting = Counting(backend.marker, int(count), metrics=tuple(group), device_index=int(device.index))
        run = UnitRun(UnitJob(group_spec, 0, done), run_id, counting=counting)
        stopped = ex.run_unit(run, channel)
        write_file(out / MANIFEST, manifest_json({"device": device.name, "marker": backend.marker,
                                                  "stopped": bool(stopped), "entries": channel.entries}),
                   what="counter manifest")
        if stopped:
            raise CounterError("the sweep was stopped during its counter pass")
    return commands


def run_counter_pass(spec: Any, device: Any, backend: Any, configurations: list[Configuration], *, run_id: str = "",
                     count: int = DEFAULT_COUNT, stop_now: Any = None, keep: Path | None = None) -> CounterPass:
    """Count ``configurations`` of ``spec`` (after its timed units): per (kernel, size) ``count_group``
    into a private temporary folder, then ``collect``; the raw outputs are copied below ``keep``
    (the sweep's ``FILE.counters/``) when given, and the temporary folder is removed. A pass that
    failed raises ``CounterError`` naming where its outputs are."""
    t0 = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="hipexplore-counters-"))
    groups: dict[tuple[str, int], list[Configuration]] = {}
    for c in counted_configurations(spec, configurations):
        # one counting unit per (kernel, size) under a profiler's command; one for the whole pass
        # where the worker counts itself (no tool to start per group: ``counters.cupti``)
        key = ("all", 0) if getattr(backend, "one_unit", False) else (c.kernel, int(c.size))
        groups.setdefault(key, []).append(c)
    passes, failed = [], None
    try:
        for (kernel, size), confs in groups.items():
            folder = root / _folder_name(kernel, size)
            commands = count_group(spec, device, backend, confs, folder, run_id=run_id, count=count, stop_now=stop_now)
            write_file(folder / BACKEND_FILE, json.dumps({**backend.describe(), "groups": [list(g) for g in backend.groups(device)],
                                                          "count": int(count), "commands": commands}, indent=1),
                       what="counter backend description")
            passes.append(collect(folder, backend=backend))
    except Exception as exc:  # noqa: BLE001 - the timed results are on disk: a failed pass is one line, never their loss
        failed = exc
    finally:
        kept = _keep(root, keep) if keep is not None else None
        if kept is not None or failed is None:
            shutil.rmtree(root, ignore_errors=True)
    if failed is not None:
        where = kept or root
        raise CounterError(f"the counter pass failed ({type(failed).__name__}: {failed}); its outputs: {where}") from failed
    records = [r for p in passes for r in p.records]
    launches = [row for p in passes for row in p.launches]
    notes = list(dict.fromkeys(n for p in passes for n in p.notes))
    label = passes[0].backend if passes else backend.name
    return CounterPass(records, launches, label, [c for p in passes for c in p.commands], time.perf_counter() - t0, keep, notes)


def _keep(root: Path, keep: Path) -> Path | None:
    """The pass folder's files copied below ``keep`` (this user's own folders, nothing followed);
    None when that failed (the temporary folder then stays, and the error names it)."""
    import os

    from ...files import own_folder, write_below

    try:
        parent = keep.parent if str(keep.parent) else Path(".")
        pfd = os.open(parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fd = own_folder(pfd, keep.name, what="counter outputs", shown=str(keep))
        finally:
            os.close(pfd)
        try:
            for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
                write_below(fd, path.relative_to(root).as_posix(), path.read_bytes(), what="counter output",
                            shown_dir=str(keep), durable=False)
        finally:
            os.close(fd)
        return keep
    except (OSError, ConfigError):
        return None


def attribute(launches: list[Launch], entries: list[dict[str, Any]], captures_warmup: bool, who: str) -> tuple[list[list[Launch]], str]:
    """The counted launches of each manifest entry, in order: entry ``i`` owns its ``count`` launches
    (after its ``warmup`` ones when the backend reports those too). A backend that reported the
    warm-up although asked not to is recognised by the total and attributed the same way (noted)."""
    counted = sum(int(e["count"]) for e in entries)
    whole = counted + sum(int(e["warmup"]) for e in entries)
    note = ""
    if not captures_warmup and len(launches) == whole and whole != counted:
        captures_warmup, note = True, f"{who} reported the launches before the range too: dropped by order"
    expected = whole if captures_warmup else counted
    if len(launches) != expected:
        raise CounterError(f"{who} reported {len(launches)} launch(es) of the counted kernels; the sequence made {expected} "
                           f"({counted} counted{f', {whole - counted} before the range' if captures_warmup else ''}) over "
                           f"{len(entries)} configuration(s)")
    out, i = [], 0
    for e in entries:
        take = int(e["count"]) + (int(e["warmup"]) if captures_warmup else 0)
        got = launches[i:i + take]
        i += take
        wrong = sorted({x.kernel for x in got if not reports(x.kernel, e["entry"])})
        if wrong:
            raise CounterError(f"{who}'s launches out of order: configuration {e['kernel']} size={e['size_bytes']} "
                               f"rotating={e['rotating_requested']} flush={e['flush']} expected kernel {e['entry']!r}, "
                               f"got {wrong}")
        out.append(got[take - int(e["count"]):])
    return out, note


def _manifests(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    groups = sorted(root.glob("group-*"), key=lambda p: int(p.name.split("-", 1)[1]))
    if not groups:
        raise CounterError(f"{root} holds no group-N folder of a counter pass")
    out = [(g, read_manifest(g / MANIFEST)) for g in groups]
    shape = [[(e["kernel"], e["size_bytes"], e["rotating"], e["flush"], e["count"]) for e in m["entries"]] for _, m in out]
    if any(s != shape[0] for s in shape):
        raise CounterError(f"the counter groups under {root} replayed different sequences; their launches cannot be joined")
    return out


def _positions(e: dict[str, Any]) -> list[tuple[int, int]]:
    """(buffer set, chunk position) of each counted launch of an entry: the manifest's ``launches``
    (a counting unit's: position -1 for a chunk's untimed lead and trail), or for a pass recorded
    by the earlier stand-alone replay (no ``launches``) round robin after its warm-up, every one timed."""
    if "launches" in e:
        return [(int(s), int(p)) for s, p in e["launches"]]
    return [((int(e["warmup"]) + li) % int(e["rotating"]), li) for li in range(int(e["count"]))]


def collect(root: str | Path, backend: Any = None) -> CounterPass:
    """The ``CounterPass`` of a pass folder: ``backend.json``, and per group its manifest and the
    backend's raw output (``backend``: None reads it from backend.json). A configuration's record
    averages its timed launches (a chunk's untimed lead and trail are in ``launches`` only)."""
    root = Path(root)
    desc = read_description(root / BACKEND_FILE)
    be = backend if backend is not None else from_description(desc)
    groups = _manifests(root)
    entries = groups[0][1]["entries"]
    notes: list[str] = []
    joined: list[list[dict[str, float]]] = [[{} for _ in range(int(e["count"]))] for e in entries]
    for folder, manifest in groups:
        launches, note = be.parse(folder)
        owned, how = attribute(launches, manifest["entries"], be.captures_warmup, be.name)
        status = [str(e.get("marker_status", "")) for e in manifest["entries"]] + [str(manifest.get("marker_status", ""))]
        notes = list(dict.fromkeys([*notes, *(n for n in (note, how, *status) if n)]))
        for ci, conf_launches in enumerate(owned):
            for li, launch in enumerate(conf_launches):
                joined[ci][li].update(launch.values)
    records, rows = [], []
    for ci, e in enumerate(entries):
        per = [be.per_launch(v) for v in joined[ci]]
        where = _positions(e)
        timed = [p for p, (_s, pos) in zip(per, where) if pos >= 0]
        records.append(make_record(Configuration.of(e), rotating=e["rotating"], backend=desc.get("label", be.name),
                                   launches=timed, warmup=e["warmup"], inputs=e["input_bytes"],
                                   note="; ".join(filter(None, [*notes, e.get("plan_note", "")]))))
        rows += [{"configuration": ci, "kernel": e["kernel"], "size_bytes": e["size_bytes"],
                  "rotating_requested": e["rotating_requested"], "flush": e["flush"], "launch": li, "buffer_set": s,
                  "position": pos, **p} for li, (p, (s, pos)) in enumerate(zip(per, where))]
    return CounterPass(records, rows, desc.get("label", be.name), desc.get("commands", []), math.nan, root, notes)


__all__ = ["BACKEND_FILE", "CountChannel", "CounterPass", "CountersSkipped", "MANIFEST", "attribute", "collect", "count_group",
           "counted_configurations", "counter_backend", "run_counter_pass"]
