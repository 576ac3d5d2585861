"""``hipexplore report``: run the dashboard notebook and write one self-contained HTML report
(noise | compile time saved | cache hits, plus a provenance table)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ConfigError
from .inputs import threshold


def positive_seconds(text: str) -> float:
    """The argparse type of ``--timeout``: a positive finite number of seconds, else argparse's one-line
    refusal (public: its tests pin the refusal of 0, negatives, NaN and infinity)."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "report"
HELP = "run the dashboard notebook and export a self-contained HTML report"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        COMMAND,
        help=HELP,
        description="Run the dashboard notebook (notebooks/dashboard.py) through papermill (kernel hipexplore) on the chosen device "
        "(default: the best available, the host CPU here) and export one HTML file with static figures "
        "and a provenance table.",
    )
    p.add_argument(
        "--params",
        metavar="FILE",
        help="YAML or JSON file of notebook parameters (device, kernel, sizes, "
        "rotating, flush, iterations, compiler, target, data: 'live' or a folder of recorded parquet files)",
    )
    p.add_argument(
        "--baseline",
        metavar="RUN.parquet|KERNEL",
        help="A/B review (notebooks/review.py): the baseline run, or with --run the baseline kernel",
    )
    p.add_argument(
        "--candidate",
        metavar="RUN.parquet|KERNEL",
        help="A/B review: the candidate run, or with --run the candidate kernel",
    )
    p.add_argument("--run", metavar="RUN.parquet", help="A/B review of two kernels of one (interleaved) run")
    p.add_argument(
        "--threshold",
        type=threshold,
        default=None,
        help="A/B review: practical threshold, a fraction (0.02) or a percentage (2%%) (default 2%%)",
    )
    p.add_argument(
        "--out",
        default="report.html",
        metavar="FILE",
        help="HTML file to write (default: report.html); with --format markdown a folder",
    )
    p.add_argument(
        "--format",
        choices=("html", "markdown"),
        default="html",
        help="markdown: an A/B review as a pull-request comment, DIR/comment.md (at most 65,536 characters) "
        "with its plots as PNG files beside it and DIR/report.html (docs/guide/ci.md)",
    )
    p.add_argument(
        "--show-input",
        action="store_true",
        help="show the notebook's code cells (hidden by default: the report is "
        "text, figures and tables, readable at 900 px)",
    )
    p.add_argument(
        "--no-input", action="store_true", help=argparse.SUPPRESS
    )  # the default now; kept for old command lines
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--device", metavar="NAME", help="override the 'device' parameter (auto, host, cuda, hip, ...)")
    p.add_argument(
        "--notebook-out", metavar="FILE", help="keep the executed notebook here (default: not kept after a success)"
    )
    p.add_argument(
        "--force", action="store_true", help="replace an --out or --notebook-out file that hipexplore did not write"
    )
    p.add_argument(
        "--timeout",
        type=positive_seconds,
        default=900,
        metavar="S",
        help="per-cell time limit in seconds (default: 900)",
    )
    p.set_defaults(func=run)


def command_line(args: argparse.Namespace) -> list[str]:
    """The command as parsed (so it is right also when ``main(argv)`` is called in-process)."""
    cmd = ["hipexplore", "report"]
    if args.params:
        cmd += ["--params", args.params]
    for flag in ("baseline", "candidate", "run"):
        if getattr(args, flag, None):
            cmd += [f"--{flag}", getattr(args, flag)]
    if getattr(args, "threshold", None) is not None:
        cmd += ["--threshold", f"{args.threshold:g}"]
    cmd += ["--out", args.out]
    if getattr(args, "format", "html") != "html":
        cmd += ["--format", args.format]
    if args.show_input:
        cmd.append("--show-input")
    if args.device:
        cmd += ["--device", args.device]
    if args.notebook_out:
        cmd += ["--notebook-out", args.notebook_out]
    if args.timeout != 900:
        cmd += ["--timeout", f"{args.timeout:g}"]
    return cmd


def run(args: argparse.Namespace) -> int:
    from ..extras import require_modules
    from ..report.workspace import RUN_MODULES

    require_modules(RUN_MODULES, "hipexplore report", "notebook")  # before any work, not as a traceback after it
    from ..report import build_report, load_params

    if args.params is not None:
        from .inputs import read_text_file

        read_text_file(args.params, "--params")  # a directory, unreadable or not UTF-8: one line, not a traceback
    params = load_params(args.params)
    if args.device:
        params["device"] = args.device
    notebook = "review" if (args.baseline or args.candidate or args.run or "baseline" in params) else "dashboard"
    if notebook == "review":
        params.update(review_parameters(args))
    elif args.threshold is not None:
        raise ConfigError("--threshold belongs to an A/B review: give --baseline and --candidate too")
    command = command_line(args)

    def build(out: str) -> Any:
        return build_report(
            params,
            out=out,
            no_input=not args.show_input,
            command=command,
            notebook_out=args.notebook_out,
            timeout=args.timeout,
            progress=not args.quiet,
            notebook=notebook,
            force=args.force,
        )

    if getattr(args, "format", "html") == "markdown":
        from .report_markdown import run_markdown

        return run_markdown(args, params, build)
    result = build(args.out)
    kept = f" (executed notebook: {result.notebook})" if result.notebook else ""
    print(f"wrote {result.html}{kept}")
    return 0


def review_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """--baseline/--candidate (two runs) or --run with --baseline/--candidate (two kernels) as the
    review notebook's parameters."""
    out: dict[str, Any] = {}
    if args.threshold is not None:
        from ..verdict_rule import check_threshold

        out["threshold"] = check_threshold(args.threshold)  # now, not in the notebook's third cell
    if args.run:
        if not (args.baseline and args.candidate):
            raise ConfigError("--run needs --baseline KERNEL and --candidate KERNEL")
        out.update(baseline=args.run, candidate="none", base_kernel=args.baseline, new_kernel=args.candidate)
    elif args.baseline or args.candidate:
        if not (args.baseline and args.candidate):
            raise ConfigError("an A/B review needs both --baseline and --candidate")
        out.update(baseline=args.baseline, candidate=args.candidate)
    return out
