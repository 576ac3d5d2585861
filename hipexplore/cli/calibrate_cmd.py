"""``hipexplore calibrate``: this device's A/A false-verdict rate, the coverage of its intervals and
the smallest change resolved at the defaults (``hipexplore.calibrate``).

    hipexplore calibrate --device host                      (about 2-3 min)
    hipexplore calibrate --device cuda --sizes 1MiB,16MiB   (about 4-5 min)

Prints a line per kind of row (interleaved copies, their cold references, separate runs) with its
false-verdict rate and coverage, each with a 95% Wilson interval, and the minimum detectable change
per size; keeps the result where ``compare`` and the report cite it (``--out`` writes a copy).
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from .inputs import threshold

COMMAND = "calibrate"
HELP = "A/A calibration: how often identical code is called different on this device, and the smallest change resolved"


def _positive(text: str) -> float:
    import math

    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and 10 <= v <= 3600):
        raise argparse.ArgumentTypeError(f"expected seconds between 10 and 3600, got {text!r}")
    return v


def _rounds(text: str) -> int:
    if not text.isdigit() or not 2 <= int(text) <= 50:
        raise argparse.ArgumentTypeError(f"expected a whole number of rounds from 2 to 50, got {text!r}")
    return int(text)


def _iterations(text: str) -> int:
    if not text.isdigit() or not 8 <= int(text) <= 100_000:
        raise argparse.ArgumentTypeError(f"expected a whole number of samples from 8 to 100000, got {text!r}")
    return int(text)


def _units(text: str) -> int | str:
    if text == "auto":
        return text
    if not text.isdigit() or not 1 <= int(text) <= 6:
        raise argparse.ArgumentTypeError(f"expected auto or a number of units from 1 to 6, got {text!r}")
    return int(text)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        COMMAND,
        help=HELP,
        description=(
            "Measure a kernel and its byte-identical copy interleaved, in rounds, at the default stop rule and units; "
            "count the faster/slower verdicts (all false) among the interleaved rows and among consecutive rounds compared "
            "as separate runs, and how many intervals hold 1. Keeps the result for this device (HIPEXPLORE_CALIBRATION_DIR)."
        ),
    )
    p.add_argument("--device", default="auto", help="auto, host, cuda, hip (optionally :INDEX); default auto")
    p.add_argument(
        "--sizes",
        default=None,
        metavar="S,S",
        help="bytes per array, comma separated (default: 64KiB,256KiB on the host; 1MiB,16MiB,256MiB on a GPU)",
    )
    p.add_argument("--flush", default="none", help="flush modes, comma separated (default none)")
    p.add_argument(
        "--budget",
        type=_positive,
        default=None,
        metavar="S",
        help="wall time for the rounds in seconds (default 120 on the host, 250 on a GPU); at least 2 rounds run",
    )
    p.add_argument("--rounds", type=_rounds, default=None, help="a fixed number of rounds instead of the time budget")
    p.add_argument(
        "--iterations",
        type=_iterations,
        default=None,
        metavar="N",
        help="fixed samples per configuration instead of the adaptive default (a quick look: the record says "
        "it is not at the defaults)",
    )
    p.add_argument("--units", type=_units, default="auto", help="units per configuration (default auto, as bench's)")
    p.add_argument("--threshold", type=threshold, default=0.02, help="the verdicts' practical threshold (default 2%%)")
    p.add_argument("--out", default=None, metavar="FILE.json", help="also write the record here")
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..calibrate import calibrate, report_text, store

    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()] if args.sizes is not None else None
    if sizes is not None and not sizes:
        raise ConfigError(f"--sizes {args.sizes!r} names no size; expected e.g. 64KiB,1MiB")
    if sizes:
        from ..bench.spec_checks import parse_size

        for s in sizes:
            parse_size(s)  # a bad size is one line now, not after the device starts
    flush = [f.strip() for f in args.flush.split(",") if f.strip()]
    if args.out:
        from ..interop.export import check_export_path

        check_export_path(args.out, "--out")

    def progress(text: str) -> None:
        if not args.no_progress:
            print(f"hipexplore calibrate: {text}", file=sys.stderr, flush=True)

    record = calibrate(
        args.device,
        sizes,
        flush,
        budget_s=args.budget,
        rounds=args.rounds,
        threshold=args.threshold,
        iterations=args.iterations,
        units=args.units,
        progress=progress,
    )
    kept = store(record, args.out)
    if args.json:
        print(json.dumps(record, default=float))
    else:
        print(report_text(record))
        print(f"kept: {kept}" + (f" and {args.out}" if args.out else ""))
    return 0
