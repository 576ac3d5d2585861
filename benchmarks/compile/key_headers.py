#!/usr/bin/env python3
"""Disk hits of a tuning list's requests with headers keyed in full vs by digest (issue #28).

The kernels of a shipped tuning list share a ~75 KB header set. Keyed in full, every key record held
it (79 KB): each disk hit encoded and decoded it. This times warm disk hits of the same requests in
one process, side by side: the key record as it is (headers by SHA-256) and the former record (header
texts in full, patched in for the comparison only), each on its own disk tier filled first.

    .venv/bin/python benchmarks/compile/key_headers.py --out benchmarks/results/key_headers.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from hipexplore.compile import request as rq
from hipexplore.compile.cache import CompileCache
from hipexplore.provenance import collect
from hipexplore.tuning import listfile
from hipexplore.tuning.replay import make_compiler


def full_text_record(self) -> dict:  # the record before headers were keyed by digest
    r = FORMER(self)
    r["headers"] = [{"name": h.name, "text": h.text} for h in sorted(self.headers, key=lambda s: s.name)]
    return r


FORMER = rq.CompileRequest.record


def hits(reqs, comp, rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        fill = CompileCache(disk_dir=d, remote=False)
        for r in reqs:
            fill.get_or_compile(r, comp)
        times, key_bytes = [], []
        for _ in range(rounds):
            warm = CompileCache(disk_dir=d, remote=False)  # a fresh process's cache: memory empty
            for r in reqs:
                t = time.perf_counter()
                res = warm.get_or_compile(r, comp)
                times.append(time.perf_counter() - t)
                assert res.outcome == "disk-hit", res.outcome
            key_bytes = [len(warm.key_for(r, comp).canonical) for r in reqs]
        return {
            "p50_s": statistics.median(times),
            "mean_s": statistics.fmean(times),
            "n": len(times),
            "key_bytes_median": statistics.median(key_bytes),
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--list", default="llama3-8b")
    ap.add_argument("--compiler", default="nvrtc")
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--kernels", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    tl = listfile.expand(listfile.read(args.list).select(every=12), args.compiler, args.target)
    reqs = list(tl.unique_requests[: args.kernels])
    comp = make_compiler(args.compiler, 1)
    out = {
        "list": args.list,
        "compiler": args.compiler,
        "target": args.target,
        "kernels": len(reqs),
        "header_bytes_median": statistics.median(sum(len(h.text) for h in r.headers) for r in reqs),
    }
    out["by_digest"] = hits(reqs, comp, args.rounds)
    rq.CompileRequest.record = full_text_record
    try:
        out["full_text"] = hits(reqs, comp, args.rounds)
    finally:
        rq.CompileRequest.record = FORMER
    out["provenance"] = {k: str(v) for k, v in collect(compilers=False).items()}
    Path(args.out).write_text(json.dumps(out, indent=1))
    for k in ("by_digest", "full_text"):
        print(
            f"{k:>10}: disk hit p50 {out[k]['p50_s'] * 1e3:.3f} ms, mean {out[k]['mean_s'] * 1e3:.3f} ms, "
            f"key record {out[k]['key_bytes_median'] / 1024:.1f} KiB (n={out[k]['n']})"
        )


if __name__ == "__main__":
    main()
