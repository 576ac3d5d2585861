"""``hipexplore tune-replay``: compile a split-K GEMM tuning list through the cache and report which
compiles the cache saved, beside the ideal (each unique kernel compiled once)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from typing import Any

from .. import settings
from ..errors import ConfigError

COMPILERS = ("hiprtc", "nvrtc", "host", "triton")
DEFAULT_TARGETS = {"hiprtc": "gfx90a", "nvrtc": "sm_90", "host": "host", "triton": "gfx942"}

_EPILOG = """\
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
    return lambda text: _positive(text, maximum)


#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "tune-replay"
HELP = "replay a split-K GEMM tuning list through the compile cache"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        COMMAND,
        help=HELP,
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--compiler", required=True, choices=COMPILERS, help="compiler backend")
    p.add_argument(
        "--target",
        default=None,
        help="GPU target (hiprtc: gfx90a; nvrtc: sm_90; host: host; triton: gfx942, gfx950 or sm_90). Default: the one shown",
    )
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
    p.add_argument(
        "--tokens",
        type=_at_most(MAX_TOKENS),
        default=512,
        help=f"rows of every GEMM (batch x sequence; default 512, at most {MAX_TOKENS:,})",
    )
    p.add_argument(
        "--d-model", type=_at_most(MAX_D_MODEL), default=512, help=f"model width (default 512, at most {MAX_D_MODEL:,})"
    )
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..tuning.lists import build_list, select_problems
    from ..tuning.replay import replay_passes, run_replay

    target = DEFAULT_TARGETS[args.compiler] if args.target is None else args.target
    if not target.strip():
        raise ConfigError(f"--target must be a non-empty string; got {args.target!r}")
    _check_outputs(args)
    _check_own_cache(args)
    if args.compiler == "triton":
        from ..compile.triton_source import check_target

        target = check_target(target)
    if args.problems is not None and not args.problems.strip(" ,"):
        raise ConfigError(
            "--problems is empty; expected a count N or names from qkv,attn_out,mlp_up,mlp_down "
            "(or the problems of the --list; or leave it out: all of them)"
        )
    spec = None
    if args.list is not None:
        from ..tuning import listfile

        spec = listfile.read(args.list).select(args.problems, args.limit, args.every, args.every_problem)
        tlist = listfile.expand(spec, args.compiler, target)
    else:
        if args.every is not None or args.every_problem is not None:
            raise ConfigError(
                "--every and --every-problem select from a --list; the built-in list takes --problems and --limit"
            )
        problems = select_problems(args.problems, tokens=args.tokens, d_model=args.d_model)
        if args.compiler == "triton":  # Triton autotune configs and tails written in Triton (tuning/triton_list.py)
            from ..tuning.triton_list import build_triton_list

            tlist = build_triton_list(target, problems=problems, limit=args.limit)
        else:
            tlist = build_list(args.compiler, target, problems=problems, limit=args.limit)
    if args.export_list:
        _export(args, spec, tlist)
    if args.dry_run:
        return _dry_run(args, tlist)
    cache_dir = settings.CACHE_DIR.raw()
    if args.cluster is not None:
        from ..bench.cluster import parse_cluster
        from ..tuning.cluster import replay_on_cluster

        parse_cluster(args.cluster)
        if args.cache not in (None, "disk"):
            raise ConfigError(
                f"--cluster shares compiles through the disk tier; --cache {args.cache} is not shared (use --cache disk)"
            )
        if args.jobs != 1:
            raise ConfigError("--jobs is one compile per worker with --cluster (start more workers instead)")
        gran = "candidate" if args.granularity == "auto" else args.granularity
        report = replay_on_cluster(tlist, args.cluster, cache_dir=cache_dir, granularity=gran, salt=not args.no_salt)
        return _finish(args, report)
    args.cache = args.cache or "memory"
    if args.passes is not None:
        return _finish(args, _rounds(args, tlist))
    bar = (
        None
        if args.quiet
        else _pass_bar(
            replay_passes(
                args.cache, not args.estimate_without_cache, not args.no_ideal, args.ideal_repeats, not args.no_ideal
            )
        )
    )
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
            ideal_repeats=args.ideal_repeats,
            ideal=not args.no_ideal,
            warm_pass=not args.no_ideal,
        )
    finally:
        if bar is not None:
            bar.close()
    if args.compiler == "triton":  # Triton's own TRITON_CACHE_DIR, cold then warm, beside our tiers
        from ..tuning.triton_cache import add_triton_cache_passes

        add_triton_cache_passes(report)
    return _finish(args, report)


