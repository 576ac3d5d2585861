"""The counter pass, the parent's side: counting units as a plan of the one orchestrator
(``CountingPlan``, ``UnitPlan.kind`` = ``COUNTING``), run by the same executors as the timed units
after the last of them, and the counted launches turned into one ``CounterSummary`` per
configuration; ``collect`` reads a kept pass folder back without the GPU or the profiler.

The orchestrator (``bench.orchestrator``) asks ``counter_backend(spec, device)`` before any timed
unit runs (so the summary's columns are known, and a sweep that cannot count says so in one line
and runs on unchanged), then plans the configurations no counter has counted: one counting unit
per (kernel, size) group and counter group of the backend (a backend that counts in the worker
itself, CUPTI: one unit for the whole pass), each a ``bench.sweeprun.SweepRun`` of its group with
``UnitJob.counting`` set (``counters.phase``), in a worker started under the profiler's command
(``Counting.prefix``). Each reports, per configuration, its manifest entry (``CountChannel.counted``)
and, where the worker counted in its own process, the configuration's ``CounterSummary``. A backend
that writes a report (ncu, rocprofv3) has it parsed at the unit's finish step
(``CountingPlan.finished``, called by the executor's loop once the unit's worker has ended): the
profiler's launches are attributed to configurations by the entries' order and counts
(``attribute``: each reported kernel name checked against the configuration's). A backend whose
counters need several hardware passes runs the group's unit once per counter group; the groups
are joined launch by launch after the last.

The manifests are only the evidence: the plan hands them (``CounterEvidence``: the units' entries,
the backend's description, beside the profiler's raw output in a private temporary folder) to the
sweep's ``Record``, which writes them once below ``FILE.counters/``, as ``collect`` reads them.

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
from ...schema import Configuration, Timer, UntimedKey
from .backends import MANIFEST, CounterError, Launch, reports
from .manifest import manifest_json, read_description, read_manifest
from .registry import backend_for, from_description
from .phase import DEFAULT_COUNT, Counting
from .record import CounterRecord, make_record, records_frame
from .summary import CounterSummary

#: what the backend was and how it was run, written once per pass folder
BACKEND_FILE = "backend.json"


class CountersSkipped(UserWarning):
    """A sweep asked for counters and has none: the one line says why (the host, no profiler, a
    cluster worker without one, a failed pass); the timed results are the same as without counters."""


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
        return {
            "backend": self.backend,
            "wall_s": self.wall_s,
            "workdir": str(self.workdir or ""),
            "notes": self.notes,
            "commands": self.commands,
            "records": [r.as_row() for r in self.records],
            "launches": self.launches,
        }


def counted_configurations(spec: Any, configurations: Iterable[Configuration] | None = None) -> list[Configuration]:
    """The configurations a pass counts, in order: ``configurations`` (default: the spec's), the
    cold reference left out, one per (kernel, size, rotating, flush) (the timers launch the same
    data; the events variant is the one counted)."""
    seen: dict[UntimedKey, Configuration] = {}
    for c in configurations if configurations is not None else spec.configurations():
        c = Configuration(*c)
        if not c.is_reference:
            seen.setdefault(c.untimed_key, Configuration(c.kernel, int(c.size), str(c.rotating), c.flush, Timer.EVENTS))
    if not seen:
        raise ConfigError("no configuration to count (the cold reference is not counted)")
    return list(seen.values())


def counter_backend(spec: Any, device: Any, given: Any = None) -> tuple[Any, str]:
    """(the backend that counts ``spec`` on ``device``, "") or (None, one line saying why there are
    no counters): ``given`` (a backend of the caller's own) if it is available there; else the one
    ``spec.counters`` names (True: the device's, ``registry.backend_for``: CUPTI on NVIDIA where
    its library is found, else ncu; rocprofv3 on AMD); the host, a missing profiler and
    Python-callable kernels have none. An executor asks it where its units run
    (``LocalExecutor.counter_backend``; a cluster's workers: ``bench.dask_worker``)."""
    if given is not None:
        why = given.available(device) or ""
        return (None if why else given), why
    be = backend_for(device, None if spec.counters is True else str(spec.counters))
    why = be.available(device)
    if why:
        return None, why
    callables = [k.name for k in spec.specs() if k.call is not None]
    if callables:
        return None, (
            f"kernel(s) {', '.join(callables)} are Python callables: a profiler counts launches of a process it "
            f"starts, and a callable cannot leave this one"
        )
    return be, ""


class CountChannel:
    """A counting unit's channel (``bench.sweeprun.Channel``): its entries, and the summaries of a
    worker that counted in its own process; ``should_stop`` is the sweep's; a counting unit takes no
    timed sample, so ``add`` is an error; its metadata is its own."""

    def __init__(self, stop_now: Any = None) -> None:
        self.entries: list[dict[str, Any]] = []
        self.summaries: dict[UntimedKey, CounterSummary] = {}
        self.where: list[str] = []
        self._stop = stop_now

    def started(self, where: list[str]) -> None:
        self.where = list(where)

    def stop_now(self) -> bool:
        return bool(self._stop()) if self._stop is not None else False

    def meta(self, report: Any) -> None:
        pass  # the timed units' flush buffers, warm-up and floors are the run's; a counting unit's are not recorded

    def add(self, result: Any) -> None:
        raise CounterError("a counting unit sent a timed sample: counting units take none")

    def update(self, rebiased: list[Any]) -> None:
        pass

    def counted(self, entry: dict[str, Any], summary: CounterSummary | None = None) -> None:
        self.entries.append(dict(entry))
        if summary is not None:
            self.summaries[_key(entry)] = summary


def _key(entry: dict[str, Any]) -> UntimedKey:
    return UntimedKey(
        str(entry["kernel"]), int(entry["size_bytes"]), str(entry["rotating_requested"]), str(entry["flush"])
    )


def _folder_name(kernel: str, size: int) -> str:
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', kernel)[:60]}-{int(size)}"


@dataclass
class CounterEvidence:
    """What a counter pass keeps beside its result: the profilers' raw output in a private temporary
    folder (``root``, one ``<kernel>-<size>/group-N`` per counting unit), and the files the pass
    writes beside it (``files``: each unit's ``manifest.json``, each group's ``backend.json``, by
    their paths below the folder), written once by the sweep's ``Record`` (``keep``)."""

    root: Path
    files: dict[str, str] = field(default_factory=dict)

    def keep(self, where: Path) -> Path | None:
        """The evidence below ``where`` (this user's own folders, nothing followed), the temporary
        folder removed; None when that failed (the temporary folder then stays: ``where`` names it)."""
        kept = _keep(self.root, where, self.files)
        if kept is not None:
            self.discard()
        return kept

    def discard(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class CountingPlan:
    """The counter pass as a plan of the orchestrator (module docstring): its counting units in
    order (``next``), each one's finish step (``finished``: entries kept, a report parsed after the
    group's last counter group), the summaries per configuration and the evidence for ``Record``."""

    @property
    def kind(self) -> str:
        from ..units import COUNTING  # imported when used: the units bring NumPy, which a CLI's start-up does without

        return COUNTING

    def __init__(
        self, spec: Any, device: Any, backend: Any, configurations: list[Configuration], *, count: int = DEFAULT_COUNT
    ) -> None:
        self.spec, self.device, self.backend, self.count = spec, device, backend, int(count)
        self.metric_groups = [tuple(g) for g in backend.groups(device)]
        self.groups: dict[tuple[str, int], list[Configuration]] = {}
        for c in counted_configurations(spec, configurations):
            # one counting unit per (kernel, size) under a profiler's command; one for the whole pass
            # where the worker counts itself (no tool to start per group: ``counters.cupti``)
            key = ("all", 0) if backend.counts_in_worker else (c.kernel, int(c.size))
            self.groups.setdefault(key, []).append(c)
        self.configs = [c for confs in self.groups.values() for c in confs]
        self.order = [(gi, mi) for gi in range(len(self.groups)) for mi in range(len(self.metric_groups))]
        self.evidence = CounterEvidence(Path(tempfile.mkdtemp(prefix="hipexplore-counters-")))
        self.label = str(backend.describe().get("label", backend.name))
        self.summaries: dict[UntimedKey, CounterSummary] = {}
        self.manifests: dict[int, list[dict[str, Any]]] = {}
        self.commands: dict[int, list[list[str]]] = {}
        self.next_job, self.stopped = 0, False
        self.t0 = time.perf_counter()
        self.wall_s = math.nan

    def _folder(self, group: int) -> Path:
        return self.evidence.root / _folder_name(*list(self.groups)[group])

    def next(self) -> Any:
        """The next counting unit (a ``bench.units.UnitJob``): a (kernel, size) group's configurations
        under one counter group."""
        from ..units import UnitJob

        if self.stopped or self.next_job >= len(self.order):
            return None
        gi, mi = self.order[self.next_job]
        self.next_job += 1
        confs = list(self.groups.values())[gi]
        names = list(dict.fromkeys(c.kernel for c in confs))
        kspecs = tuple(k for k in self.spec.specs() if k.name in names)
        sizes = tuple(s for s in self.spec.sizes if int(s) in {int(c.size) for c in confs})
        group_spec = dataclasses.replace(self.spec, kernels=kspecs, sizes=sizes, units=1)
        wanted = {c.untimed_key for c in confs}
        done = frozenset(c for c in group_spec.configurations() if c.untimed_key not in wanted)
        out = self._folder(gi) / f"group-{mi}"
        out.mkdir(parents=True, exist_ok=True)
        group = self.metric_groups[mi]
        prefix = tuple(self.backend.prefix(group, out, [k.entry for k in kspecs]))
        self.commands.setdefault(gi, []).append(list(prefix))
        counting = Counting(
            self.backend.marker,
            self.count,
            metrics=group,
            device_index=int(self.device.index),
            label=self.label,
            prefix=prefix,
            report="" if self.backend.counts_in_worker else str(out),
        )
        return UnitJob(group_spec, 0, done, group=gi, counting=counting)

    def finished(self, job: Any, channel: CountChannel, stopped: bool, seconds: float) -> None:
        """The unit's finish step: its manifest kept as evidence; its worker's summaries taken, or
        after the group's last counter group the backend's report parsed into summaries."""
        gi = job.group
        folder = self._folder(gi)
        mi = len(self.manifests.setdefault(gi, []))
        manifest = {
            "device": self.device.name,
            "marker": self.backend.marker,
            "stopped": bool(stopped),
            "entries": channel.entries,
        }
        self.manifests[gi].append(manifest)
        self.evidence.files[f"{folder.name}/group-{mi}/{MANIFEST}"] = manifest_json(manifest)
        if stopped:
            self.stopped = True
            raise CounterError("the sweep was stopped during its counter pass")
        self.wall_s = time.perf_counter() - self.t0
        if mi + 1 < len(self.metric_groups):
            return
        self.evidence.files[f"{folder.name}/{BACKEND_FILE}"] = json.dumps(
            {
                **self.backend.describe(),
                "groups": [list(g) for g in self.metric_groups],
                "count": self.count,
                "commands": self.commands.get(gi, []),
            },
            indent=1,
        )
        if self.backend.counts_in_worker:  # summarised in the worker (``counters.phase``): nothing to parse
            missing = [e for e in channel.entries if _key(e) not in channel.summaries]
            if missing:
                raise CounterError(
                    f"the counting unit's worker sent no summary for {len(missing)} of "
                    f"{len(channel.entries)} configuration(s) it counted"
                )
            self.summaries.update(channel.summaries)
            return
        groups = [(folder / f"group-{i}", m) for i, m in enumerate(self.manifests[gi])]
        records, _rows, _notes = records_of(self.backend, self.label, _same_sequence(groups, folder))
        self.summaries.update({r.key: r.summary() for r in records})


def attribute(
    launches: list[Launch], entries: list[dict[str, Any]], captures_warmup: bool, who: str
) -> tuple[list[list[Launch]], str]:
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
        raise CounterError(
            f"{who} reported {len(launches)} launch(es) of the counted kernels; the sequence made {expected} "
            f"({counted} counted{f', {whole - counted} before the range' if captures_warmup else ''}) over "
            f"{len(entries)} configuration(s)"
        )
    out, i = [], 0
    for e in entries:
        take = int(e["count"]) + (int(e["warmup"]) if captures_warmup else 0)
        got = launches[i : i + take]
        i += take
        wrong = sorted({x.kernel for x in got if not reports(x.kernel, e["entry"])})
        if wrong:
            raise CounterError(
                f"{who}'s launches out of order: configuration {e['kernel']} size={e['size_bytes']} "
                f"rotating={e['rotating_requested']} flush={e['flush']} expected kernel {e['entry']!r}, "
                f"got {wrong}"
            )
        out.append(got[take - int(e["count"]) :])
    return out, note


def _manifests(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    groups = sorted(root.glob("group-*"), key=lambda p: int(p.name.split("-", 1)[1]))
    if not groups:
        raise CounterError(f"{root} holds no group-N folder of a counter pass")
    return _same_sequence([(g, read_manifest(g / MANIFEST)) for g in groups], root)


def _same_sequence(groups: list[tuple[Path, dict[str, Any]]], root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """``groups`` (each counter group's folder and manifest), refused unless every group replayed
    the same sequence (their launches are joined launch by launch)."""
    shape = [
        [(e["kernel"], e["size_bytes"], e["rotating"], e["flush"], e["count"]) for e in m["entries"]] for _, m in groups
    ]
    if any(s != shape[0] for s in shape):
        raise CounterError(
            f"the counter groups under {root} replayed different sequences; their launches cannot be joined"
        )
    return groups


def _positions(e: dict[str, Any]) -> list[tuple[int, int]]:
    """(buffer set, chunk position) of each counted launch of an entry: the manifest's ``launches``
    (a counting unit's: position -1 for a chunk's untimed lead and trail), or for a pass recorded
    by the earlier stand-alone replay (no ``launches``) round robin after its warm-up, every one timed."""
    if "launches" in e:
        return [(int(s), int(p)) for s, p in e["launches"]]
    return [((int(e["warmup"]) + li) % int(e["rotating"]), li) for li in range(int(e["count"]))]


def records_of(
    be: Any, label: str, groups: list[tuple[Path, dict[str, Any]]]
) -> tuple[list[CounterRecord], list[dict[str, Any]], list[str]]:
    """(a record per configuration, a row per counted launch, the notes) of one (kernel, size)
    group's counting units: ``groups`` each counter group's folder (the backend's report) and
    manifest, joined launch by launch. A configuration's record averages its timed launches (a
    chunk's untimed lead and trail are in ``launches`` only)."""
    entries = groups[0][1]["entries"]
    notes: list[str] = []
    joined: list[list[dict[str, float]]] = [[{} for _ in range(int(e["count"]))] for e in entries]
    for folder, manifest in groups:
        launches, note = be.parse(folder, manifest["entries"])
        owned, how = attribute(launches, manifest["entries"], be.captures_warmup, be.name)
        status = [str(e.get("marker_status", "")) for e in manifest["entries"]] + [
            str(manifest.get("marker_status", ""))
        ]
        notes = list(dict.fromkeys([*notes, *(n for n in (note, how, *status) if n)]))
        for ci, conf_launches in enumerate(owned):
            for li, launch in enumerate(conf_launches):
                joined[ci][li].update(launch.values)
    records, rows = [], []
    for ci, e in enumerate(entries):
        per = [be.per_launch(v) for v in joined[ci]]
        where = _positions(e)
        timed = [p for p, (_s, pos) in zip(per, where) if pos >= 0]
        records.append(
            make_record(
                Configuration.of(e),
                rotating=e["rotating"],
                backend=label,
                launches=timed,
                warmup=e["warmup"],
                inputs=e["input_bytes"],
                note="; ".join(filter(None, [*notes, e.get("plan_note", "")])),
            )
        )
        rows += [
            {
                "configuration": ci,
                "kernel": e["kernel"],
                "size_bytes": e["size_bytes"],
                "rotating_requested": e["rotating_requested"],
                "flush": e["flush"],
                "launch": li,
                "buffer_set": s,
                "position": pos,
                **p,
            }
            for li, (p, (s, pos)) in enumerate(zip(per, where))
        ]
    return records, rows, notes


def collect(root: str | Path, backend: Any = None) -> CounterPass:
    """The ``CounterPass`` of a kept pass folder: ``backend.json``, and per group its manifest and
    the backend's raw output (``backend``: None reads it from backend.json), read as ``records_of``."""
    root = Path(root)
    desc = read_description(root / BACKEND_FILE)
    be = backend if backend is not None else from_description(desc)
    label = desc.get("label", be.name)
    records, rows, notes = records_of(be, label, _manifests(root))
    return CounterPass(records, rows, label, desc.get("commands", []), math.nan, root, notes)


def _keep(root: Path, keep: Path, files: dict[str, str]) -> Path | None:
    """The pass folder's raw files and ``files`` (path below ``keep`` -> text) written below
    ``keep`` (this user's own folders, nothing followed); None when that failed."""
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
            raw = {
                p.relative_to(root).as_posix(): p.read_bytes()
                for p in root.rglob("*")
                if p.is_file() and not p.is_symlink()
            }
            every = {**raw, **{rel: text.encode() for rel, text in files.items()}}
            for rel in sorted(every):
                write_below(fd, rel, every[rel], what="counter output", shown_dir=str(keep), durable=False)
        finally:
            os.close(fd)
        return keep
    except (OSError, ConfigError):
        return None


__all__ = [
    "BACKEND_FILE",
    "CountChannel",
    "CounterEvidence",
    "CounterPass",
    "CountersSkipped",
    "CountingPlan",
    "MANIFEST",
    "attribute",
    "collect",
    "counted_configurations",
    "counter_backend",
    "records_of",
]
