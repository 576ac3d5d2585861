"""``hipexplore tune-replay``'s options, registered by family: what compiles, how the work runs, which
list, which passes, the built-in layer's size, what is measured, and what is written and shown (the
order of the calls is the order of ``tune-replay --help``), with the epilog that explains what is
measured and the argparse types of the counts.

Why a module of its own: registering the options is one job, apart from replaying the list
(``cli/tune_cmd.py``) and reporting it (``cli/tune_report.py``); nothing here imports more than argparse.
"""

from __future__ import annotations

import argparse

COMPILERS = ("hiprtc", "nvrtc", "host", "triton")

EPILOG = """\
Lists: without --list, a small built-in transformer layer (--problems, --limit, --tokens, --d-model);
with --list FILE (or the name of a shipped list: llama3-8b, resnet50; data/tuning/lists/), the GEMMs of
a real model x their perf-config candidates (format: hipexplore/tuning/listfile.py); --problems,
--limit and --every select from it. --dry-run prints the list's kernels and unique_kernels and
compiles nothing; --export-list FILE writes the list in use (in that format).
What is measured (all in this one run, after a warm-up compile per worker):
  seconds_ideal          wall time of compiling each unique kernel once, fresh, no cache, same --jobs
                         (a measured pass, the fastest of --ideal-repeats; not a bound)
  seconds_floor          the bound: each unique kernel's fastest compile measured in this run, summed,
                         / jobs (or the slowest kernel when larger); no compiling pass is below it
  seconds_without_cache  measured: the whole list with the cache off (every entry compiles); with
                         --estimate-without-cache: the sum of the recorded compile time of every entry
  seconds                wall time of the whole list through the cache mode chosen by --cache
Cache directory (--cache disk): $HIPEXPLORE_CACHE_DIR when set (its first pass is "disk-cold" only
if it is empty), else a private temporary directory that is removed afterwards. The disk mode runs
twice: cold, then warm in a fresh cache object on the same directory.
Exit status: 0 ok, 1 some compiles failed (they are counted in "failed"), 2 bad arguments."""


#: largest GEMM dimensions the list accepts: a transformer layer's rows (batch x sequence) and width
MAX_TOKENS = 1 << 20
#: the most compiles at once: each is a worker process (a billion of them was a MemoryError traceback)
MAX_JOBS = 256
MAX_D_MODEL = 1 << 16


