"""``hipexplore bench``: sweep kernels x sizes x rotating counts x flush modes on one device.

    hipexplore bench triad --device cuda --size 1MiB,16MiB,256MiB --rotating 1,2,4,auto \\
        --flush none,l2-write,l2-read --iterations 300 --out results.parquet

Prints the summary table (or ``--json``); with ``--out`` the samples, summary and provenance are
written as the sweep goes, and re-running the same command resumes an interrupted sweep.
A user kernel: ``--source k.cu --entry my_kernel --args "out:a:f32[n],in:b:f32[n],n:u64=n"``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .bench_table import table as _table  # the summary table and its notes (issue 36.5)
from .inputs import check_bench_values, check_out_owner  # values and out-file owners, before anything runs (issue 47)


def _csv(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


#: the most samples ``--iterations`` may ask for per configuration (each is a row in the samples file)
MAX_ITERATIONS = 1_000_000


#: the most untimed launches --chunk-lead / --chunk-trail may add to each chunk (the default chunk is 4)
MAX_UNTIMED = 1024


def _floor(text: str) -> bool | None:
    """argparse type of --floor: auto (on a GPU only), on, off."""
    got = {"auto": None, "on": True, "off": False}.get(text.strip().lower(), "bad")
    if got == "bad":
        raise argparse.ArgumentTypeError(f"expected auto, on or off, got {text!r}")
    return got  # type: ignore[return-value]


def _lead(text: str) -> int | str:
    """argparse type of --chunk-lead: random, or an integer >= 0."""
    t = text.strip().lower()
    if t == "random":
        return t
    try:
        value = int(t)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected random or an integer >= 0, got {text!r}")
    if value > MAX_UNTIMED:  # each chunk would run that many untimed launches: a hang, not a measurement
        raise argparse.ArgumentTypeError(
            f"{text if len(text) <= 40 else text[:20] + f'... ({len(text)} digits)'} is more than the maximum, {MAX_UNTIMED:,}"
        )
    return value


def _trail(text: str) -> int:
    """argparse type of --chunk-trail: an integer >= 0."""
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    if value > MAX_UNTIMED:
        raise argparse.ArgumentTypeError(
            f"{text if len(text) <= 40 else text[:20] + f'... ({len(text)} digits)'} is more than the maximum, {MAX_UNTIMED:,}"
        )
    return value


def _count(flag: str, maximum: int | None = None):
    """argparse type: a positive integer, at most ``maximum``; the error names the flag."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(
                f"{text if len(text) <= 40 else text[:20] + f'... ({len(text)} digits)'} is more than the maximum, {maximum:,}"
            )
        return value

    return parse


def _dims(flag: str):
    """argparse type for --grid/--block: 1-3 comma separated parts; a part that is a plain number
    must be a positive integer (the error names the flag); expressions are checked by
    ``kernels.geometry`` when the kernel is built."""

    def parse(text: str) -> str:
        import re

        from ..kernels.geometry import split_top_level  # when a value is read, not when --help is built

        try:
            parts = split_top_level(text) or [text]
        except ConfigError as exc:  # an unbalanced bracket: argparse would only say "invalid value"
            raise argparse.ArgumentTypeError(str(exc)) from None
        for part in parts:
            if re.fullmatch(r"\s*[-+]?[0-9_.]+\s*", part):
                _count(flag)(part)
        return text

    return parse


def _bytes(flag: str):
    def parse(text: str) -> int:
        from ..bench.spec_checks import parse_size

        try:
            return parse_size(text)
        except ConfigError:
            raise argparse.ArgumentTypeError(
                f"expected a positive size such as 32MiB or 33554432, got {text!r}"
            ) from None

    return parse


def _field_type(f: Any) -> Any:
    """The argparse type of a ``SweepSpec`` option, from its annotation (errors name the expected value)."""
    least, most, kind = f.metadata.get("least"), f.metadata.get("most"), str(f.type).replace(" ", "")
    if f.metadata.get("check") is not None:  # the field reads its own text
        check = f.metadata["check"]

        def parse(text: str) -> Any:
            try:
                return check(text)
            except ConfigError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        return parse
    if kind == "bool|None":
        return _floor
    if kind == "int|str":
        return _lead
    if kind == "int":
        return _trail if least == 0 else _count(f.name, most)
    if kind.startswith("float"):
        return float
    if kind == "tuple[str,...]":
        return _csv
    if kind.startswith("tuple[tuple[str,float]"):
        return _factors
    raise TypeError(
        f"SweepSpec.{f.name}: no command-line form for a {f.type}"
    )  # pragma: no cover - a new kind of field


