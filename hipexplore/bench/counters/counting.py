"""``count_configurations``: the counter pass over a sweep's configurations, and ``collect``, which
turns a pass's folder (the backend's raw output beside each child's manifest) into records.

The pass: for each of the backend's counter groups, one child process (``counters.child``) under
the backend's command prefix replays every configuration's launch sequence (``counters.sequence``)
and writes its manifest; then ``collect`` reads the folder back: the backend parses its raw output
into launches in launch order, the launches are attributed to configurations by the manifest's
order and counts (each launch's kernel name checked against the configuration's), the groups are
joined launch by launch, and each configuration becomes a ``CounterRecord``. ``collect`` needs no
GPU and no profiler, so a recorded folder (data/counters/h200/) parses on any machine.

The pass runs outside any timed window: it is a process of its own, started after (or before) the
timed launches, never between them.
"""
from __future__ import annotations

import json
import math
import os
import pickle
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from ...errors import ConfigError
from ...schema import COLD_REFERENCE, Configuration
from .backends import CounterError, CountersUnavailable, Launch, backend_for, from_description, reports
from .child import MANIFEST, CountJob, child_command
from .record import CounterRecord, make_record, records_frame
from .sequence import DEFAULT_COUNT

#: a child run (start, compile, replay, the profiler's own work) gives up after this long
DEFAULT_TIMEOUT_S = 300.0
#: what the backend was and how it was run, written once per pass folder
BACKEND_FILE = "backend.json"
_TAIL = 2000


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
        """One row per configuration (``record.COUNTER_COLUMNS``)."""
        return records_frame(self.records)

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "wall_s": self.wall_s, "workdir": str(self.workdir or ""), "notes": self.notes,
                "commands": self.commands, "records": [r.as_row() for r in self.records], "launches": self.launches}


def counted_configurations(spec: Any, configurations: Iterable[Configuration] | None = None) -> list[Configuration]:
    """The configurations a pass counts, in order: ``configurations`` (default: the spec's), the
    cold reference left out, one per (kernel, size, rotating, flush) (the timers launch the same
    data; the events variant is the one counted)."""
    seen: dict[tuple[str, int, str, str], Configuration] = {}
    for c in (configurations if configurations is not None else spec.configurations()):
        c = Configuration(*c)
        if c.flush != COLD_REFERENCE:
            seen.setdefault((c.kernel, int(c.size), str(c.rotating), c.flush), Configuration(c.kernel, int(c.size), str(c.rotating),
                                                                                            c.flush, "events"))
    if not seen:
        raise ConfigError("no configuration to count (the cold reference is not counted)")
    return list(seen.values())


@dataclass(frozen=True)
class DeviceRef:
    """What a pass needs to know of its device, without holding it: the caller of a sweep opens no
    GPU context of its own (an idle one beside a measuring unit slowed L2-resident kernels on the
    H200), so a pass may be given ``"cuda:0"`` and the child opens the device."""

    kind: str
    index: int = 0
    target: str = ""
    llc_bytes: int = 0
    llc_source: str = ""
    llc_override: int | None = None


def device_ref(device: Any) -> Any:
    """``device`` itself, or for a text (``"cuda"``, ``"hip:1"``) a ``DeviceRef``; an AMD device
    (its counter groups depend on the architecture) and ``"auto"`` are opened briefly to learn which."""
    if not isinstance(device, str):
        return device
    from ...devices import get_device, parse_device

    kind, index = parse_device(device)
    if kind not in ("hip", "auto"):
        return DeviceRef(kind, index)
    dev = get_device(device)
    try:
        return DeviceRef(dev.kind, dev.index, dev.target)
    finally:
        dev.close()


