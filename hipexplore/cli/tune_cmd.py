"""``hipexplore tune-replay``: compile a split-K GEMM tuning list through the cache and report which
compiles the cache saved, beside the ideal (each unique kernel compiled once)."""

# The docstring above is the command's --help description, word for word. The command's phases, in
# ``run``: check the values and the outputs (``_target``), build the list (``_tuning_list``), then one
# of the replays (``_on_cluster``, ``_rounds``, ``_replay``) and its report (``cli/tune_report.py``).
# The options are registered in ``cli/tune_options.py``, the output files checked in ``cli/tune_outputs.py``.

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import settings
from ..errors import ConfigError
from .tune_options import EPILOG, add_options
from .tune_outputs import check_outputs, export_list
from .tune_report import dry_run, finish

DEFAULT_TARGETS = {"hiprtc": "gfx90a", "nvrtc": "sm_90", "host": "host", "triton": "gfx942"}

#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "tune-replay"
HELP = "replay a split-K GEMM tuning list through the compile cache"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        COMMAND,
        help=HELP,
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = _target(args)
    spec, tlist = _tuning_list(args, target)
    if args.export_list:
        export_list(args, spec, tlist)
    if args.dry_run:
        return dry_run(args, tlist)
    cache_dir = settings.CACHE_DIR.raw()
    if args.cluster is not None:
        return finish(args, _on_cluster(args, tlist, cache_dir))
    args.cache = args.cache or "memory"
    if args.passes is not None:
        return finish(args, _rounds(args, tlist))
    return finish(args, _replay(args, tlist, cache_dir))


def _target(args: argparse.Namespace) -> str:
    """The compiler's target (its default when not given), once every value and output that can be
    checked before the list is built has been."""
    target = DEFAULT_TARGETS[args.compiler] if args.target is None else args.target
    if not target.strip():
        raise ConfigError(f"--target must be a non-empty string; got {args.target!r}")
    check_outputs(args)
    _check_own_cache(args)
    if args.compiler == "triton":
        from ..compile.triton_source import check_target

        target = check_target(target)
    if args.problems is not None and not args.problems.strip(" ,"):
        raise ConfigError(
            "--problems is empty; expected a count N or names from qkv,attn_out,mlp_up,mlp_down "
            "(or the problems of the --list; or leave it out: all of them)"
        )
    return target


def _tuning_list(args: argparse.Namespace, target: str) -> tuple[Any, Any]:
    """The list to replay: ``--list``'s selection (its spec, and the list it expands to) or the
    built-in layer (spec None); Triton's built-in list is its autotune configs."""
    from ..tuning.lists import build_list, select_problems

    if args.list is not None:
        from ..tuning import listfile

        spec = listfile.read(args.list).select(args.problems, args.limit, args.every, args.every_problem)
        return spec, listfile.expand(spec, args.compiler, target)
    if args.every is not None or args.every_problem is not None:
        raise ConfigError(
            "--every and --every-problem select from a --list; the built-in list takes --problems and --limit"
        )
    problems = select_problems(args.problems, tokens=args.tokens, d_model=args.d_model)
    if args.compiler == "triton":  # Triton autotune configs and tails written in Triton (tuning/triton_list.py)
        from ..tuning.triton_list import build_triton_list

        return None, build_triton_list(target, problems=problems, limit=args.limit)
    return None, build_list(args.compiler, target, problems=problems, limit=args.limit)


def _on_cluster(args: argparse.Namespace, tlist: Any, cache_dir: Any) -> Any:
    """``--cluster``: the list over Dask workers sharing the disk tier, one compile per worker."""
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
    return replay_on_cluster(tlist, args.cluster, cache_dir=cache_dir, granularity=gran, salt=not args.no_salt)


def _replay(args: argparse.Namespace, tlist: Any, cache_dir: Any) -> Any:
    """One pass of each scenario on this host (ideal, cache off, the --cache mode's passes), with a
    progress bar on stderr; with Triton, its own cache's passes beside ours."""
    from ..tuning.replay import replay_passes, run_replay

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
    return report


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


if __name__ == "__main__":  # pragma: no cover
    from . import main

    sys.exit(main(["tune-replay", *sys.argv[1:]]))
