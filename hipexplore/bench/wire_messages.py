"""What a unit may say to the process that trusts it: the messages of ``bench.wire``, as typed values.

Why a vocabulary of its own: a unit reports through its channel (``bench.sweeprun.Channel``:
``started``, ``stop_now``, ``meta``, ``add``, ``update``, ``counted``; a warning, its end or its
error), and the same calls travel as these messages over a sweep worker's pipe
(``bench.worker_main``) and in a cluster unit's result (``bench.dask_executor``: with its
``UnitEnd`` and, for a counting unit under a profiler, its ``Report``). ``bench.wire`` turns each
into a frame and back; ``bench.guard`` decides what the parent believes of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .outcome import ConfigurationResult, CounterSummary, Rebiased


@dataclass(frozen=True)
class Start:
    """The unit began (kernel, configuration) — what a fault will name."""

    kernel: str
    configuration: str


@dataclass(frozen=True)
class Ask:
    """``stop_now()``: the parent answers with one byte."""


@dataclass(frozen=True)
class Meta:
    entries: dict[str, str]


@dataclass(frozen=True)
class Add:
    """A finished configuration: its result (``bench.outcome.ConfigurationResult``)."""

    result: ConfigurationResult


@dataclass(frozen=True)
class Update:
    """Results sent before, filled in again (their biases, once the reference is whole)."""

    rebiased: list[Rebiased]


@dataclass(frozen=True)
class Counted:
    """A counting unit's manifest entry of one configuration (``bench.counters``), and where the
    worker counted it itself, its ``CounterSummary`` (on the pipe: its fields by their declared
    types, as every part of a result; read back as a ``CounterSummary``, never a dict)."""

    entry: dict[str, Any]
    summary: CounterSummary | None = None


@dataclass(frozen=True)
class Warn:
    category: str
    message: str
    lineno: int = 0


@dataclass(frozen=True)
class Done:
    stopped: bool


@dataclass(frozen=True)
class Failed:
    """An exception in the worker, as data: its type's name, its message and what the project's
    own error types carry (a ``KernelFault``'s kernel, configuration and status; a compile log)."""

    type: str
    message: str
    kernel: str = ""
    configuration: str = ""
    status: str = ""
    log: str = ""


@dataclass(frozen=True)
class UnitEnd:
    """A cluster unit's last word (``bench.dask_executor``): where it ran and how long it took."""

    worker: str
    host: str
    gpu: str
    seconds: float
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    """A cluster counting unit's profiler report (``bench.dask_executor``: ncu, rocprofv3 wrote it
    on the worker's host): each file by its path below the report folder (``REPORT_PATH``), its
    bytes as they are. The client writes them below its own report folder, where the counting
    plan's finish step parses them as it parses a local unit's."""

    files: dict[str, bytes]


Message = Start | Ask | Meta | Add | Update | Counted | Warn | Done | Failed | UnitEnd | Report

#: a report file's path: names of letters, digits and ``_.,+=@-`` (not starting with a dot), joined
#: by ``/``, at most 16 deep: nothing that leaves the folder, nothing hidden
REPORT_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,+=@-]{0,254}(/[A-Za-z0-9_][A-Za-z0-9_.,+=@-]{0,254}){0,15}")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")


def type_name(value: str) -> str:
    """An exception type's name as the parent shows it (an identifier, else ``?``)."""
    return value if _IDENT.fullmatch(value) else "?"


__all__ = [
    "Add",
    "Ask",
    "Counted",
    "Done",
    "Failed",
    "Message",
    "Meta",
    "REPORT_PATH",
    "Report",
    "Start",
    "UnitEnd",
    "Update",
    "Warn",
    "type_name",
]