def _check_own_cache(args: argparse.Namespace) -> None:
    """Before any pass: a folder the compiler's own cache cannot use (``CUDA_CACHE_PATH`` a file...) is
    one line, and ``--passes`` goes with no option it replaces."""
    from ..compile import compiler_cache

    compiler_cache.check(args.compiler)
    if args.passes is not None and args.cluster is not None:
        raise ConfigError(
            "--passes runs each pass in fresh local compiler processes; --cluster replays over Dask workers "
            "(use one of them)"
        )


def _rounds(args: argparse.Namespace, tlist: Any) -> Any:
    """``--passes N``: every scenario in N alternated rounds (``tuning.baselines``)."""
    from ..tuning.baselines import round_order, run_rounds

    clash = [
        flag
        for flag, given in (
            ("--ideal-repeats", args.ideal_repeats != 1),
            ("--no-ideal", args.no_ideal),
            ("--estimate-without-cache", args.estimate_without_cache),
        )
        if given
    ]
    if clash:
        raise ConfigError(
            f"--passes runs every scenario (the ideal and the cache off included) N times; {clash[0]} "
            f"does not apply to it (leave it out)"
        )
    names = [n for r in range(args.passes) for n in round_order(args.cache, r)]
    bar = None if args.quiet else _pass_bar(names)
    try:
        return run_rounds(
            tlist,
            jobs=args.jobs,
            cache=args.cache,
            passes=args.passes,
            granularity=args.granularity,
            salt=not args.no_salt,
            on_pass=bar.step if bar is not None else None,
        )
    finally:
        if bar is not None:
            bar.close()


def _export(args: argparse.Namespace, spec: Any, tlist: Any) -> None:
    from ..tuning import listfile

    if spec is None:
        if args.compiler == "triton":
            raise ConfigError(
                "--export-list: the built-in Triton list's candidates are Triton configs, not perf configs; "
                "export the built-in list with --compiler hiprtc/nvrtc/host, or give --list"
            )
        spec = listfile.from_builtin(tlist)
    listfile.write(spec, args.export_list)
    if not args.quiet:
        print(
            f"tune-replay: wrote {spec.n_candidates} candidates of {len(spec.problems)} problems to {args.export_list}",
            file=sys.stderr,
        )


def dry_run_info(tlist: Any) -> dict[str, Any]:
    """What a list is, without compiling: kernels, unique kernels, per role, problems, candidates."""
    reqs = tlist.unique_requests
    return {
        "list": tlist.name or "built-in",
        "list_file": tlist.source,
        "compiler": tlist.compiler,
        "target": tlist.target,
        "problems": len(tlist.problems),
        "candidates": tlist.n_candidates,
        "kernels": tlist.kernels,
        "unique_kernels": tlist.unique_kernels,
        "repeated_kernels": tlist.kernels - tlist.unique_kernels,
        "by_role": tlist.counts_by_role(),
        "unique_source_bytes": sum(
            len(r.source.text.encode()) + sum(len(h.text.encode()) for h in r.headers) for r in reqs
        ),
        "headers_per_kernel": max((len(r.headers) for r in reqs), default=0),
    }


