"""``hipexplore tune-replay``: compile a split-K GEMM tuning list through the cache and report which
compiles the cache saved, beside the ideal (each unique kernel compiled once)."""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from .. import settings
from ..errors import ConfigError

COMPILERS = ("hiprtc", "nvrtc", "host", "triton")
DEFAULT_TARGETS = {"hiprtc": "gfx90a", "nvrtc": "sm_90", "host": "host", "triton": "gfx942"}

_EPILOG = """\
What is measured (all in this one run, after a warm-up compile per worker):
  seconds_ideal          wall time of compiling each unique kernel once, fresh, no cache, same --jobs
  seconds_without_cache  measured: the whole list with the cache off (every entry compiles); with
                         --estimate-without-cache: the sum of the recorded compile time of every entry
  seconds                wall time of the whole list through the cache mode chosen by --cache
Cache directory (--cache disk): $HIPEXPLORE_CACHE_DIR when set (its first pass is "disk-cold" only
if it is empty), else a private temporary directory that is removed afterwards. The disk mode runs
twice: cold, then warm in a fresh cache object on the same directory.
Exit status: 0 ok, 1 some compiles failed (they are counted in "failed"), 2 bad arguments."""


#: largest GEMM dimensions the list accepts: a transformer layer's rows (batch x sequence) and width
MAX_TOKENS = 1 << 20
MAX_D_MODEL = 1 << 16


