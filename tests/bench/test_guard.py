"""hipexplore.bench.guard: what a parent believes of a unit measured where a kernel could forge its frames.

A unit's plan is its spec less what it leaves out; its messages are believed only as the plan
allows (a planned configuration once, ``done`` with every one delivered or after a stop the parent
asked for, metadata a unit reports) and an error frame becomes the project's own error type, never
an arbitrary one. The same checks through a real worker and a forging kernel:
tests/security/test_security_channel.py."""

from __future__ import annotations

import pytest

from hipexplore.bench import wire
from hipexplore.bench.guard import UnitGuard
from hipexplore.bench.outcome import Rebiased
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.stats import StopRule
from hipexplore.errors import CompileError, ConfigError, KernelFault
from hipexplore.schema import Configuration

from .made import but, result, samples

RUN = "run0001"


def spec() -> SweepSpec:
    return SweepSpec(
        kernels=("triad",), sizes=("16KiB",), rotating=(1, 2), flush=("none",), stop=StopRule(iterations=10)
    )


def add(c: Configuration, run_id: str = RUN, sample_kernel: str | None = None) -> wire.Add:
    r = result(c, run_id, 3)
    if sample_kernel:
        r = but(r, samples=samples(c, run_id, 3, kernel=sample_kernel))
    return wire.Add(r)


def update(c: Configuration) -> wire.Update:
    return wire.Update([Rebiased.of(result(c))])


def test_a_unit_that_delivers_its_plan_is_done_and_nothing_after():
    g = UnitGuard(spec(), run_id=RUN)
    confs = spec().configurations()
    assert len(confs) == 3  # rotating 1 and 2, and the cold reference
    g.check(wire.Start("triad", "size=16384 rotating=1 flush=none"))
    g.check(wire.Meta({"warmup.clock": "stable", "verify.triad.16384": "rel_l2_error=0"}))
    for c in confs:
        g.check(add(c))
    g.check(update(confs[0]))
    g.check(wire.Done(False))
    with pytest.raises(wire.WireError, match="after the unit's last word"):
        g.check(wire.Warn("UserWarning", "late", 1))


@pytest.mark.parametrize(
    "message, why",
    [
        (lambda cs: wire.Done(False), "3 of 3 planned configuration"),
        (lambda cs: wire.Done(True), "never asked it to stop"),
        (lambda cs: add(Configuration("triad", 999, "1", "none")), "not in this unit's plan"),
        (lambda cs: add(Configuration("copy", 16384, "1", "none")), "not in this unit's plan"),
        (lambda cs: add(cs[0], run_id="elsewhere"), "not of this run"),
        (lambda cs: add(cs[0], sample_kernel="copy"), "sample rows name another configuration"),
        (lambda cs: update(cs[0]), "has not sent"),
        (lambda cs: wire.Start("copy", "size=1"), "not one of this unit's"),
        (lambda cs: wire.Meta({"identity.triad": "forged"}), "no unit reports"),
        (lambda cs: wire.Meta({"run_id": "x"}), "no unit reports"),
        (lambda cs: wire.Meta({"floor.none.median_s": "fast"}), "'fast' is not how a unit writes it"),
        (lambda cs: wire.Counted({"kernel": "triad"}), "from a timed unit"),
        (lambda cs: wire.UnitEnd("w", "h", "", 1.0), "only a cluster unit"),
    ],
)
def test_what_the_plan_does_not_allow_is_one_line(message, why):
    g = UnitGuard(spec(), run_id=RUN)
    with pytest.raises(wire.WireError, match=why) as err:
        g.check(message(spec().configurations()))
    assert "\n" not in str(err.value)


def test_a_configuration_is_taken_once_and_done_after_a_stop_only_when_asked():
    g = UnitGuard(spec(), run_id=RUN)
    first = spec().configurations()[0]
    g.check(add(first))
    with pytest.raises(wire.WireError, match="second add frame"):
        g.check(add(first))
    g.told(False)
    with pytest.raises(wire.WireError, match="never asked"):
        g.check(wire.Done(True))
    g.told(True)
    g.check(wire.Done(True))  # the parent said stop: the unit may end with configurations missing


