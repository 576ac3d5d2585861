"""``hipexplore bench``: sweep kernels x sizes x rotating counts x flush modes on one device.

    hipexplore bench triad --device cuda --size 1MiB,16MiB,256MiB --rotating 1,2,4,auto \\
        --flush none,l2-write,l2-read --iterations 300 --out results.parquet

Prints the summary table (or ``--json``); with ``--out`` the samples, summary and provenance are
written as the sweep goes, and re-running the same command resumes an interrupted sweep.
A user kernel: ``--source k.cu --entry my_kernel --args "out:a:f32[n],in:b:f32[n],n:u64=n"``.

The command's phases, in ``run``: read and check every value (``_plan``, ``_cluster_of``), check the
outputs and place the kernels on the device (``_prepare``), the sweep's arguments (``_sweep_options``),
the sweep (``_execute``: Ctrl-C and SIGTERM keep what finished) and the report (``_report``). The
options are registered in ``cli/bench_options.py``, read by ``cli/bench_values.py``; the kernels
a command line names are ``cli/bench_kernels.py``'s, the files it writes ``cli/bench_outputs.py``'s.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from typing import Any

from ..errors import ConfigError
from .bench_kernels import kernels_of, preflight, unused_geometry
from .bench_options import add_options, spec_fields
from .bench_outputs import check_outputs, exports
from .bench_table import table as _table  # the summary table and its notes (issue 36.5)
from .bench_values import csv_items
from .inputs import check_bench_values  # values and out-file owners, before anything runs (issue 47)

#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "bench"
HELP = "benchmark kernels with rotating buffers and cache flushes"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        COMMAND,
        help=HELP,
        description="Sweep KERNEL(s) x sizes x rotating counts x flush modes; tidy results (one row per sample "
        "plus a summary), each reporting its bias against a cold reference (single launches after an l2-read flush).",
    )
    add_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..devices import get_device

    kernels, sizes, stop = _plan(args)
    cluster = _cluster_of(args)
    check_outputs(args)  # --out and every --export, before any device or compiler starts
    device = args.device if cluster else get_device(args.device, llc_bytes=args.llc_bytes)
    if not cluster:
        preflight(kernels, sizes, device)
        unused_geometry(args, device)
    if stop is not None and not args.json:
        print(adaptive_banner(stop), file=sys.stderr)
    res, status = _execute(args, kernels, sizes, _sweep_options(args, stop, device, cluster))
    if status is not None:
        return status
    return _report(args, res, cluster)


def _plan(args: argparse.Namespace) -> tuple[list[Any], list[str], Any]:
    """Every value of the command line read and checked, before a device or compiler starts: the
    kernels, the sizes and the adaptive rule (None with ``--iterations``)."""
    from ..bench import StopRule

    kernels = kernels_of(args)
    if any(not csv_items(chunk) for chunk in args.size):
        raise ConfigError(
            f"--size {next(c for c in args.size if not csv_items(c))!r} names no size; expected e.g. 4096, 64KiB, 1MiB"
        )
    sizes = [s for chunk in (args.size or ["1MiB"]) for s in csv_items(chunk)]
    # built (and so checked) even with --iterations: a bad --timeout is refused, never silently unused
    stop = StopRule(
        min_samples=args.min_samples,
        min_time_s=args.min_time,
        target_ci=args.target_ci,
        target_cv=args.target_cv,
        timeout_s=args.timeout,
    )
    if args.iterations is not None:
        stop = None
    check_bench_values(args, kernels, sizes, stop, spec_fields(args))  # every value, before a device or compiler starts
    return kernels, sizes, stop


def _cluster_of(args: argparse.Namespace) -> str | None:
    """``--cluster``, checked: catalog kernels only (sent by name), each worker its own device's LLC."""
    if args.cluster is None:
        return None
    from ..bench.cluster import parse_cluster

    parse_cluster(args.cluster)  # a bad value fails before anything starts
    if args.source is not None or args.code_object is not None:
        raise ConfigError("--cluster sends catalog kernels by name; a --source kernel runs on one device")
    if args.llc_bytes is not None:
        raise ConfigError("--llc-bytes applies to one device; with --cluster each worker reads its own device's LLC")
    return args.cluster


def _sweep_options(args: argparse.Namespace, stop: Any, device: Any, cluster: str | None) -> dict[str, Any]:
    """``bench.sweep``'s arguments besides the kernels and sizes: the axes, the sampling, the files,
    where it runs, the command line it records, and the ``SweepSpec`` options given."""
    return dict(
        rotating=csv_items(args.rotating),
        flush=csv_items(args.flush),
        device=device,
        iterations=args.iterations,
        stop=stop,
        out=args.out,
        resume=not args.no_resume,
        resume_from_others=args.resume_from_others,
        progress=not args.no_progress and not args.json,
        worker=args.worker,
        cluster=cluster,
        command=["hipexplore", *sys.argv[1:]] if sys.argv and sys.argv[0].endswith("hipexplore") else None,
        **spec_fields(args),
    )


def _execute(
    args: argparse.Namespace, kernels: list[Any], sizes: list[str], options: dict[str, Any]
) -> tuple[Any, int | None]:
    """The sweep, and the exit status when a signal ended it (None when it finished): Ctrl-C and
    SIGTERM stop it with what finished kept, and the line says so."""
    from ..bench import sweep

    with _terminate_as_interrupt() as got, warnings.catch_warnings():
        from ..bench.counters import CountersSkipped

        warnings.simplefilter("ignore", CountersSkipped)  # said once below, in the command's own words
        try:
            res = sweep(kernels, sizes, **options)
        except KeyboardInterrupt as exc:
            print(_kept(exc, args.out), file=sys.stderr)
            return None, 128 + int(got.get("signal", 2))
        if "signal" in got:  # it came after the last (configuration, unit), and its KeyboardInterrupt was lost
            print(
                f"hipexplore bench: interrupted after the sweep finished: every (configuration, unit) was kept"
                f"{' in ' + str(res.path) if res.path else ''}",
                file=sys.stderr,
            )
            return res, 128 + int(got["signal"])
    return res, None


