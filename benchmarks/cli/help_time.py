#!/usr/bin/env python3
"""Issue 48 item 6: how long ``hipexplore bench --help`` takes against ``hipexplore --help`` (fresh
processes, the commands interleaved, median of N each), with the host's load beside the figures.

    python3 benchmarks/cli/help_time.py --rounds 7 [--python .venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

COMMANDS = {"bench --help": ["bench", "--help"], "--help": ["--help"], "tune-replay --help": ["tune-replay", "--help"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args(argv)
    if a.rounds < 1:
        print(f"help_time.py: error: --rounds must be >= 1, got {a.rounds}", file=sys.stderr)
        return 2
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    load_before = os.getloadavg()
    for _ in range(a.rounds):
        for name, args in COMMANDS.items():
            t0 = time.perf_counter()
            subprocess.run([a.python, "-m", "hipexplore", *args], check=True, capture_output=True)
            times[name].append(time.perf_counter() - t0)
    out = {
        "rounds": a.rounds,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "median_ms": {k: round(1000 * statistics.median(v), 1) for k, v in times.items()},
        "min_ms": {k: round(1000 * min(v), 1) for k, v in times.items()},
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