def _positive(text: str, maximum: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if maximum is not None and value > maximum:
        raise argparse.ArgumentTypeError(f"{text} is more than the maximum, {maximum:,}")
    return value


def _at_most(maximum: int):
    return lambda text: _positive(text, maximum)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune-replay",
        help="replay a split-K GEMM tuning list through the compile cache",
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--compiler", required=True, choices=COMPILERS, help="compiler backend")
    p.add_argument("--target", default=None,
                   help="GPU target (hiprtc: gfx90a; nvrtc: sm_90; host: host; triton: gfx942, gfx950 or sm_90). Default: the one shown")
    p.add_argument("--jobs", type=_positive, default=1,
                   help="compiles at once: a thread pool of N over an isolated compiler with N worker processes (default 1)")
    p.add_argument("--granularity", choices=("candidate", "kernel", "scheduled"), default="candidate",
                   help="unit of parallel work: a whole candidate, as a tuner's worker builds it (default), each kernel, or "
                        "scheduled: each kernel, passing over one in flight on another worker while other work is queued")
    p.add_argument("--cache", choices=("off", "memory", "disk", "all"), default=None,
                   help="cache mode (default memory; disk with --cluster, the only mode workers share; all: memory, "
                        "then disk cold and warm, in one run)")
    p.add_argument("--cluster", default=None, metavar="local:N|tcp://HOST:PORT",
                   help="compile over Dask workers sharing the disk tier ($HIPEXPLORE_CACHE_DIR, or a temporary directory "
                        "on one host); every event records its worker")
    p.add_argument("--problems", default=None,
                   help="transformer-layer GEMMs to tune: a count N (the first N) or names from qkv,attn_out,mlp_up,mlp_down (default all)")
    p.add_argument("--limit", type=_positive, default=None, help="candidates per problem (default all 12: 4 tiles x split-K 1,2,4)")
    p.add_argument("--tokens", type=_at_most(MAX_TOKENS), default=512, help=f"rows of every GEMM (batch x sequence; default 512, at most {MAX_TOKENS:,})")
    p.add_argument("--d-model", type=_at_most(MAX_D_MODEL), default=512, help=f"model width (default 512, at most {MAX_D_MODEL:,})")
    p.add_argument("--estimate-without-cache", action="store_true",
                   help="skip the cache-off pass; seconds_without_cache = sum of recorded compile times")
    p.add_argument("--no-salt", action="store_true",
                   help="compile every pass from the same sources (by default each pass gets its own salt in the source text, so "
                        "no pass profits from the compiler's own caching of an earlier pass)")
    p.add_argument("--frame", default=None, metavar="PATH.parquet", help="write the compile-event frame (all scenarios) here")
    p.add_argument("--json", action="store_true", help="machine-readable output (alone on stdout; progress stays on stderr)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..tuning.lists import build_list, select_problems
    from ..tuning.replay import replay_passes, run_replay

    target = args.target or DEFAULT_TARGETS[args.compiler]
    if not target.strip():
        raise ConfigError(f"--target must be a non-empty string; got {args.target!r}")
    if args.frame:
        check_destination(args.frame, "--frame", ".parquet")
    problems = select_problems(args.problems, tokens=args.tokens, d_model=args.d_model)
    if args.compiler == "triton":  # Triton autotune configs and tails written in Triton (tuning/triton_list.py)
        from ..compile.triton_source import check_target
        from ..tuning.triton_list import build_triton_list

        tlist = build_triton_list(check_target(target), problems=problems, limit=args.limit)
    else:
        tlist = build_list(args.compiler, target, problems=problems, limit=args.limit)
    cache_dir = settings.CACHE_DIR.raw()
    if args.cluster is not None:
        from ..bench.cluster import parse_cluster
        from ..tuning.cluster import replay_on_cluster

        parse_cluster(args.cluster)
        if args.cache not in (None, "disk"):
            raise ConfigError(f"--cluster shares compiles through the disk tier; --cache {args.cache} is not shared (use --cache disk)")
        if args.jobs != 1:
            raise ConfigError("--jobs is one compile per worker with --cluster (start more workers instead)")
        report = replay_on_cluster(tlist, args.cluster, cache_dir=cache_dir, granularity=args.granularity, salt=not args.no_salt)
        return _finish(args, report)
    args.cache = args.cache or "memory"
    bar = None if args.quiet else _pass_bar(replay_passes(args.cache, not args.estimate_without_cache))
    try:
        report = run_replay(
            tlist,
            on_pass=bar.step if bar is not None else None,
            jobs=args.jobs,
            cache=args.cache,
            cache_dir=cache_dir if args.cache in ("disk", "all") else None,
            measure_without_cache=not args.estimate_without_cache,
            granularity=args.granularity,
            salt=not args.no_salt,
        )
    finally:
        if bar is not None:
            bar.close()
    if args.compiler == "triton":  # Triton's own TRITON_CACHE_DIR, cold then warm, beside our tiers
        from ..tuning.triton_cache import add_triton_cache_passes

        add_triton_cache_passes(report)
    return _finish(args, report)


def _finish(args: argparse.Namespace, report: Any) -> int:
    from ..provenance import collect

    out = report.to_json()
    if "worker" in report.frame.columns:
        out["workers"] = report.frame.groupby("worker").size().to_dict()
    provenance = collect(command=None)
    if args.frame:
        from ..schema import TUNING, write_parquet

        write_parquet(report.frame, args.frame, TUNING, provenance)  # tagged: the report knows it by its tag
        out["frame"] = args.frame
    if args.json:
        out["provenance"] = provenance
        print(json.dumps(out, indent=2, default=_json_default))
    else:
        print(_text(out, report.summary_frame()))
    return 1 if out["failed"] else 0


def check_destination(path: str, flag: str, suffix: str) -> None:
    """Before the work starts: ``path`` must end in ``suffix`` and its directory must exist and be
    writable, so a long run never ends in a write error that loses its results."""
    import os
    from pathlib import Path

    p = Path(path)
    if p.suffix.lower() != suffix:
        raise ConfigError(f"{flag} must name a {suffix} file; got {path!r}")
    if p.is_dir():
        raise ConfigError(f"{flag} {path!r} is a directory; expected a {suffix} file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"{flag} {path!r}: directory {str(parent)!r} does not exist (checked before running)")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ConfigError(f"{flag} {path!r}: cannot write there (checked before running)")


class _pass_bar:
    """One tqdm step per replay pass, on stderr (stdout is for the result)."""

    def __init__(self, passes: list[str]) -> None:
        self.total = len(passes)
        self.bar: Any = None  # made at the first pass: an argument refused before it prints nothing but its line

    def step(self, name: str) -> None:
        if self.bar is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=self.total, desc="tune-replay", unit="pass", file=sys.stderr, leave=False,
                            bar_format="{desc}: {n}/{total} passes |{bar}| {elapsed} {postfix}")
        else:
            self.bar.update(1)
        self.bar.set_postfix_str(name)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.update(1)
            self.bar.close()


def _json_default(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return str(obj)


def _text(out: dict[str, Any], summary) -> str:
    lines = [
        f"tune-replay  compiler={out['compiler']} target={out['target']} jobs={out['jobs']} "
        f"cache={out['cache']} isolated={out['isolated']}",
        f"list: {len(out['problems'])} problems x {out['candidates_per_problem']} candidates = "
        f"{out['kernels']} kernels, {out['unique_kernels']} unique",
        "  " + ", ".join(f"{r}: {v['kernels']} ({v['unique']} unique)" for r, v in out["by_role"].items()),
        "",
    ]
    cols = ["scenario", "jobs", "lookups", "compiles", "memory_hits", "disk_hits", "remote_hits", "joins", "failed", "seconds", "compile_seconds", "seconds_saved"]
    lines.append(summary[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    lines += [
        "",
        f"seconds {out['seconds']:.3f}  ideal {out['seconds_ideal']:.3f}  "
        f"without cache {out['seconds_without_cache']:.3f} ({out['seconds_without_cache_source']})",
    ]
    if out.get("overhead_vs_ideal") is not None:
        over = out["overhead_vs_ideal"]
        lines.append(f"vs ideal: {100 * over:+.1f}%   speed-up vs no cache: {out['speedup_vs_without_cache']:.2f}x")
        if over < 0:
            lines.append("  (negative: this pass was faster than the ideal pass. The ideal is one measured run of each "
                         "unique compile, not a bound; timing noise and compiler state warmed by earlier passes can put "
                         "a cached pass below it: read it as 'at the ideal')")
    if out.get("seconds_saved") is not None:
        lines.append(f"saved: {out['seconds_saved']:.3f} s of wall time (without cache - with cache; quote this one). "
                     f"Recorded compile time of the hits: {out['seconds_saved_recorded']:.3f} s (serial-equivalent)")
    if out["failed"]:
        lines.append(f"FAILED compiles: {out['failed']} (see the frame's error column)")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    from . import main

    sys.exit(main(["tune-replay", *sys.argv[1:]]))