def _report(args: argparse.Namespace, res: Any, cluster: str | None) -> int:
    """What a finished sweep says: what a resume kept, the status lines, the exports, then the JSON
    records or the table; 1 when a cluster run is incomplete."""
    if res.skipped:
        print(_resumed_line(res), file=sys.stderr)
    info = res.info  # the metadata, typed (bench.runinfo.RunInfo)
    _status_lines(info)
    exports(args, res)
    counted, on = info.counters.status, info.cluster  # on: a cluster run's reruns, failures, workers (ClusterInfo)
    if args.json:
        records = [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in res.summary.to_dict("records")
        ]
        print(
            json.dumps(
                {
                    "out": str(res.path) if res.path else None,
                    "summary": records,
                    **({"cluster": on.shown()} if cluster and on is not None else {}),
                    **({"counters": counted} if counted else {}),
                },
                default=str,
            )
        )
        return 1 if on is not None and on.incomplete else 0
    print(_table(res.summary))
    if res.path is not None:
        print(f"samples: {res.path}")
    if on is not None and on.reruns:
        print(f"re-run after a lost worker: {json.dumps(on.reruns)}")
    if on is not None and on.incomplete:
        print(f"INCOMPLETE: {on.incomplete}", file=sys.stderr)
        return 1
    return 0


def _status_lines(info: Any) -> None:
    """One stderr line each (``info``: the run's ``bench.runinfo.RunInfo``): --resolution's outcome
    (reached, or what stopped the extra units), and counters asked for that the device cannot count
    (the sweep is then as without)."""
    if info.resolution.outcome:
        print(f"hipexplore bench: resolution {info.resolution.shown()}: {info.resolution.outcome}", file=sys.stderr)
    if info.counters.missing:
        print(f"hipexplore bench: {info.counters.status}", file=sys.stderr)


def _resumed_line(res: Any) -> str:
    """The line of a resumed sweep: what it kept, and whose results those were (issue 47.2)."""
    from ..readable import format_bytes

    from ..schema import Configuration

    shown = ", ".join(
        f"{c.kernel} {format_bytes(c.size)} rot={c.rotating} flush={c.flush}"
        + ("" if c.timer.default else f" timer={c.timer}")
        for c in (Configuration(*s) for s in res.skipped[:8])
    )
    more = f", and {len(res.skipped) - 8} more" if len(res.skipped) > 8 else ""
    whose = f"{res.kept_from}'s results (--resume-from-others)" if res.kept_from else "your own results"
    return (
        f"hipexplore bench: resumed {res.path}: kept {len(res.skipped)} finished configuration(s) of {whose}, not "
        f"measured again: {shown}{more} (--no-resume starts over)"
    )


class _terminate_as_interrupt:
    """SIGTERM during the sweep ends it as Ctrl-C does (``KeyboardInterrupt``: the units in flight
    are stopped, what finished is on disk already); ``got["signal"]`` says which one came. Both are
    also noted (``bench.interrupts``): a ``KeyboardInterrupt`` lost on its way up still ends the
    sweep at the next (configuration, unit)."""

    def __enter__(self) -> dict[str, int]:
        import signal
        import threading

        from ..bench import interrupts

        self.got: dict[str, int] = {}
        self.old: dict[int, Any] = {}
        interrupts.clear()
        if threading.current_thread() is not threading.main_thread():
            return self.got
        wanted = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}

        def on_signal(signum: int, frame: Any) -> None:
            self.got.setdefault("signal", signum)
            interrupts.note(signum)
            raise KeyboardInterrupt

        for sig, default in wanted.items():
            if signal.getsignal(sig) == default:  # a handler someone else installed is left as it is
                self.old[sig] = signal.signal(sig, on_signal)
        return self.got

    def __exit__(self, *exc: Any) -> None:
        import signal

        from ..bench import interrupts

        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        interrupts.clear()


def _kept(exc: BaseException, out: str | None) -> str:
    """The line an interrupted sweep ends with: what was kept, and that the same command goes on from there."""
    state = getattr(exc, "sweep_progress", None)
    result = getattr(exc, "sweep_result", None)
    if state is None or result is None:
        return "hipexplore bench: interrupted before anything was measured"
    complete = len(result.summary)
    if out is None:
        return (
            f"hipexplore bench: interrupted after {state.done} of {state.total} (configuration, unit)s; nothing was "
            f"kept (no --out FILE.parquet to keep them in)"
        )
    return (
        f"hipexplore bench: interrupted: {out} keeps {state.done} of {state.total} (configuration, unit)s "
        f"({complete} configuration(s) with rows); the same command measures only the rest"
    )


def adaptive_banner(stop: Any) -> str:
    """The start-up line of an adaptive sweep: the rules that can stop a configuration, by the names
    the table's ``stop`` column uses, in at most two lines (the whole rule, with the minimum time and
    nvbench's stdrel definition of settled noise, is ``StopRule``'s docstring; it was one 560-character
    line that a new user scrolled past)."""
    return (
        f"hipexplore bench: adaptive sampling (no --iterations): a configuration stops at a 95% CI within "
        f"±{stop.target_ci:.1%} ('ci'), a rel. stdev <= {stop.target_cv:.2%} ('cv') or settled noise ('noise') from "
        f"{stop.min_samples} samples on; at most {stop.timeout_s:g} s ('TIMEOUT') or {stop.max_samples:,} samples ('CAP')"
    )
