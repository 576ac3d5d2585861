"""``hipexplore compare``: review verdicts between two runs, or two kernels of one run.

    hipexplore compare BASE.parquet NEW.parquet [--threshold 0.02] [--json]
    hipexplore compare RUN.parquet --base A --new B
    hipexplore compare BASE.json NEW.json          (nvbench or pyperf files, read with their own tools)
    hipexplore compare ... --fail-on slower        (exit 3 when a row is slower: a CI step)

One row per configuration, two answers: the verdict of the decision rule against the threshold
(``hipexplore.compare``), and the measured change new/base with its 95% interval, its direction named
whenever the interval excludes no change (``slower by 1.2% [+1.1%, +1.3%] — below the 2% threshold``);
beside them the Mann-Whitney p-value and the smallest change this noise could call. Configurations only in one run are listed.
"""

from __future__ import annotations

import argparse
import json
import math

from ..errors import ConfigError
from .inputs import threshold


#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "compare"
HELP = "A/B verdicts (faster/slower/same/undecided) between two runs or two kernels of one run"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        COMMAND,
        help=HELP,
        description="Compare two sweeps' samples configuration by configuration, or two kernels of one (interleaved) "
        "run. Decision rule: faster/slower only when the 95% interval of new/base lies wholly beyond "
        "+-threshold; same when wholly within it; otherwise undecided.",
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="BASE NEW (two runs), or one run with --base/--new: a sweep's "
        ".parquet, an nvbench JSON (cuda-bench --json/--jsonbin) or a pyperf JSON file",
    )
    p.add_argument("--base", metavar="KERNEL", help="with one run: the baseline kernel")
    p.add_argument("--new", metavar="KERNEL", help="with one run: the candidate kernel")
    p.add_argument(
        "--threshold",
        type=threshold,
        default=0.02,
        help="practical threshold: a fraction (0.02) or a percentage (2%%) (default 2%%)",
    )
    p.add_argument(
        "--allow-other-device", action="store_true", help="compare runs measured on different devices anyway"
    )
    p.add_argument("--json", action="store_true", help="print the rows as JSON records")
    p.add_argument(
        "--fail-on",
        type=fail_on,
        default=None,
        metavar="VERDICTS",
        help="exit with status 3 when a compared row is slower, faster or undecided (comma separated; any: "
        "all three); 0 otherwise, 2 for a bad input (docs/guide/ci.md)",
    )
    p.set_defaults(func=run)


#: ``--fail-on`` words: each verdict, and ``any`` for every one that is not ``same``
FAIL_ON = ("slower", "faster", "undecided", "any")
#: the exit status when a compared row has a verdict ``--fail-on`` names (2 is a bad input, 1 a crash)
EXIT_FAILED_ON = 3


def fail_on(text: str) -> frozenset[str]:
    """argparse type of ``--fail-on``: comma-separated verdicts (``any``: slower, faster and undecided)."""
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    bad = [w for w in words if w not in FAIL_ON]
    if not words or bad:
        raise argparse.ArgumentTypeError(
            f"expected one or more of {', '.join(FAIL_ON)} (comma separated), got {text!r}"
        )
    return frozenset({"slower", "faster", "undecided"} if "any" in words else words)


def run(args: argparse.Namespace) -> int:
    from ..interop.sides import compare_files

    if len(args.runs) > 2:
        raise ConfigError(f"compare takes one or two runs; got {len(args.runs)}: {args.runs}")
    for path in args.runs:
        check_readable_parquet(path)
    if len(args.runs) == 2:
        if args.base or args.new:
            raise ConfigError("--base/--new compare two kernels of one run; with two runs give neither")
    elif not (args.base and args.new):
        raise ConfigError("one run needs --base KERNEL and --new KERNEL (or give two runs: BASE.parquet NEW.parquet)")
    frame = compare_files(
        list(args.runs),
        base=args.base,
        new=args.new,
        threshold=args.threshold,
        allow_other_device=args.allow_other_device,
    )
    _cite_calibration(frame)
    if args.json:
        from .compare_table import is_reference

        rows = [
            {
                **{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()},
                "reference": is_reference(r),
            }
            for r in frame.to_dict("records")
        ]
        print(
            json.dumps(
                {
                    "rule": frame.attrs["rule"],
                    "threshold": frame.attrs["threshold"],
                    "caveat": frame.attrs.get("caveat", ""),
                    "hint": frame.attrs.get("hint", ""),
                    "source": frame.attrs.get("source_note", ""),
                    "calibration": frame.attrs.get("calibration", ""),
                    "rows": rows,
                },
                default=str,
            )
        )
    else:
        from .compare_table import table

        print(table(frame))
    return failed_on(frame, args.fail_on)


def failed_on(frame, verdicts: frozenset[str] | None) -> int:
    """``EXIT_FAILED_ON`` when a compared row (a cold reference is no change under review) has one of
    ``verdicts``, each such row named on stderr; else 0."""
    import sys

    from .compare_table import is_reference

    if not verdicts:
        return 0
    hit = [
        r
        for r in frame.to_dict("records")
        if r.get("present") == "both" and not is_reference(r) and r.get("verdict") in verdicts
    ]
    for r in hit:
        kern = r.get("kernel") if isinstance(r.get("kernel"), str) else f"{r.get('base_kernel')}->{r.get('new_kernel')}"
        print(
            f"hipexplore compare: --fail-on {','.join(sorted(verdicts))}: {kern} size={r['size_bytes']} "
            f"rotating={r['rotating_requested']} flush={r['flush']} is {r['verdict']} "
            f"({float(r['change']):+.1%})",
            file=sys.stderr,
        )
    return EXIT_FAILED_ON if hit else 0


def _cite_calibration(frame) -> None:
    """The device's recorded A/A calibration, where ``hipexplore calibrate`` kept one (``calibrate.cite``)."""
    from ..calibrate import cite

    frame.attrs["calibration"] = cite(frame.attrs.get("base_metadata", {}) or {})


def check_readable_parquet(path: str) -> None:
    """A run that exists but is no parquet file (truncated, another format) is one line, not
    pyarrow's traceback; a missing one is left to ``verdicts.compare`` (it says what it expected), and
    a JSON file (nvbench, pyperf) to its reader."""
    from pathlib import Path

    from ..interop.sides import detect

    p = Path(path)
    if not p.is_file() or detect(p) != "parquet":
        return
    try:
        import pyarrow.parquet as pq

        pq.read_schema(p)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(
            f"run {path!r} is not a readable parquet file ({first[:200]}); expected a sweep's samples "
            f".parquet file (hipexplore bench --out)"
        ) from None


def table(frame) -> str:
    """The table at 120 columns (``compare_table.table``; the name kept for callers of this module)."""
    from .compare_table import table as laid_out

    return laid_out(frame)