def _dry_run(args: argparse.Namespace, tlist: Any) -> int:
    info = dry_run_info(tlist)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(
            f"list {info['list']}{' (' + info['list_file'] + ')' if info['list_file'] else ''}: {info['problems']} problems, "
            f"{info['candidates']} candidates -> {info['kernels']} kernels, {info['unique_kernels']} unique "
            f"({args.compiler} {tlist.target}; nothing compiled)"
        )
        print("  " + ", ".join(f"{r}: {v['kernels']} ({v['unique']} unique)" for r, v in info["by_role"].items()))
    return 0


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
        print(replay_text(out, report.summary_frame()))
    return 1 if out["failed"] else 0


def _check_outputs(args: argparse.Namespace) -> None:
    """Before any work: ``--frame`` and ``--export-list`` can be written, and neither replaces a
    file hipexplore did not write (unless ``--force``)."""
    from ..files import check_replace

    if args.frame:
        check_destination(args.frame, "--frame", ".parquet")
        check_replace(
            args.frame,
            "--frame",
            "a compile-event frame hipexplore wrote",
            lambda _head: _is_frame(args.frame),
            args.force,
        )
    if args.export_list:
        check_destination(args.export_list, "--export-list", ".jsonl")
        check_replace(
            args.export_list,
            "--export-list",
            "a list hipexplore exported",
            lambda head: b'"format": "hipexplore.tuning-list"' in head,
            args.force,
        )


def _is_frame(path: str) -> bool:
    """A parquet file with the compile-event frame's schema tag (what ``--frame`` writes)."""
    from ..schema import TUNING, schema_of

    try:
        return schema_of(path) == TUNING
    except Exception:  # noqa: BLE001 - not a parquet file at all: not ours
        return False


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
    import tempfile

    try:  # access() says yes for root on /proc and on read-only mounts: make (and remove) a file there
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".check", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(
            f"{flag} {path!r}: cannot write there ({exc.strerror or exc}; checked before running)"
        ) from None


class _pass_bar:
    """One tqdm step per replay pass, on stderr (stdout is for the result)."""

    def __init__(self, passes: list[str]) -> None:
        self.total = len(passes)
        self.bar: Any = None  # made at the first pass: an argument refused before it prints nothing but its line

    def step(self, name: str) -> None:
        if self.bar is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=self.total,
                desc="tune-replay",
                unit="pass",
                file=sys.stderr,
                leave=False,
                bar_format="{desc}: {n}/{total} passes |{bar}| {elapsed} {postfix}",
            )
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


