#!/usr/bin/env python3
"""GPU: does CUPTI's range profiler, called through ``hipexplore.bench.counters.cupti_api``, count
what the counter pass needs, and what does it cost? (issue 35: the pass in the counting unit's own
worker instead of under Nsight Compute.)

On torch's context (torch launches the kernels; nothing of hipexplore's pipeline runs here), per
range mode (``user``: a range pushed/popped around each counted launch; ``auto``: one per kernel):
- chip, hardware passes of the four metrics (DRAM read/write, L2 lookup hit/miss) and of the DRAM pair;
- a 1 MiB-per-array add, c = a + b, on 1 set (warm: DRAM read ~0), on 40 sets in rotation (cold:
  ~2 MiB read per launch), and on 1 set after a 256 MiB write flush between launches, outside the
  ranges (cold, and the flush's own traffic must not be in the ranges);
- the cost: 200 launches with a range each against the same 200 launches without the profiler;
- each L2 metric set alone (``l2_alone``): whether the L2 counters fit one hardware pass without the
  DRAM pair (on GH100 they do not: ``data/counters/h100-cupti-groups/``, whose probe tried the lookups'
  pair as a second group of one session).

    PYTHONPATH=. python3 benchmarks/h200/cupti_probe.py --out DIR     (writes DIR/cupti_probe.json)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hipexplore.bench.counters.cupti_api import RangeSession, find_cupti  # noqa: E402

FOUR = (
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_lookup_hit.sum",
    "lts__t_sectors_lookup_miss.sum",
)
N = 1 << 18  # floats: 1 MiB per array


def scenario(torch, session, mode: str, sets: int, flush, launches: int) -> dict:
    a = [torch.rand(N, device="cuda") for _ in range(sets)]
    b = [torch.rand(N, device="cuda") for _ in range(sets)]
    c = [torch.empty(N, device="cuda") for _ in range(sets)]
    for i in range(2 * sets):  # the rotation warmed up, unprofiled
        torch.add(a[i % sets], b[i % sets], out=c[i % sets])
    torch.cuda.synchronize()
    session.begin(4 * launches + 64)
    t0 = time.perf_counter()
    for i in range(launches):
        if flush is not None:
            flush.fill_(float(i))
        if mode == "user":
            session.push(str(i))
        torch.add(a[i % sets], b[i % sets], out=c[i % sets])
        if mode == "user":
            session.pop()
    torch.cuda.synchronize()
    enqueue_s = time.perf_counter() - t0
    ranges, dropped = session.end()
    total_s = time.perf_counter() - t0
    return {
        "sets": sets,
        "flush": flush is not None,
        "launches": launches,
        "dropped": dropped,
        "ranges": len(ranges),
        "names": sorted({r.name for r in ranges})[:6],
        "values": [r.values for r in ranges][:60],
        "enqueue_s": enqueue_s,
        "total_s": total_s,
    }


def l2_alone() -> dict:
    """Each L2 metric set the pass tries (``cupti.METRIC_SETS`` less the DRAM pair) in a session of its own:
    its hardware passes, or why it was refused (on GH100 the DRAM pair with them needs two; do they alone?)."""
    from hipexplore.bench.counters.cupti import DRAM_ONLY, METRIC_SETS

    doc: dict = {}
    for metrics in METRIC_SETS[:-1]:
        l2 = tuple(m for m in metrics if m not in DRAM_ONLY)
        try:
            session = RangeSession(l2, mode="user")
            doc[" ".join(l2)] = {"passes": session.passes}
            session.close()
        except Exception as exc:  # noqa: BLE001 - recorded, the next one goes on
            doc[" ".join(l2)] = {"error": f"{type(exc).__name__}: {exc}"}
    return doc


def bare(torch, launches: int) -> float:
    a, b, c = (torch.rand(N, device="cuda") for _ in range(3))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(launches):
        torch.add(a, b, out=c)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    torch.zeros(1, device="cuda")
    doc: dict = {"library": find_cupti(), "torch": torch.__version__, "bare_200_s": bare(torch, 200)}
    for mode in ("user", "auto"):
        for metrics in (FOUR, FOUR[:2]):
            key = f"{mode}-{len(metrics)}"
            t0 = time.perf_counter()
            try:
                session = RangeSession(metrics, mode=mode)
                doc[key] = {"open_s": time.perf_counter() - t0, "chip": session.chip, "passes": session.passes}
                flush = torch.empty(64 << 20, device="cuda")
                for name, sets, fl, n in (
                    ("warm-1set", 1, None, 24),
                    ("cold-40sets", 40, None, 80),
                    ("l2write-1set", 1, flush, 24),
                    ("cost-200", 1, None, 200),
                ):
                    try:
                        doc[key][name] = scenario(torch, session, mode, sets, fl, n)
                    except Exception as exc:  # noqa: BLE001 - recorded, the next one goes on
                        doc[key][name] = {"error": f"{type(exc).__name__}: {exc}", "tb": traceback.format_exc()[-1500:]}
                session.close()
            except Exception as exc:  # noqa: BLE001
                doc[key] = {"error": f"{type(exc).__name__}: {exc}", "tb": traceback.format_exc()[-1500:]}
            (out / "cupti_probe.json").write_text(json.dumps(doc, indent=1, default=str))
    doc["l2_alone"] = l2_alone()
    (out / "cupti_probe.json").write_text(json.dumps(doc, indent=1, default=str))
    for key, v in doc.items():
        if not isinstance(v, dict):
            print(key, v)
            continue
        print(key, {k: x for k, x in v.items() if not isinstance(x, dict)})
        for name, r in v.items():
            if isinstance(r, dict):
                reads = [x["dram__bytes_read.sum"] for x in r.get("values", []) if "dram__bytes_read.sum" in x]
                med = sorted(reads)[len(reads) // 2] if reads else None
                head = [{k: round(v) for k, v in x.items()} for x in r.get("values", [])[:3]]
                print(
                    f"  {name}: ranges {r.get('ranges')} dropped {r.get('dropped')} names {r.get('names')} "
                    f"median DRAM read {med} first three {head} enqueue {r.get('enqueue_s')} total {r.get('total_s')} "
                    f"{r.get('error', '')}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
