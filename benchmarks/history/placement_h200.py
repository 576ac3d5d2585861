"""Does the triad's time depend on where its buffers landed? (issue 9, run-to-run drift).

Rotating sets of distinct allocations, flush none, sizes small enough that every set stays in the
L2: any spread of the per-set medians is placement, not cache state. Repeated ``--runs`` times with
fresh allocations. Usage (GPU): PYTHONPATH=. python3 benchmarks/placement_h200.py --out DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

MIB = 1 << 20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    import hipexplore as hx
    from hipexplore.devices import get_device

    dev = get_device(a.device)
    timers = ("events", "in-kernel") if a.device == "cuda" else ("events",)
    parts = []
    for r in range(a.runs):
        res = hx.sweep(
            "triad",
            [1 * MIB, 4 * MIB],
            [8],
            ["none"],
            device=dev,
            iterations=1600,
            reference=False,
            progress=False,
            timers=timers,
        )
        parts.append(res.samples.assign(rep=r))
    s = pd.concat(parts, ignore_index=True)
    s.to_parquet(out / "placement_samples.parquet")
    t = s.groupby(["size_bytes", "timer", "rep", "buffer_set"]).time_s.median().unstack("buffer_set") * 1e6
    pd.set_option("display.width", 250)
    print(t.round(3).to_string())
    (out / "placement.json").write_text(
        json.dumps({"per_set_median_us": t.round(4).reset_index().to_dict("records")}, default=str)
    )


if __name__ == "__main__":
    main()
