"""``hipexplore report``: run the dashboard notebook and write one self-contained HTML report
(noise | compile time saved | cache hits, plus a provenance table)."""
from __future__ import annotations

import argparse


def _seconds(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="run the dashboard notebook and export a self-contained HTML report",
        description="Run notebooks/dashboard.ipynb through papermill (kernel hipexplore) on the chosen device "
        "(default: the best available, the host CPU here) and export one HTML file with static figures "
        "and a provenance table.",
    )
    p.add_argument("--params", metavar="FILE", help="YAML or JSON file of notebook parameters (device, kernel, sizes, "
                   "rotating, flush, iterations, compiler, target, data: 'live' or a folder of recorded parquet files)")
    p.add_argument("--out", default="report.html", metavar="FILE", help="HTML file to write (default: report.html)")
    p.add_argument("--show-input", action="store_true", help="show the notebook's code cells (hidden by default: the report is "
                   "text, figures and tables, readable at 900 px)")
    p.add_argument("--no-input", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old command lines
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--device", metavar="NAME", help="override the 'device' parameter (auto, host, cuda, hip, ...)")
    p.add_argument("--notebook-out", metavar="FILE", help="keep the executed notebook here (default: not kept after a success)")
    p.add_argument("--timeout", type=_seconds, default=900, metavar="S", help="per-cell time limit in seconds (default: 900)")
    p.set_defaults(func=run)


def command_line(args: argparse.Namespace) -> list[str]:
    """The command as parsed (so it is right also when ``main(argv)`` is called in-process)."""
    cmd = ["hipexplore", "report"]
    if args.params:
        cmd += ["--params", args.params]
    cmd += ["--out", args.out]
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
    from ..report import build_report, load_params

    params = load_params(args.params)
    if args.device:
        params["device"] = args.device
    command = command_line(args)
    result = build_report(params, out=args.out, no_input=not args.show_input, command=command,
                          notebook_out=args.notebook_out, timeout=args.timeout, progress=not args.quiet)
    kept = f" (executed notebook: {result.notebook})" if result.notebook else ""
    print(f"wrote {result.html}{kept}")
    return 0
