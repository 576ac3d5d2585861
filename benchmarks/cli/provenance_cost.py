"""What a run's provenance costs, two trees side by side (fourth session of 2026-12-06).

Every sweep records the machine, the packages and each compiler's version (``provenance.collect``).
Until 6dd1ea5 the compiler versions came from ``compiler_info()``, whose identities hash the
compilers' files (Triton's whole Python source tree, libnvrtc, cc1): paid once per process, by
every ``hipexplore bench`` and ``report`` and by each test process that sweeps. This times, in fresh
processes alternating between the trees: the CPU of the first ``collect()`` (after numpy and pandas
are imported, so only provenance is counted), and the CPU of a small real host bench
(``hipexplore bench triad --device host --size 16KiB --iterations 10``, children included).

Usage: python benchmarks/cli/provenance_cost.py --old DIR [--rounds 5] [--out FILE.json]
(DIR: ``git archive REV hipexplore | tar -x -C DIR``; this tree is the checkout it runs from)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
FIRST = (
    "import time, numpy, pandas\nfrom hipexplore.provenance import collect\n"
    "t = time.process_time(); collect(); print(time.process_time() - t)"
)


def _env(tree: Path, home: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(tree), HOME=str(home), HIPEXPLORE_CACHE_DIR=str(home / "cache"))


def first_collect(tree: Path, home: Path) -> float:
    # cwd: a folder without hipexplore/ (``-c`` puts the working directory first on sys.path)
    out = subprocess.run(
        [sys.executable, "-c", FIRST], env=_env(tree, home), capture_output=True, text=True, check=True, cwd=home
    )
    return float(out.stdout.strip().splitlines()[-1])


def small_bench(tree: Path, home: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child and its children) of one small host bench."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "hipexplore",
                "bench",
                "triad",
                "--device",
                "host",
                "--size",
                "16KiB",
                "--iterations",
                "10",
                "--no-progress",
                "--out",
                str(Path(d) / "t.parquet"),
            ],
            env=_env(tree, home),
            capture_output=True,
            check=True,
            cwd=d,
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - t0, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="a tree of the older revision (holds hipexplore/)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    trees = {"old": Path(args.old).resolve(), "this": HERE}
    rows = []
    with tempfile.TemporaryDirectory() as h:
        home = Path(h)
        for tree in trees.values():  # warm-up: bytecode, the compile cache
            first_collect(tree, home), small_bench(tree, home)
        for r in range(args.rounds):
            for label, tree in trees.items():
                wall, cpu = small_bench(tree, home)
                rows.append(
                    {
                        "round": r,
                        "tree": label,
                        "first_collect_cpu_s": first_collect(tree, home),
                        "bench_wall_s": wall,
                        "bench_cpu_s": cpu,
                    }
                )
    for label in trees:
        mine = [x for x in rows if x["tree"] == label]
        print(
            f"{label:>5}: first collect() CPU median {statistics.median(x['first_collect_cpu_s'] for x in mine):.3f} s; "
            f"small host bench CPU median {statistics.median(x['bench_cpu_s'] for x in mine):.2f} s, "
            f"wall {statistics.median(x['bench_wall_s'] for x in mine):.2f} s ({len(mine)} rounds)"
        )
    if args.out:
        Path(args.out).write_text(json.dumps({"rounds": rows, "load": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