def count_configurations(spec: Any, device: Any, configurations: Iterable[Configuration] | None = None, *,
                         backend: Any = None, count: int = DEFAULT_COUNT, warmup: int | None = None,
                         workdir: str | Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> CounterPass:
    """Count ``configurations`` of ``spec`` (a ``SweepSpec``; default: all of its configurations)
    on ``device`` (a ``Device``, or its text such as ``"cuda:0"``: see ``DeviceRef``): ``warmup`` launches (None: whole rotations), then ``count`` counted launches per
    configuration, in a child process under ``backend`` (a name or a backend; None: the device's).

    Raises ``CountersUnavailable`` (one line: the host, a missing profiler) before anything runs,
    ``CounterError`` when the pass ran and failed. ``workdir``: where the raw outputs stay (default:
    a new private temporary folder, kept, named in ``CounterPass.workdir``)."""
    device = device_ref(device)
    be = backend if backend is not None and not isinstance(backend, str) else backend_for(device, backend)
    why = be.available(device)
    if why:
        raise CountersUnavailable(why)
    confs = counted_configurations(spec, configurations)
    names = {c.kernel for c in confs}
    kernels = tuple(k for k in spec.specs() if k.name in names)
    root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="hipexplore-counters-"))
    root.mkdir(parents=True, exist_ok=True)
    llc = device.llc_override
    job = CountJob(f"{device.kind}:{device.index}", kernels, tuple(confs), int(count), be.marker, warmup, llc,
                   tuple(sorted(spec.flush_factor.items())), float(spec.mem_fraction))
    t0 = time.perf_counter()
    commands = []
    groups = be.groups(device)
    for gi, group in enumerate(groups):
        out = root / f"group-{gi}"
        out.mkdir(exist_ok=True)
        job_path = out / "job.pkl"
        fd = os.open(job_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(_pickled(job))
        cmd = be.prefix(group, out, sorted({k.entry for k in kernels})) + child_command(job_path)
        commands.append(cmd)
        try:
            run_child(cmd, out, timeout_s)
        finally:  # an input, not a record (and a pickle is nothing to keep or load later)
            job_path.unlink(missing_ok=True)
    (root / BACKEND_FILE).write_text(json.dumps({**be.describe(), "groups": [list(g) for g in groups], "count": int(count),
                                                 "commands": commands}, indent=1))
    result = collect(root, backend=be)
    result.wall_s = time.perf_counter() - t0
    return result


def _pickled(job: CountJob) -> bytes:
    try:
        return pickle.dumps(job)
    except Exception as exc:
        raise ConfigError(f"the counted kernels cannot be sent to the counting process ({type(exc).__name__}: {exc}); "
                          f"give a kernel's reference and traffic as importable functions or expressions") from None


def run_child(cmd: Sequence[str], out: Path, timeout_s: float) -> None:
    """Run one counted child (its output in ``out``: stdout.txt, stderr.txt, the manifest); a
    CounterError when it did not finish in ``timeout_s``, failed, or wrote no manifest."""
    with open(out / "stdout.txt", "wb") as so, open(out / "stderr.txt", "wb") as se:
        proc = subprocess.Popen(list(cmd), cwd=out, stdin=subprocess.DEVNULL, stdout=so, stderr=se, start_new_session=True)
        try:
            rc = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            raise CounterError(f"the counter pass did not finish in {timeout_s:g} s (killed): {cmd[0]} ...; "
                               f"{_tails(out)}") from None
    manifest = out / MANIFEST
    if not manifest.is_file():
        raise CounterError(f"the counted child exited with status {rc} and wrote no manifest "
                           f"({Path(cmd[0]).name} ...): {_tails(out)}")
    got = json.loads(manifest.read_text())
    if "error" in got:
        raise CounterError(f"the counted child failed: {got['error']}")
    if rc != 0:
        raise CounterError(f"{Path(cmd[0]).name} exited with status {rc} after the sequence ran: {_tails(out)}")


def _tail(path: Path) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return ""
    return " | ".join(text[-_TAIL:].splitlines()[-12:])


def _tails(out: Path) -> str:
    """What the child and the profiler said last (a profiler such as ncu writes its errors to its
    own log, not to stderr)."""
    parts = [f"{p.name}: {t}" for p in [out / "stderr.txt", out / "stdout.txt", *sorted(out.glob("*.log"))] if (t := _tail(p))]
    return " || ".join(parts) or "no output"


def attribute(launches: list[Launch], entries: list[dict[str, Any]], captures_warmup: bool, who: str) -> tuple[list[list[Launch]], str]:
    """The counted launches of each manifest entry, in order: entry ``i`` owns its ``count`` launches
    (after its ``warmup`` ones when the backend reports those too). A backend that reported the
    warm-up although asked not to is recognised by the total and attributed the same way (noted)."""
    counted = sum(int(e["count"]) for e in entries)
    whole = counted + sum(int(e["warmup"]) for e in entries)
    note = ""
    if not captures_warmup and len(launches) == whole and whole != counted:
        captures_warmup, note = True, f"{who} reported the warm-up launches too: dropped by order"
    expected = whole if captures_warmup else counted
    if len(launches) != expected:
        raise CounterError(f"{who} reported {len(launches)} launch(es) of the counted kernels; the sequence made {expected} "
                           f"({counted} counted{f', {whole - counted} warm-up' if captures_warmup else ''}) over "
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
    out = [(g, json.loads((g / MANIFEST).read_text())) for g in groups]
    shape = [[(e["kernel"], e["size_bytes"], e["rotating"], e["flush"], e["warmup"], e["count"]) for e in m["entries"]]
             for _, m in out]
    if any(s != shape[0] for s in shape):
        raise CounterError(f"the counter groups under {root} replayed different sequences; their launches cannot be joined")
    return out


def collect(root: str | Path, backend: Any = None) -> CounterPass:
    """The ``CounterPass`` of a pass folder: ``backend.json``, and per group its manifest and the
    backend's raw output (``backend``: None reads it from backend.json)."""
    root = Path(root)
    desc = json.loads((root / BACKEND_FILE).read_text())
    be = backend if backend is not None else from_description(desc)
    groups = _manifests(root)
    entries = groups[0][1]["entries"]
    notes: list[str] = []
    joined: list[list[dict[str, float]]] = [[{} for _ in range(int(e["count"]))] for e in entries]
    for folder, manifest in groups:
        launches, note = be.parse(folder)
        owned, how = attribute(launches, entries, be.captures_warmup, be.name)
        notes += [n for n in (note, how, manifest.get("marker_status", "")) if n and n not in notes]
        for ci, conf_launches in enumerate(owned):
            for li, launch in enumerate(conf_launches):
                joined[ci][li].update(launch.values)
    records, rows = [], []
    for ci, e in enumerate(entries):
        per = [be.per_launch(v) for v in joined[ci]]
        records.append(make_record(kernel=e["kernel"], size_bytes=e["size_bytes"], rotating_requested=e["rotating_requested"],
                                   flush=e["flush"], rotating=e["rotating"], backend=desc.get("label", be.name),
                                   launches=per, warmup=e["warmup"], inputs=e["input_bytes"],
                                   note="; ".join(filter(None, [*notes, e.get("plan_note", "")]))))
        rows += [{"configuration": ci, "kernel": e["kernel"], "size_bytes": e["size_bytes"],
                  "rotating_requested": e["rotating_requested"], "flush": e["flush"], "launch": li,
                  "buffer_set": (int(e["warmup"]) + li) % int(e["rotating"]), **p} for li, p in enumerate(per)]
    return CounterPass(records, rows, desc.get("label", be.name), desc.get("commands", []), math.nan, root, notes)


__all__ = ["BACKEND_FILE", "CounterPass", "DEFAULT_TIMEOUT_S", "DeviceRef", "device_ref", "attribute", "collect", "count_configurations",
           "counted_configurations", "run_child"]