def test_what_the_unit_leaves_out_is_not_its_plan():
    done = set(spec().configurations()[1:])
    g = UnitGuard(spec(), done, run_id=RUN)
    with pytest.raises(wire.WireError, match="not in this unit's plan"):
        g.check(add(spec().configurations()[1]))
    g.check(add(spec().configurations()[0]))
    g.check(wire.Done(False))


def test_a_counting_unit_reports_entries_once_and_no_timed_rows():
    g = UnitGuard(spec(), run_id=RUN, counting=True)
    entry = {"kernel": "triad", "size_bytes": 16384, "rotating_requested": "1", "flush": "none"}
    with pytest.raises(wire.WireError, match="takes no timed sample"):
        g.check(add(spec().configurations()[0]))
    g.check(wire.Counted(entry))
    with pytest.raises(wire.WireError, match="sent twice"):
        g.check(wire.Counted(entry))
    with pytest.raises(wire.WireError, match="1 of 2 planned"):  # rotating 2 is missing; the reference is never counted
        g.check(wire.Done(False))
    g.check(wire.Counted({**entry, "rotating_requested": "2"}))
    g.check(wire.Done(False))


def test_a_report_comes_only_from_a_cluster_counting_unit_once_after_its_done():
    """A profiler's files (``wire.Report``) travel only in a cluster counting unit's result, once,
    between its ``done`` and its last word: a worker pipe, a timed unit or a second report is refused."""
    entries = [{"kernel": "triad", "size_bytes": 16384, "rotating_requested": r, "flush": "none"} for r in ("1", "2")]
    report = wire.Report({"ncu.log": b"x"})
    for counting, cluster in ((True, False), (False, True)):
        with pytest.raises(wire.WireError, match="only a cluster counting unit's result holds"):
            UnitGuard(spec(), run_id=RUN, counting=counting, cluster=cluster).check(report)
    g = UnitGuard(spec(), run_id=RUN, counting=True, cluster=True)
    g.check(wire.Counted(entries[0]))
    with pytest.raises(wire.WireError, match="before the done frame"):
        g.check(report)
    g.check(wire.Counted(entries[1]))
    g.check(wire.Done(False))
    g.check(report)
    with pytest.raises(wire.WireError, match="sent twice"):
        g.check(report)
    g.check(wire.UnitEnd("tls://w:1", "h", "0", 1.0))


def test_an_error_frame_is_the_projects_own_error_never_an_arbitrary_one():
    g = UnitGuard(spec(), run_id=RUN)
    g.check(wire.Start("triad", "size=16384 rotating=2 flush=none"))
    exit0 = g.error(wire.Failed("SystemExit", "0"))
    assert type(exit0) is KernelFault and str(exit0) == (
        "kernel triad faulted in configuration size=16384 rotating=2 flush=none: the sweep worker raised SystemExit: 0"
    )
    assert type(g.error(wire.Failed("ConfigError", "argument a is never written"))) is ConfigError
    compiled = g.error(wire.Failed("CompileError", "cc rejected it", log="k.c:1: error"))
    assert type(compiled) is CompileError and compiled.log == "k.c:1: error"
    fault = g.error(wire.Failed("KernelFault", "", "copy", "size=1", "SIGSEGV"))  # names a kernel not of this unit
    assert (fault.kernel, fault.configuration, fault.status) == ("triad", "size=1", "SIGSEGV")
    assert "?" in str(g.error(wire.Failed("os.system('x')", "boom")))  # not a type name: shown as ?
    assert str(g.fault("why")) == "kernel triad faulted in configuration size=16384 rotating=2 flush=none: why"
    assert (
        str(UnitGuard(spec(), run_id=RUN).fault("why"))
        == "kernel triad faulted in configuration (before the first configuration): why"
    )