def replay_text(out: dict[str, Any], summary) -> str:
    """``hipexplore tune-replay``'s text report of ``out`` and the scenario ``summary`` (public: its tests
    build the rare lines, such as a pass faster than the ideal, from a hand-made report)."""
    lines = [
        f"tune-replay  compiler={out['compiler']} target={out['target']} jobs={out['jobs']} "
        f"cache={out['cache']} isolated={out['isolated']}",
        f"list {out.get('list', 'built-in')}: {len(out['problems'])} problems, {out.get('candidates', '?')} candidates = "
        f"{out['kernels']} kernels, {out['unique_kernels']} unique",
        "  " + ", ".join(f"{r}: {v['kernels']} ({v['unique']} unique)" for r, v in out["by_role"].items()),
        "",
    ]
    cols = [
        "scenario",
        "jobs",
        "lookups",
        "compiles",
        "memory_hits",
        "disk_hits",
        "remote_hits",
        "joins",
        "failed",
        "seconds",
        "compile_seconds",
        "seconds_saved",
    ]
    shown = [
        "scenario",
        "jobs",
        "lookups",
        "compiles",
        "mem_hits",
        "disk_hits",
        "remote",
        "joins",
        "failed",
        "seconds",
        "compile_s",
        "saved_s",
    ]  # short headers: the table fits 120 columns (--json has the full names)
    lines.append(summary[cols].to_string(index=False, header=shown, float_format=lambda v: f"{v:.3f}"))
    ideal = f"{out['seconds_ideal']:.3f}" if out.get("seconds_ideal") is not None else "not measured"
    floor = f"{out['seconds_floor']:.3f}" if out.get("seconds_floor") is not None else "-"
    lines += [
        "",
        f"seconds {out['seconds']:.3f}  ideal pass {ideal}  floor {floor}  "
        f"without cache {out['seconds_without_cache']:.3f} ({out['seconds_without_cache_source']})",
    ]
    if out.get("overhead_vs_ideal") is not None:
        over = out["overhead_vs_ideal"]
        lines.append(f"vs ideal: {100 * over:+.1f}%   speed-up vs no cache: {out['speedup_vs_without_cache']:.2f}x")
        if over < 0:
            lines.append(
                "  (negative: this pass was faster than the ideal pass. The ideal pass is a measured run of each "
                "unique compile, not a bound; timing noise and compiler state warmed by earlier passes can put "
                "a cached pass below it: read it as 'at the ideal'; the floor is the bound)"
            )
    if out.get("ratio_vs_floor") is not None:
        lines.append(
            f"vs floor: {out['ratio_vs_floor']:.3f}x (floor: each unique kernel's fastest measured compile, "
            f"summed over {out['floor_kernels']} kernels from {out['floor_compiles_measured']} compiles, / jobs)"
        )
    if out.get("seconds_saved") is not None:
        lines.append(
            f"saved: {out['seconds_saved']:.3f} s of wall time (without cache - with cache; quote this one). "
            f"Recorded compile time of the hits: {out['seconds_saved_recorded']:.3f} s (serial-equivalent)"
        )
    lines += own_cache_lines(out)
    if out["failed"]:
        lines.append(f"FAILED compiles: {out['failed']} (see the frame's error column)")
    # at most 120 columns: long sentences go on over indented lines (the table is narrower)
    return "\n".join(
        part
        for line in lines
        for part in (textwrap.wrap(line, 120, subsequent_indent="    ", break_on_hyphens=False) or [""])
    )


def own_cache_lines(out: dict[str, Any]) -> list[str]:
    """The compiler's own cache in each scenario, each scenario's pass walls, and the savings against
    every cache off and beyond the compiler's own cache with their 95% intervals (at most 120 columns)."""
    from ..tuning.savings import interval_text

    own = out.get("compiler_cache_by_scenario") or {}
    legend = {label: chr(ord("a") + i) for i, label in enumerate(dict.fromkeys(own.values()))}
    lines = [
        "",
        f"the compiler's own cache (HIPEXPLORE_COMPILER_CACHE={out.get('compiler_cache_setting', 'default')}), "
        f"and each scenario's passes (wall s):",
    ]
    for label, mark in legend.items():
        lines.append(f"  ({mark}) {label}")
    for name, walls in (out.get("pass_walls") or {}).items():
        shown = " ".join(f"{w:.3f}" for w in walls[:8]) + (f" ... ({len(walls)})" if len(walls) > 8 else "")
        lines.append(f"  {name:<15} ({legend.get(own.get(name, ''), '-')})  {shown}")
    names = (
        ("saved_vs_cold", "saved vs cold (every compiler cache off)"),
        ("saved_beyond_compiler_cache", "saved beyond the compiler's own cache"),
        ("warm_beyond_compiler_cache", "both caches warm"),
        ("memory_vs_ideal", "memory / ideal"),
    )
    for key, title in names:
        c = out.get(key)
        if not c:
            how = "--cache disk or all with --passes N" if key == "warm_beyond_compiler_cache" else "--passes N"
            lines.append(f"{title}: not measured (tune-replay {how} measures it)")
            continue
        ratio = f"{c['scenario']} / {c['base']} " if key != "memory_vs_ideal" else ""
        seconds = "" if key == "memory_vs_ideal" else f"{interval_text(c)}; "
        lines.append(f"{title}: {seconds}{ratio}{interval_text(c, 'ratio')}, {c['passes'][0]}+{c['passes'][1]} passes")
    return lines


if __name__ == "__main__":  # pragma: no cover
    from . import main

    sys.exit(main(["tune-replay", *sys.argv[1:]]))
