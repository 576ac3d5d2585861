"""``hipexplore compare``: review verdicts between two runs, or two kernels of one run.

    hipexplore compare BASE.parquet NEW.parquet [--threshold 0.02] [--json]
    hipexplore compare RUN.parquet --base A --new B

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
    p.add_argument("runs", nargs="+", metavar="RUN.parquet", help="BASE NEW (two runs), or one run with --base/--new")
    p.add_argument("--base", metavar="KERNEL", help="with one run: the baseline kernel")
    p.add_argument("--new", metavar="KERNEL", help="with one run: the candidate kernel")
    p.add_argument("--threshold", type=threshold, default=0.02,
                   help="practical threshold: a fraction (0.02) or a percentage (2%%) (default 2%%)")
    p.add_argument("--allow-other-device", action="store_true", help="compare runs measured on different devices anyway")
    p.add_argument("--json", action="store_true", help="print the rows as JSON records")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..verdicts import compare

    if len(args.runs) > 2:
        raise ConfigError(f"compare takes one or two runs; got {len(args.runs)}: {args.runs}")
    for path in args.runs:
        check_readable_parquet(path)
    if len(args.runs) == 2:
        if args.base or args.new:
            raise ConfigError("--base/--new compare two kernels of one run; with two runs give neither")
        frame = compare(args.runs[0], args.runs[1], threshold=args.threshold, allow_other_device=args.allow_other_device)
    else:
        if not (args.base and args.new):
            raise ConfigError("one run needs --base KERNEL and --new KERNEL (or give two runs: BASE.parquet NEW.parquet)")
        frame = compare(args.runs[0], base=args.base, new=args.new, threshold=args.threshold)
    if args.json:
        rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                for r in frame.to_dict("records")]
        print(json.dumps({"rule": frame.attrs["rule"], "threshold": frame.attrs["threshold"],
                          "caveat": frame.attrs.get("caveat", ""), "hint": frame.attrs.get("hint", ""), "rows": rows},
                         default=str))
        return 0
    print(table(frame))
    return 0


def check_readable_parquet(path: str) -> None:
    """A run that exists but is no parquet file (truncated, another format) is one line, not
    pyarrow's traceback; a missing one is left to ``verdicts.compare`` (it says what it expected)."""
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        return
    try:
        import pyarrow.parquet as pq

        pq.read_schema(p)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"run {path!r} is not a readable parquet file ({first[:200]}); expected a sweep's samples "
                          f".parquet file (hipexplore bench --out)") from None


def _count(value) -> str:
    """A unit count as a whole number: the column is float when a configuration present in one run
    only leaves it NaN, and "4.0" units read as a measured fraction."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def table(frame) -> str:
    """One line per configuration with both answers: the verdict against the threshold, and the
    measured change with its interval, named (faster/slower) whenever the interval excludes no
    change (``verdicts.change_text``): ``same  slower by 1.2% [+1.1%, +1.3%] — below the 2% threshold``."""
    from ..verdicts import DEFAULT_THRESHOLD, change_text
    from ..verdicts import size_text as format_bytes  # no matplotlib: this table is printed on GPU machines too
    from ..report.headline import p_note  # no matplotlib either (27 ms)

    thr = float(frame.attrs.get("threshold", DEFAULT_THRESHOLD))
    lines = [f"decision rule: {frame.attrs['rule']}", *([f"note: {frame.attrs['caveat']}"] if frame.attrs.get("caveat") else []),
             f"{'kernel':<24} {'size':>9} {'rot':>4} {'flush':<14} {'timer':<9} {'units':>5} {'p':>8} {'min det.':>8}  "
             f"{'verdict':<9}  measured change new/base [95% interval] — against the threshold"]
    for r in frame.to_dict("records"):
        kern = r.get("kernel") or f"{r['base_kernel']}→{r['new_kernel']}"
        head = f"{str(kern)[:24]:<24} {format_bytes(r['size_bytes']):>9} {str(r['rotating_requested']):>4} {r['flush']:<14} {r['timer']:<9}"
        if r["present"] != "both":
            lines.append(f"{head} {'':>5} {'':>8} {'':>8}  ({r['note']})")
            continue
        base_units, new_units = _count(r.get("base_units", 1)), _count(r.get("new_units", 1))
        units = f"{base_units}/{new_units}" if base_units != new_units else base_units
        # an undecided row with a tiny p says why both stand (report.headline.p_note, as the report does)
        why = "; ".join(filter(None, [p_note(r, thr), r.get("note") or ""])) if r["verdict"] == "undecided" else ""
        note = f"  ({why})" if why else ""
        lines.append(f"{head} {units:>5} {r['p_value']:>8.2g} {r['min_detectable']:>8.1%}  {r['verdict']:<9}  "
                     f"{change_text(r, thr)}{note}")
    if frame.attrs.get("hint"):
        lines.append(f"hint: {frame.attrs['hint']}")
    return "\n".join(lines)
