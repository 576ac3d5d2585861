"""The counted child: a fresh interpreter that replays configurations' launch sequences under a
profiler's command prefix (``counters.counting`` starts it; ``counters.sequence`` launches).

Why a process of its own: a profiler such as ``ncu`` or ``rocprofv3`` starts the program it
profiles, so the launches it counts must come from a program started under it, never from the
caller's process (a notebook, or a sweep holding a GPU context and timing). The child is started as
``[*prefix, python, -I, -c, BOOT, <sys.path as JSON>, <job file>]``: ``-I`` keeps the user's
environment and current folder out of its imports, the explicit path list gives it the caller's
hipexplore. It reads its job (``CountJob``, pickled by the caller into a private folder), opens
the device, runs every configuration's sequence, and writes ``manifest.json`` beside the job: one
entry per configuration in launch order (what the parser attributes counted launches by), or the
error that stopped it.
"""
from __future__ import annotations

import json
import pickle
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...kernels.spec import KernelSpec
from ...schema import Configuration

#: the child's command after the interpreter: put the caller's sys.path first, then run ``main``
BOOT = (
    "import sys, json, importlib\n"
    "for p in reversed(json.loads(sys.argv[1])):\n"
    "    sys.path.insert(0, p) if p not in sys.path else None\n"
    "sys.exit(importlib.import_module('hipexplore.bench.counters.child').main(sys.argv[2]))\n"
)
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class CountJob:
    """What one child run replays: its device (text, with the caller's LLC override), the kernels
    (``KernelSpec`` values: they pickle), the flush factors and memory fraction of the sweep, the
    configurations in order, the warm-up (None: whole rotations, ``sequence.warmup_launches``),
    the counted launches each, and the marker the backend reads."""

    device: str
    kernels: tuple[KernelSpec, ...]
    configurations: tuple[Configuration, ...]
    count: int
    marker: str = "none"
    warmup: int | None = None
    llc_bytes: int | None = None
    flush_factors: tuple[tuple[str, float], ...] = ()
    mem_fraction: float = 0.5

    # -- what sequence.launch_sequence reads of a spec ---------------------------------------------
    def specs(self) -> list[KernelSpec]:
        return list(self.kernels)

    @property
    def flush_factor(self) -> dict[str, float]:
        return dict(self.flush_factors)


def child_command(job_path: Path) -> list[str]:
    """The child's argv (without the backend's prefix): this interpreter, isolated, with this
    process's import path."""
    return [sys.executable, "-I", "-c", BOOT, json.dumps(sys.path), str(job_path)]


def run_job(job: CountJob) -> dict[str, Any]:
    """Open the device and replay every configuration; the manifest (without writing it)."""
    from ...devices import get_device
    from .sequence import MARKERS, free_flushers, launch_sequence

    dev = get_device(job.device, llc_bytes=job.llc_bytes)
    marker = MARKERS[job.marker]()
    flushers: dict[str, Any] = {}
    entries = []
    try:
        for conf in job.configurations:
            entries.append(launch_sequence(job, dev, conf, job.warmup, job.count, marker=marker, flushers=flushers))
    finally:
        free_flushers(flushers)
    return {"device": dev.name, "target": dev.target, "llc_bytes": dev.llc_bytes, "marker": marker.name,
            "marker_status": getattr(marker, "status", ""), "entries": entries}


def main(job_path: str) -> int:
    """The child's entry: 0 with a manifest of entries, 1 with a manifest naming the error."""
    path = Path(job_path)
    out = path.parent / MANIFEST
    try:
        job = pickle.loads(path.read_bytes())
        manifest = run_job(job)
        status = 0
    except BaseException as exc:  # everything goes back to the caller, as one line plus the traceback
        manifest = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
        status = 1
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, default=str))
    tmp.replace(out)
    return status


__all__ = ["BOOT", "CountJob", "MANIFEST", "child_command", "main", "run_job"]
