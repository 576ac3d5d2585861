"""``UnitGuard``: what a parent believes of a unit measured in a process it does not trust.

Why: a unit measured in a sweep worker (``bench.worker``) or on a cluster worker
(``bench.dask_executor``) reports through ``bench.wire`` frames, and a kernel running there can
write frames of its own. The frames are data (no code runs), but data can still lie about the run
as a whole: an early ``done`` ended a sweep as a success with nothing measured. The parent knows
the unit's plan (its spec less what it leaves out), so it believes, per message:

* ``start``: only a kernel of the unit (it is what a fault names);
* ``add``: only a result of a configuration of the plan, of the run, once, whose sample rows all name
  it and the run; ``update``: only results of configurations the unit sent before; ``counted`` (a counting unit's
  entries, and no timed rows there): only a planned (kernel, size, rotating, flush), once;
* ``meta``: only the keys a unit reports (``info.UNIT_REPORTED``), never provenance, identities or
  the spec, each written as its key writes it (``measured.MeasuredInfo.of_entries``: what the parent
  reads back typed);
* ``done``: only with every planned configuration delivered, or ``stopped`` after the parent
  itself answered a ``stop_now`` with yes; ``report`` (a profiler's files): only in a cluster
  counting unit's result, once, after its ``done``; an ``error`` frame is re-raised as the project's own
  error type, built from text (``error``): a ``SystemExit(0)`` cannot be made from the wire.

Anything else raises ``WireError`` saying what; the caller ends the run with one line naming the
kernel and the configuration (``fault``), keeping what the unit delivered before.

What it cannot tell: whether a number in a row is true. A kernel runs in the process that times
it, and can report any time for its own configurations (docs/guide/harness.md says so).
"""

from __future__ import annotations

from typing import Any

from ..errors import (
    BenchmarkError,
    CacheError,
    CompileError,
    CompilerCrashed,
    CompilerError,
    CompilerUnavailable,
    CompileTimeout,
    ConfigError,
    DeviceError,
    DeviceUnavailable,
    HipexploreError,
    KernelFault,
    UnsupportedOperation,
)
from ..schema import Configuration, Timer
from ..untrusted import escaped, shown
from .measured import MeasuredInfo
from .wire_messages import (
    Add,
    Ask,
    Counted,
    Done,
    Failed,
    Message,
    Meta,
    Report,
    Start,
    UnitEnd,
    Update,
    Warn,
    type_name,
)
from .wire_values import MAX_KEY, WireError, clean

#: the project's errors a worker's error frame may name, rebuilt from their message alone
_PLAIN = {
    c.__name__: c
    for c in (
        ConfigError,
        BenchmarkError,
        DeviceError,
        DeviceUnavailable,
        UnsupportedOperation,
        CacheError,
        CompilerError,
        CompilerUnavailable,
    )
}
#: those that carry a compiler's log
_COMPILE = {c.__name__: c for c in (CompileError, CompilerCrashed, CompileTimeout)}


def _key(c: Configuration) -> tuple[str, int, str, str]:
    return (c.kernel, int(c.size), str(c.rotating), c.flush)