def _factors(text: str) -> dict[str, float]:
    """argparse type of MODE=X,...: flush modes and factors."""
    out: dict[str, float] = {}
    for part in _csv(text):
        mode, _, value = part.partition("=")
        try:
            out[mode.strip()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected MODE=FACTOR pairs such as l2-read=3,l2-write=1, got {text!r}"
            ) from None
    return out


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "auto"
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or "none"
    return str(value)


def _status_lines(info: Any) -> None:
    """One stderr line each (``info``: the run's ``bench.runinfo.RunInfo``): --resolution's outcome
    (reached, or what stopped the extra units), and counters asked for that the device cannot count
    (the sweep is then as without)."""
    if info.resolution.outcome:
        print(f"hipexplore bench: resolution {info.resolution.shown()}: {info.resolution.outcome}", file=sys.stderr)
    if info.counters.missing:
        print(f"hipexplore bench: {info.counters.status}", file=sys.stderr)


def _spec_options(p: argparse.ArgumentParser) -> None:
    """One option per ``SweepSpec`` option field, named after it (``chunk_lead`` -> ``--chunk-lead``; a
    boolean has its ``--no-`` form), its default the spec's (options not given are left to the spec)."""
    from ..bench.spec import options

    g = p.add_argument_group("measurement (SweepSpec fields)")
    for f in options():
        flags = [f"--{f.name.replace('_', '-')}", *([f.metadata["alias"]] if f.metadata.get("alias") else [])]
        text = f"{f.metadata['help']} (default {_shown(f.default)})".replace("%", "%%")
        if str(f.type) == "bool":
            g.add_argument(
                *flags, dest=f.name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=text
            )
        elif f.metadata.get("const") is not None:  # the flag alone means const (--counters), or takes a value
            g.add_argument(
                *flags,
                dest=f.name,
                type=_field_type(f),
                nargs="?",
                const=f.metadata["const"],
                default=argparse.SUPPRESS,
                metavar=f.metadata.get("metavar"),
                help=text,
            )
        else:
            g.add_argument(
                *flags,
                dest=f.name,
                type=_field_type(f),
                default=argparse.SUPPRESS,
                metavar=f.metadata.get("metavar"),
                help=text,
            )


