#!/usr/bin/env python3
"""In-process vs worker-process sweep medians, interleaved, in one run (issue 10, part 6).

The worker changes *where* a sweep runs (a fresh interpreter with its own device), not how it is
timed; this prints and records the medians of the same triad both ways, rounds interleaved so a
clock drift hits both alike.

    PYTHONPATH=. python3 benchmarks/h200/worker_medians.py --device host --out /tmp/wm      # here
    PYTHONPATH=. python3 benchmarks/h200/worker_medians.py --device cuda --out DIR          # on the H200
Writes DIR/worker_medians.json (one record per size: the medians of each round, their ratio).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def measure(device: str, sizes: list[str], rounds: int, iterations: int) -> list[dict]:
    import hipexplore as hx
    from hipexplore.bench.spec_checks import parse_size
    from hipexplore.devices import get_device

    dev = get_device(device)
    out = []
    try:
        for size in sizes:
            meds: dict[str, list[float]] = {"in-process": [], "worker": []}
            for _ in range(rounds):
                for mode in ("in-process", "worker"):
                    res = hx.sweep(
                        "triad",
                        [size],
                        device=dev,
                        iterations=iterations,
                        reference=False,
                        progress=False,
                        worker=(mode == "worker"),
                    )
                    meds[mode].append(float(res.summary["median_s"].iloc[0]))
            a, b = statistics.median(meds["in-process"]), statistics.median(meds["worker"])
            out.append(
                {
                    "device": dev.name,
                    "size_bytes": parse_size(size),
                    "in_process_medians_s": meds["in-process"],
                    "worker_medians_s": meds["worker"],
                    "in_process_s": a,
                    "worker_s": b,
                    "ratio": b / a,
                }
            )
    finally:
        dev.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="host")
    p.add_argument("--out", required=True)
    p.add_argument("--sizes", default="64KiB,1MiB,16MiB")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=200)
    a = p.parse_args(argv)
    t0 = time.time()
    rows = measure(a.device, [s for s in a.sizes.split(",") if s], a.rounds, a.iterations)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "worker_medians.json").write_text(json.dumps({"rows": rows, "seconds": time.time() - t0}, indent=2))
    for r in rows:
        print(
            f"{r['size_bytes']:>10} B  in-process {r['in_process_s'] * 1e6:9.3f} us  worker {r['worker_s'] * 1e6:9.3f} us  "
            f"ratio {r['ratio']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