def _positive(text: str, maximum: int | None = None) -> int:
    """argparse type: a positive integer, at most ``maximum`` (a very long one is not echoed whole)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if maximum is not None and value > maximum:
        raise argparse.ArgumentTypeError(
            f"{text if len(text) <= 40 else text[:20] + f'... ({len(text)} digits)'} is more than the maximum, {maximum:,}"
        )
    return value


def _at_most(maximum: int):
    """argparse type: a positive integer, at most ``maximum``."""
    return lambda text: _positive(text, maximum)


def add_options(p: argparse.ArgumentParser) -> None:
    """Every option of ``hipexplore tune-replay``, in the order ``--help`` shows them."""
    _what_compiles(p)
    _how_it_runs(p)
    _which_list(p)
    _passes(p)
    _built_in_layer(p)
    _measurement(p)
    _outputs(p)


def _what_compiles(p: argparse.ArgumentParser) -> None:
    """The compiler backend and its target."""
    p.add_argument("--compiler", required=True, choices=COMPILERS, help="compiler backend")
    p.add_argument(
        "--target",
        default=None,
        help="GPU target (hiprtc: gfx90a; nvrtc: sm_90; host: host; triton: gfx942, gfx950 or sm_90). Default: the one shown",
    )


def _how_it_runs(p: argparse.ArgumentParser) -> None:
    """Compiles at once, the unit of parallel work, the cache mode, and Dask workers."""
    p.add_argument(
        "--jobs",
        type=_at_most(MAX_JOBS),
        default=1,
        help="compiles at once: a thread pool of N over an isolated compiler with N worker processes (default 1)",
    )
    p.add_argument(
        "--granularity",
        choices=("auto", "candidate", "kernel", "scheduled"),
        default="auto",
        help="unit of parallel work: scheduled: each kernel, passing over one in flight on another worker while "
        "other work is queued; candidate: a whole candidate, as a tuner's worker builds it; kernel: each "
        "kernel in list order. Default auto: scheduled with --jobs > 1 (the fastest), candidate serially "
        "and with --cluster",
    )
    p.add_argument(
        "--cache",
        choices=("off", "memory", "disk", "all"),
        default=None,
        help="cache mode (default memory; disk with --cluster, the only mode workers share; all: memory, "
        "then disk cold and warm, in one run)",
    )
    p.add_argument(
        "--cluster",
        default=None,
        metavar="local:N|tcp://HOST:PORT",
        help="compile over Dask workers sharing the disk tier ($HIPEXPLORE_CACHE_DIR, or a temporary directory "
        "on one host); every event records its worker",
    )


def _which_list(p: argparse.ArgumentParser) -> None:
    """The tuning list, what is selected from it, and whether it is only shown or exported."""
    p.add_argument(
        "--list",
        default=None,
        metavar="FILE|NAME",
        help="a tuning list file (JSON Lines, see hipexplore/tuning/listfile.py) or a shipped list's name "
        "(llama3-8b, resnet50); default: the built-in transformer layer",
    )
    p.add_argument(
        "--problems",
        default=None,
        help="GEMMs to tune: a count N (the first N) or names (built-in: qkv,attn_out,mlp_up,mlp_down; default all)",
    )
    p.add_argument(
        "--limit",
        type=_positive,
        default=None,
        help="the first N candidates of each problem (built-in default all 12: 4 tiles x split-K 1,2,4)",
    )
    p.add_argument(
        "--every",
        type=_positive,
        default=None,
        metavar="K",
        help="with --list: keep every K-th candidate of the list (a reduced-scale run with the list's mix)",
    )
    p.add_argument(
        "--every-problem",
        type=_positive,
        default=None,
        metavar="K",
        help="with --list: keep every K-th problem with all its candidates (a reduced-scale run that keeps "
        "the list's repetition of tails)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="expand the list and print its kernels and unique_kernels (and per role); compile nothing",
    )
    p.add_argument(
        "--export-list",
        default=None,
        metavar="FILE.jsonl",
        help="write the list in use (after --problems/--limit/--every) as a list file, for --list",
    )


def _passes(p: argparse.ArgumentParser) -> None:
    """The ideal pass's repeats, alternated rounds of every scenario, or no ideal at all."""
    p.add_argument(
        "--ideal-repeats",
        type=_at_most(100),
        default=1,
        metavar="N",
        help="measure the ideal pass N times, each repeat followed by a memory pass of its own (--cache "
        "memory/all); each side reads its fastest pass (default 1)",
    )
    p.add_argument(
        "--passes",
        type=_at_most(100),
        default=None,
        metavar="N",
        help="run every scenario N times in alternated rounds, each pass in fresh compiler processes: ideal, "
        "cold (every compiler cache off), off, compiler-cache (the compiler's own cache alone, warm) and "
        "the --cache mode's passes; the savings against cold and beyond the compiler's own cache get 95%% "
        "intervals (N >= 2). Default: one pass each of ideal, off and the --cache mode, as before",
    )
    p.add_argument(
        "--no-ideal",
        action="store_true",
        help="skip the warm-up pass and the ideal (e.g. a second tuning run on a warm --cache disk directory: "
        "only the cache's own passes are timed)",
    )


def _built_in_layer(p: argparse.ArgumentParser) -> None:
    """The built-in transformer layer's GEMM sizes."""
    p.add_argument(
        "--tokens",
        type=_at_most(MAX_TOKENS),
        default=512,
        help=f"rows of every GEMM (batch x sequence; default 512, at most {MAX_TOKENS:,})",
    )
    p.add_argument(
        "--d-model", type=_at_most(MAX_D_MODEL), default=512, help=f"model width (default 512, at most {MAX_D_MODEL:,})"
    )


def _measurement(p: argparse.ArgumentParser) -> None:
    """How the cache-off time is had, and whether each pass's sources are salted."""
    p.add_argument(
        "--estimate-without-cache",
        action="store_true",
        help="skip the cache-off pass; seconds_without_cache = sum of recorded compile times",
    )
    p.add_argument(
        "--no-salt",
        action="store_true",
        help="compile every pass from the same sources (by default each pass gets its own salt in the source text, so "
        "no pass profits from the compiler's own caching of an earlier pass)",
    )


def _outputs(p: argparse.ArgumentParser) -> None:
    """The frame file, replacing files, JSON, and progress."""
    p.add_argument(
        "--frame", default=None, metavar="PATH.parquet", help="write the compile-event frame (all scenarios) here"
    )
    p.add_argument(
        "--force", action="store_true", help="replace a --frame or --export-list file that hipexplore did not write"
    )
    p.add_argument(
        "--json", action="store_true", help="machine-readable output (alone on stdout; progress stays on stderr)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
