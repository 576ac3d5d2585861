"""``hipexplore bench``'s options, registered by family: what runs (the sweep's axes), how many
samples, the measurement (``SweepSpec``'s option fields), the device's cache size, what is written
and shown, where the sweep runs, and a user kernel. The order of the calls is the order of ``bench
--help`` and of its usage line.

Why a module of its own: the parser is built for every ``bench --help``, which must stay fast
(tests/cli/test_startup.py): nothing heavy is imported at the top, ``StopRule``'s and
``SweepSpec``'s defaults are read where each family is added (``bench/stats.py``, ``bench/spec.py``,
whose defaults come from ``bench/defaults.py``).
"""

from __future__ import annotations

import argparse
from typing import Any

from .bench_values import MAX_ITERATIONS, field_type, launch_dims, positive_count, shown, size_bytes


def add_options(p: argparse.ArgumentParser) -> None:
    """Every option of ``hipexplore bench``, in the order ``--help`` shows them."""
    _what_runs(p)
    _sampling(p)
    spec_options(p)
    _device_cache(p)
    _outputs(p)
    _where_it_runs(p)
    _user_kernel(p)


def _what_runs(p: argparse.ArgumentParser) -> None:
    """The sweep's axes: KERNEL(s), the device, sizes, rotating buffer sets and flush modes."""
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


def _sampling(p: argparse.ArgumentParser) -> None:
    """How many samples: a fixed ``--iterations``, or the adaptive rule's bounds and targets (its
    defaults are ``StopRule``'s own)."""
    from ..bench.stats import StopRule

    p.add_argument(
        "--iterations",
        type=positive_count("--iterations", MAX_ITERATIONS),
        default=None,
        help=f"fixed samples per configuration (must be >= buffer sets; at most {MAX_ITERATIONS:,}); default adaptive",
    )
    rule = StopRule()  # the adaptive rule's defaults are its own
    p.add_argument(
        "--min-samples",
        type=positive_count("--min-samples", MAX_ITERATIONS),
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


def spec_options(p: argparse.ArgumentParser) -> None:
    """One option per ``SweepSpec`` option field, named after it (``chunk_lead`` -> ``--chunk-lead``; a
    boolean has its ``--no-`` form), its default the spec's (options not given are left to the spec)."""
    from ..bench.spec import options

    g = p.add_argument_group("measurement (SweepSpec fields)")
    for f in options():
        flags = [f"--{f.name.replace('_', '-')}", *([f.metadata["alias"]] if f.metadata.get("alias") else [])]
        text = f"{f.metadata['help']} (default {shown(f.default)})".replace("%", "%%")
        if str(f.type) == "bool":
            g.add_argument(
                *flags, dest=f.name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=text
            )
        elif f.metadata.get("const") is not None:  # the flag alone means const (--counters), or takes a value
            g.add_argument(
                *flags,
                dest=f.name,
                type=field_type(f),
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
                type=field_type(f),
                default=argparse.SUPPRESS,
                metavar=f.metadata.get("metavar"),
                help=text,
            )


def _device_cache(p: argparse.ArgumentParser) -> None:
    """The device's last-level cache size, when what it reports is wrong (the flushes are sized by it)."""
    p.add_argument(
        "--llc-bytes",
        type=size_bytes("--llc-bytes"),
        default=None,
        help="override the last-level cache size the device reports (e.g. 32MiB)",
    )


def _outputs(p: argparse.ArgumentParser) -> None:
    """What is written and shown: the results file and its resume, other tools' formats, JSON, progress."""
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


def _where_it_runs(p: argparse.ArgumentParser) -> None:
    """A worker process or this one, or Dask workers over several GPUs."""
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


def _user_kernel(p: argparse.ArgumentParser) -> None:
    """A kernel of the user's own: its source or code object, entry, arguments and launch geometry."""
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
        type=launch_dims("--grid"),
        default=None,
        help="grid in blocks: 1-3 comma separated numbers or expressions in n, the scalar arguments and "
        "block_x/y/z, e.g. 'ceil(n/256)' or 'cols/32,rows/32' (default: 4 blocks per compute unit, grid-stride)",
    )
    g.add_argument(
        "--block",
        type=launch_dims("--block"),
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


def spec_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The ``SweepSpec`` options given on the command line, by field name (``spec_options`` leaves an
    option not given out of ``args``: the spec's own default applies)."""
    from ..bench.spec import options

    return {f.name: getattr(args, f.name) for f in options() if hasattr(args, f.name)}
