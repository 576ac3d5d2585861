"""Counter backends: who counts a counting unit's launches, and how their output becomes per-launch numbers.

A backend is a command prefix the counting unit's sweep worker starts under
(``phase.Counting.prefix``, which the executor reads: ``[*prefix, python, -I, ...]``), plus a parser of
what it wrote. Each answers ``available(device)`` (None, or one line saying why not),
``groups(device)`` (the counter sets, one counting unit each: a set must fit one hardware pass,
since a second replay pass would not see the launches' cache state), ``prefix(group, out_dir,
entries)``, ``parse(out_dir, entries)`` (the counted launches, in launch order, from the report in
``out_dir``; ``entries``: the unit's manifest entries, which a backend that counted in the worker
reads its values from) and ``per_launch(values)``
(DRAM bytes read and written, L2 hit rate). What it knows about how it counted is written once
beside its output (``describe`` -> backend.json), so a recorded folder parses again without the tool.

Chosen per device kind (``backend_for``): NVIDIA -> Nsight Compute's CLI (``counters.ncu``); AMD ->
rocprofiler-sdk's ``rocprofv3`` (``counters.rocprof``, built to the documented interface, not run:
no AMD GPU has run it); the host -> no counters (``HOST_LINE``). Why these: docs/guide/counters.md.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol

from ...errors import BenchmarkError, UnsupportedOperation

#: a counting unit's entries, one per configuration in launch order, beside the profiler's output
#: (an in-process backend's counters travel in them: ``counters.cupti``)
MANIFEST = "manifest.json"
#: what the host says instead of counting
HOST_LINE = "host: no hardware counters (the host device has no GPU profiler); the counter pass is skipped"


class CountersUnavailable(UnsupportedOperation):
    """No backend can count on this device (the message is the backend's one line)."""


class CounterError(BenchmarkError):
    """A counter pass ran and failed: the profiler refused, the counting unit died, or what it
    reported does not match the launches the unit made (the message names which and shows the tail)."""


@dataclass
class Launch:
    """One launch as a backend reported it: the kernel's name there and its counters (base units)."""

    kernel: str
    values: dict[str, float] = field(default_factory=dict)


class Backend(Protocol):
    """See the module docstring."""

    name: str
    #: how the counting unit marks its counted launches (``phase.MARKERS``)
    marker: str
    #: True when the backend reports the launches before the range too (dropped by order)
    captures_warmup: bool
    #: True when it counts in the counting unit's worker, which summarises each configuration there;
    #: False when it writes a report, parsed at the unit's finish step (``counting.CountingPlan``)
    counts_in_worker: bool

    def available(self, device: Any) -> str | None: ...

    def groups(self, device: Any) -> list[tuple[str, ...]]: ...

    def prefix(self, group: tuple[str, ...], out_dir: Path, entries: list[str]) -> list[str]: ...

    def parse(self, out_dir: Path, entries: list[dict[str, Any]] | None = None) -> tuple[list[Launch], str]: ...

    def per_launch(self, values: dict[str, float]) -> dict[str, float]: ...

    def describe(self) -> dict[str, Any]: ...


class HostBackend:
    """The host: no counters."""

    name = "host"
    marker = "none"
    captures_warmup = True
    counts_in_worker = False

    def available(self, device: Any) -> str | None:
        return HOST_LINE

    def groups(self, device: Any) -> list[tuple[str, ...]]:
        return []

    def prefix(self, group: tuple[str, ...], out_dir: Path, entries: list[str]) -> list[str]:
        raise CountersUnavailable(HOST_LINE)

    def parse(self, out_dir: Path, entries: list[dict[str, Any]] | None = None) -> tuple[list[Launch], str]:
        raise CountersUnavailable(HOST_LINE)

    def per_launch(self, values: dict[str, float]) -> dict[str, float]:
        raise CountersUnavailable(HOST_LINE)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label": "host (no counters)"}


# -- kernel names ---------------------------------------------------------------------------------
_WORD = "A-Za-z0-9_"


def base_name(entry: str) -> str:
    """The function name a profiler reports for ``entry``: ``transpose_tiled<32, 8>`` ->
    ``transpose_tiled`` (templates, parameters and a return type dropped)."""
    text = entry.strip()
    text = re.sub(r"^(?:void|__global__|extern\s+\"C\")\s+", "", text)
    base = re.split(r"[<(\s]", text, maxsplit=1)[0]
    if not re.fullmatch(rf"[A-Za-z_][{_WORD}]*", base or ""):
        raise UnsupportedOperation(
            f"kernel entry {entry!r} has no function name a profiler's filter can match "
            f"(expected an identifier, optionally with template arguments)"
        )
    return base


def name_pattern(entries: Iterable[str]) -> str:
    """One regular expression that finds any of ``entries``' base names as a whole word in a
    reported kernel name (``triad``, ``void transpose_tiled<32, 8>(float*, ...)``), and never the
    flush kernels (``hx_write_flush``: ``_`` is a word character, so ``flush`` alone does not match)."""
    names = sorted({base_name(e) for e in entries})
    if not names:
        raise UnsupportedOperation("no kernel to count: the pass was given no configurations")
    return f"(^|[^{_WORD}])({'|'.join(names)})([^{_WORD}]|$)"


def reports(kernel: str, entry: str) -> bool:
    """Whether the reported kernel name ``kernel`` is a launch of ``entry``."""
    return re.search(name_pattern([entry]), kernel) is not None


def find_tool(explicit: str | None, name: str, places: Iterable[str]) -> str | None:
    """``explicit`` if it is an executable, else ``name`` on PATH, else the first of ``places``
    (glob patterns, newest version last so it wins) that is an executable."""
    import glob

    if explicit:
        return explicit if os.access(explicit, os.X_OK) and Path(explicit).is_file() else None
    found = shutil.which(name)
    if found:
        return found
    for pattern in places:
        hits = [p for p in sorted(glob.glob(pattern)) if os.access(p, os.X_OK) and Path(p).is_file()]
        if hits:
            return hits[-1]
    return None


__all__ = [
    "Backend",
    "CounterError",
    "CountersUnavailable",
    "HOST_LINE",
    "HostBackend",
    "Launch",
    "MANIFEST",
    "base_name",
    "find_tool",
    "name_pattern",
    "reports",
]