def _spec_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The ``SweepSpec`` options given on the command line, by field name."""
    from ..bench.spec import options

    return {f.name: getattr(args, f.name) for f in options() if hasattr(args, f.name)}


def _per_kernel(args: argparse.Namespace) -> list[argparse.Namespace]:
    """The user kernels of a ``bench`` command line, one namespace each with single values: KERNEL's
    names in order, each with its own ``--source`` (one per name, or one source for a single name),
    its ``--entry`` and ``--args`` (one per name, or one shared by all)."""
    names = _csv(args.kernel) or [args.kernel]
    if len(set(names)) != len(names):
        raise ConfigError(f"KERNEL {args.kernel!r} names a kernel twice; each --source kernel needs a name of its own")
    sources = args.source or []
    if sources and len(sources) != len(names):
        raise ConfigError(
            f"{len(sources)} --source file(s) for {len(names)} kernel name(s) {names}; give one --source per "
            f"name, in order (bench A,B --source a.cu --source b.cu)"
        )
    if args.code_object is not None and len(names) > 1:
        raise ConfigError(f"--code-object loads one kernel; KERNEL names {len(names)} ({args.kernel!r})")

    def each(flag: str, values: list[str] | None) -> list[str | None]:
        values = values or []
        if len(values) in (0, 1):
            return [values[0] if values else None] * len(names)
        if len(values) != len(names):
            raise ConfigError(
                f"{len(values)} {flag} values for {len(names)} kernel name(s) {names}; give one shared "
                f"{flag}, or one per name, in order"
            )
        return list(values)

    out = []
    for name, source, entry, spec in zip(
        names, sources or [None] * len(names), each("--entry", args.entry), each("--args", args.args)
    ):
        one = argparse.Namespace(**vars(args))
        one.kernel, one.source, one.entry, one.args = name, source, entry, spec
        out.append(one)
    return out


def _user_kernel(args: argparse.Namespace) -> Any:
    """One ``--source``/``--code-object`` kernel (``_per_kernel``'s namespace), registered."""
    from ..kernels import catalog

    if not args.args:
        raise ConfigError(
            "--source/--code-object needs --args describing the kernel's arguments (e.g. 'out:a:f32[n],n:u64=n')"
        )
    if args.code_object is not None and not args.entry:
        raise ConfigError("--code-object needs --entry NAME: the kernel's symbol in the code object")
    from .inputs import check_user_kernel

    check_user_kernel(args)  # files readable UTF-8, expressions ASCII: one line each, before the build
    block: Any = int(args.block) if args.block.strip().isdigit() else args.block
    return catalog.user_kernel(
        args.source,
        args.entry or args.kernel,
        args.args,
        name=args.kernel,
        grid=args.grid,
        block=block,
        shared_bytes=args.shared_bytes,
        bytes_per_launch=args.bytes_per_launch,
        include_dirs=args.include_dir,
        headers=args.header,
        options=args.option,
        code_object=args.code_object,
    )


#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "bench"
HELP = "benchmark kernels with rotating buffers and cache flushes"


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..bench.stats import StopRule

    p = subparsers.add_parser(
        COMMAND,
        help=HELP,
        description="Sweep KERNEL(s) x sizes x rotating counts x flush modes; tidy results (one row per sample "
        "plus a summary), each reporting its bias against a cold reference (single launches after an l2-read flush).",
    )
    p.add_argument(
        "kernel",
        metavar="KERNEL",
        help="catalog kernel(s), comma separated (triad, copy, fill, ...), or a name for --source",
    )
    p.add_argument("--device", default="auto", help="auto, host, cuda, hip (optionally :INDEX); default auto")
    p.add_argument(
        "--size",
        action="append",
        default=[],
        metavar="S",
        help="bytes per array: 4096, 64KiB, 1MiB, 256MiB; comma separated or repeated (default 1MiB)",
    )
    p.add_argument("--rotating", default="1", help="buffer sets: comma separated integers and/or auto (default 1)")
    p.add_argument(
        "--flush", default="none", help="none, l2-write, l2-read, icache, inline-icache; comma separated (default none)"
    )
    p.add_argument(
        "--iterations",
        type=_count("--iterations", MAX_ITERATIONS),
        default=None,
        help=f"fixed samples per configuration (must be >= buffer sets; at most {MAX_ITERATIONS:,}); default adaptive",
    )
    rule = StopRule()  # the adaptive rule's defaults are its own
    p.add_argument(
        "--min-samples",
        type=_count("--min-samples", MAX_ITERATIONS),
        default=rule.min_samples,
        help=f"adaptive: at least this many samples (default {rule.min_samples})",
    )
    p.add_argument(
        "--min-time",
        type=float,
        default=rule.min_time_s,
        help=f"adaptive: at least this much measured kernel time (s; default {rule.min_time_s:g})",
    )
    p.add_argument(
        "--target-ci",
        type=float,
        default=rule.target_ci,
        help=f"adaptive: stop when the 95%% CI of the median is within this fraction of it (default {rule.target_ci:g})",
    )
    p.add_argument(
        "--target-cv",
        type=float,
        default=rule.target_cv,
        help=f"adaptive: stop at this relative stdev (default {rule.target_cv:g})",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=rule.timeout_s,
        help=f"adaptive: give up after this many seconds per configuration (default {rule.timeout_s:g})",
    )
    _spec_options(p)
    p.add_argument(
        "--llc-bytes",
        type=_bytes("--llc-bytes"),
        default=None,
        help="override the last-level cache size the device reports (e.g. 32MiB)",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE.parquet",
        help="write samples here (+ .summary.parquet, .meta.json); resumes",
    )
    p.add_argument(
        "--no-resume", action="store_true", help="with --out: start over instead of skipping finished configurations"
    )
    p.add_argument(
        "--resume-from-others",
        action="store_true",
        help="with --out: resume from results another user wrote there (a team folder); refused otherwise",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="with --out: replace an existing parquet file that is not a hipexplore result, "
        "or (with --no-resume) another user's results",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON records")
    p.add_argument(
        "--export",
        nargs=2,
        action="append",
        default=None,
        metavar=("FORMAT", "FILE"),
        help="also write the result for another tool: nvbench (JSON nvbench's compare scripts read), pyperf "
        "(pyperf compare_to reads it) or bencher (Bencher Metric Format); repeatable",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    w = p.add_mutually_exclusive_group()
    w.add_argument(
        "--worker",
        dest="worker",
        action="store_const",
        const=True,
        default=None,
        help="run the sweep in a worker process (the default on GPUs): a faulting kernel cannot kill this process",
    )
    w.add_argument(
        "--in-process",
        dest="worker",
        action="store_const",
        const=False,
        help="run the sweep in this process (the default on the host)",
    )
    p.add_argument(
        "--cluster",
        default=None,
        metavar="local:N|tcp://HOST:PORT",
        help="spread (kernel, size) groups over Dask workers, one per GPU (local:N starts N pinned workers); "
        "the results gain worker, host and gpu columns",
    )
    g = p.add_argument_group("user kernel")
    g.add_argument(
        "--source",
        action="append",
        default=None,
        help="kernel source file (compiled with hiprtc/NVRTC for GPUs, cc for the host); for an A/B of two "
        "files give one --source per KERNEL name, in order: bench A,B --source a.cu --source b.cu --interleave",
    )
    g.add_argument(
        "--entry",
        action="append",
        default=None,
        help="kernel function name in --source (default: KERNEL); one per kernel, or one shared by all",
    )
    g.add_argument(
        "--args",
        action="append",
        default=None,
        help="argument spec, e.g. 'out:a:f32[n],in:b:f32[n],s:f32=2.0,n:u64=n'; one per kernel, or one shared by all",
    )
    g.add_argument(
        "--grid",
        type=_dims("--grid"),
        default=None,
        help="grid in blocks: 1-3 comma separated numbers or expressions in n, the scalar arguments and "
        "block_x/y/z, e.g. 'ceil(n/256)' or 'cols/32,rows/32' (default: 4 blocks per compute unit, grid-stride)",
    )
    g.add_argument(
        "--block",
        type=_dims("--block"),
        default="256",
        help="block in threads: 1-3 numbers or expressions, e.g. 32,32 (default 256)",
    )
    g.add_argument(
        "--shared-bytes", default="0", help="dynamic shared memory per block: a number or expression, e.g. 'block_x*4'"
    )
    g.add_argument(
        "-I",
        "--include-dir",
        action="append",
        default=[],
        dest="include_dir",
        metavar="DIR",
        help="directory searched for #include files (after the source's own folder); every file read is keyed",
    )
    g.add_argument(
        "--header", action="append", default=[], metavar="FILE", help="header made available under its file name"
    )
    g.add_argument(
        "--option", action="append", default=[], metavar="O", help="compiler option, repeatable (--option=-O3)"
    )
    g.add_argument(
        "--code-object",
        default=None,
        metavar="FILE",
        help="a precompiled code object (hsaco/co for AMD; cubin, fatbin, PTX for NVIDIA; .so for the host) "
        "loaded instead of compiling --source; checked against the device's target",
    )
    g.add_argument(
        "--bytes-per-launch",
        default=None,
        help="bytes one launch moves, int or expression in n (default: sum of buffers)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..bench import StopRule, sweep
    from ..devices import get_device
    from ..kernels import catalog

    if args.source is not None or args.code_object is not None:
        kernels: list[Any] = [_user_kernel(one) for one in _per_kernel(args)]
    else:
        if not _csv(args.kernel):
            raise ConfigError(f"KERNEL {args.kernel!r} names no kernel; expected e.g. triad or triad,copy")
        kernels = [catalog.get(k) for k in _csv(args.kernel)]
    if any(not _csv(chunk) for chunk in args.size):
        raise ConfigError(
            f"--size {next(c for c in args.size if not _csv(c))!r} names no size; expected e.g. 4096, 64KiB, 1MiB"
        )
    sizes = [s for chunk in (args.size or ["1MiB"]) for s in _csv(chunk)]
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
    check_bench_values(
        args, kernels, sizes, stop, _spec_fields(args)
    )  # every value, before a device or compiler starts
    cluster = None
    if args.cluster is not None:
        from ..bench.cluster import parse_cluster

        parse_cluster(args.cluster)  # a bad value fails before anything starts
        if args.source is not None or args.code_object is not None:
            raise ConfigError("--cluster sends catalog kernels by name; a --source kernel runs on one device")
        if args.llc_bytes is not None:
            raise ConfigError(
                "--llc-bytes applies to one device; with --cluster each worker reads its own device's LLC"
            )
        cluster = args.cluster
    _check_outputs(args)  # --out and every --export, before any device or compiler starts
    device = args.device if cluster else get_device(args.device, llc_bytes=args.llc_bytes)
    if not cluster:
        _preflight(kernels, sizes, device)
        _unused_geometry(args, device)
    if stop is not None and not args.json:
        print(adaptive_banner(stop), file=sys.stderr)
    with _terminate_as_interrupt() as got, warnings.catch_warnings():
        from ..bench.counters import CountersSkipped

        warnings.simplefilter("ignore", CountersSkipped)  # said once below, in the command's own words
        try:
            res = sweep(
                kernels,
                sizes,
                _csv(args.rotating),
                _csv(args.flush),
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
                **_spec_fields(args),
            )
        except KeyboardInterrupt as exc:
            print(_kept(exc, args.out), file=sys.stderr)
            return 128 + int(got.get("signal", 2))
        if "signal" in got:  # it came after the last (configuration, unit), and its KeyboardInterrupt was lost
            print(
                f"hipexplore bench: interrupted after the sweep finished: every (configuration, unit) was kept"
                f"{' in ' + str(res.path) if res.path else ''}",
                file=sys.stderr,
            )
            return 128 + int(got["signal"])
    if res.skipped:
        print(_resumed_line(res), file=sys.stderr)
    info = res.info  # the metadata, typed (bench.runinfo.RunInfo)
    _status_lines(info)
    _exports(args, res)
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


def _check_outputs(args: argparse.Namespace) -> None:
    if args.out is not None:
        _check_out(args.out, force=args.force)
        check_out_owner(args.out, resume=not args.no_resume, others=args.resume_from_others, force=args.force)
    _exports(args)


def _exports(args: argparse.Namespace, res: Any = None) -> None:
    """``--export FORMAT FILE``: without a result, check each (the format, the file's folder:
    ``interop.export``); with one, write each."""
    from ..interop.export import check_export_path, check_format, write_export

    for fmt, path in args.export or []:
        if res is None:
            check_format(fmt)
            check_export_path(path)
        else:
            print(
                f"exported ({fmt}): {write_export(fmt, path, res.summary, res.samples, res.metadata)}", file=sys.stderr
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


def _preflight(kernels: list[Any], sizes: list[str], device: Any) -> None:
    """Before anything compiles: evaluate every kernel's launch geometry, buffer counts, scalar
    values and traffic at every size on this device, so a bad expression (``--grid 'n**n'``, a count
    of 0) is one line now, not after the compiles and in the middle of the sweep."""
    from ..bench.spec_checks import parse_size

    for k in kernels:
        for s in sizes:
            try:
                n = k.elements(parse_size(s))
            except ConfigError:
                continue  # a bad size: the sweep names it with the others
            k.launch(n, device)
            k.set_bytes(n)
            k.footprint(n)


def _unused_geometry(args: argparse.Namespace, device: Any) -> None:
    """One line when launch geometry was given for the host: a host kernel is one C call (no grid,
    block or shared memory), so the values were checked (``_preflight``) and are not used. Not a
    refusal: the same command line also runs on a GPU, where they are."""
    given = [
        f"{flag} {value}"
        for flag, value, default in (
            ("--grid", args.grid, None),
            ("--block", args.block, "256"),
            ("--shared-bytes", args.shared_bytes, "0"),
        )
        if value != default and (args.source is not None or args.code_object is not None)
    ]
    if given and device.kind == "host":
        print(
            f"hipexplore bench: {', '.join(given)}: not used on the host (a host kernel is one C call, no launch "
            f"geometry); checked, and used where the device is a GPU",
            file=sys.stderr,
        )


def _tagged_samples(path: Path) -> bool:
    """A samples file hipexplore wrote (its schema tag): a sweep killed before its first summary
    left it; it is a result to start over from, not someone else's file."""
    from ..schema import SAMPLES, schema_of

    try:
        return schema_of(path) == SAMPLES
    except Exception:  # noqa: BLE001 - not a parquet file at all: not ours
        return False


def _check_out(out: str, force: bool) -> None:
    """Before anything runs: refuse to replace a parquet file that is not a hipexplore result."""
    from ..bench.io import output_paths

    samples, _summary, meta = output_paths(out)
    if samples.is_dir():
        raise ConfigError(f"--out {out!r} is a directory; expected a FILE.parquet name")
    if samples.exists() and not meta.exists() and not force and not _tagged_samples(samples):
        raise ConfigError(
            f"--out {out!r} exists and is not a hipexplore result (no {meta.name} beside it); it was left "
            f"as it is: choose another file, or pass --force to replace it"
        )
    parent = samples.parent if str(samples.parent) else Path(".")
    while not parent.exists() and parent != parent.parent:  # the writer makes missing folders: check where it would
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(f"--out {out!r}: {str(parent)!r} is not a directory")
    # access() says yes for root on /proc and on read-only mounts: make (and remove) a file there
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".hipexplore-out-check-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        from ..files import why_no_new_file

        raise ConfigError(
            f"--out {out!r}: cannot create a file in the folder {str(parent)!r} ({why_no_new_file(exc, parent)}); "
            f"give --out a path in a folder you can write (checked before running)"
        ) from None


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