class UnitGuard:
    """The plan of one unit (``spec`` less ``done``) and what it delivered (module docstring).
    ``counting``: a counting unit (its entries, no timed rows); ``cluster``: a cluster unit's frames
    (its last word is a ``UnitEnd``)."""

    def __init__(
        self, spec: Any, done: Any = (), *, run_id: str, counting: bool = False, cluster: bool = False
    ) -> None:
        skip = set(done)
        # names as the writer spells them (``wire.clean``: a control character escaped), so a kernel
        # named with one is not taken for a stranger
        confs = [c._replace(kernel=clean(c.kernel, MAX_KEY)) for c in spec.configurations() if c not in skip]
        self.kernels = tuple(dict.fromkeys(clean(k.name, MAX_KEY) for k in spec.specs()))
        self.run_id, self.counting, self.cluster = str(run_id), bool(counting), bool(cluster)
        first = spec.timers[0] if spec.timers else Timer.EVENTS
        self.expected = {_key(c) for c in confs if c.timer == first and not c.is_reference} if counting else set(confs)
        self.delivered: set[Any] = set()
        self.where = ["", ""]
        self.stop_told = False
        self.done = self.reported = False
        self.ended = False

    # -- what a message may say -----------------------------------------------------------------
    def check(self, msg: Message) -> Message:
        """``msg`` if the plan allows it now; else ``WireError`` saying why."""
        if self.ended:
            raise WireError(f"a {type(msg).__name__.lower()} frame after the unit's last word")
        if isinstance(msg, Start):
            if msg.kernel not in self.kernels:
                raise WireError(
                    f"a start frame names kernel {shown(msg.kernel)}, not one of this unit's {list(self.kernels)}"
                )
            self.where = [msg.kernel, msg.configuration]
        elif isinstance(msg, Meta):
            bad = [k for k in msg.entries if not MeasuredInfo.reports(k)]
            if bad:
                raise WireError(
                    f"a meta frame sets {shown(bad[0])}, which no unit reports (the run's own metadata is the parent's)"
                )
            try:
                MeasuredInfo.of_entries(msg.entries)
            except ValueError as exc:
                raise WireError(f"a meta frame's entry {shown(str(exc))}") from None
        elif isinstance(msg, Add):
            self._add(msg)
        elif isinstance(msg, Update):
            for r in msg.rebiased:
                c = r.configuration
                if c not in self.delivered:
                    raise WireError(f"an update frame fills in {self._named(c)}, which the unit has not sent")
        elif isinstance(msg, Counted):
            self._counted(msg)
        elif isinstance(msg, Done):
            self._done(msg)
        elif isinstance(msg, UnitEnd):
            if not self.cluster:
                raise WireError("a unit frame, which only a cluster unit's result holds")
        elif isinstance(msg, Report):
            self._report()
        elif isinstance(msg, Failed):
            self.ended = True
        elif not isinstance(msg, (Ask, Warn)):  # pragma: no cover - the decoder makes only the types above
            raise WireError(f"a message of type {type(msg).__name__}")
        return msg

    def told(self, stop: bool) -> None:
        """The parent answered an ``ask`` (a ``done`` that says stopped is believed only after a yes)."""
        self.stop_told = self.stop_told or bool(stop)

    def _configuration(self, run_id: str, c: Configuration, what: str) -> Configuration:
        if run_id != self.run_id:
            raise WireError(f"{what} holds a result of run {shown(run_id)}, not of this run ({self.run_id})")
        return c

    def _named(self, c: Configuration) -> str:
        return f"kernel {escaped(c.kernel, 60)} {escaped(c.describe(), 200)}"

    def _add(self, msg: Add) -> None:
        if self.counting:
            raise WireError("an add frame from a counting unit, which takes no timed sample")
        c = self._configuration(msg.result.identity.run_id, msg.result.configuration, "an add frame")
        if c not in self.expected:
            raise WireError(f"an add frame for {self._named(c)}, which is not in this unit's plan")
        if c in self.delivered:
            raise WireError(f"a second add frame for {self._named(c)}")
        s = msg.result.samples
        if s.n:
            mine = set(zip(*(s[k].tolist() for k in Configuration.COLUMNS)))
            if {Configuration.of_key(k) for k in mine} != {c} or set(s["run_id"].tolist()) != {self.run_id}:
                raise WireError(
                    f"an add frame for {self._named(c)} whose sample rows name another configuration or run"
                )
        self.delivered.add(c)

    def _counted(self, msg: Counted) -> None:
        if not self.counting:
            raise WireError("a counted frame from a timed unit")
        e = msg.entry
        key = (e["kernel"], int(e["size_bytes"]), str(e["rotating_requested"]), e["flush"])
        if key not in self.expected or key in self.delivered:
            raise WireError(
                f"a counted frame for kernel {shown(key[0], 60)} size={key[1]} rotating={shown(key[2], 20)} "
                f"flush={shown(key[3], 40)}, which is {'sent twice' if key in self.delivered else 'not in this unit plan'}"
            )
        self.delivered.add(key)

    def _report(self) -> None:
        if not (self.cluster and self.counting):
            raise WireError("a report frame, which only a cluster counting unit's result holds")
        if not self.done or self.reported:
            raise WireError(f"a report frame {'sent twice' if self.reported else 'before the done frame'}")
        self.reported = True

    def _done(self, msg: Done) -> None:
        if msg.stopped and not self.stop_told:
            raise WireError("a done frame that says the unit was stopped, when the parent never asked it to stop")
        missing = [c for c in self.expected if c not in self.delivered]
        if not msg.stopped and missing:
            first = missing[0]
            shown_first = (
                self._named(first)
                if isinstance(first, Configuration)
                else f"kernel {shown(first[0], 60)} size={first[1]} rotating={shown(first[2], 20)} flush={shown(first[3], 40)}"
            )
            raise WireError(
                f"a done frame with {len(missing)} of {len(self.expected)} planned configuration(s) not delivered "
                f"(the first: {shown_first})"
            )
        self.done = True
        self.ended = not self.cluster  # a cluster unit's UnitEnd follows (a counting unit's report before it)

    # -- what the parent raises -----------------------------------------------------------------
    def fault(self, status: str) -> KernelFault:
        """The one line that ends a run whose channel broke: the kernel and configuration it was at."""
        kernel = self.where[0] or "+".join(self.kernels) or "?"
        return KernelFault(kernel, self.where[1] or "(before the first configuration)", status)

    def error(self, msg: Failed) -> HipexploreError:
        """A worker's error frame as the project's own exception (module docstring)."""
        name = type_name(msg.type)
        if name == "KernelFault":
            kernel = msg.kernel if msg.kernel in self.kernels else (self.where[0] or "+".join(self.kernels))
            return KernelFault(
                kernel,
                msg.configuration or self.where[1] or "(before the first configuration)",
                msg.status or msg.message,
            )
        if name in _COMPILE:
            return _COMPILE[name](msg.message, log=msg.log)
        if name in _PLAIN:
            return _PLAIN[name](msg.message)
        return self.fault(f"the sweep worker raised {name}: {msg.message}")


__all__ = ["UnitGuard"]
