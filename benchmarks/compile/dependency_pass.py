#!/usr/bin/env python3
"""What the compiler's own dependency listing costs a cache miss, beside the compile it precedes.

Why: a miss whose request might read files outside itself first runs the compiler's make-dependency
mode (NVRTC ``-Xcudafe -M``; ``compile.implicit``), so the key holds those files. The fast path
(``reads_only_request``) skips it for requests that provably read only their own headers. Until
the fast path learned that a whole-line ``//`` comment is no directive, every kernel of the shipped
tuning lists (whose prelude says "includes" in a comment) paid the listing on each unique compile.

Side by side in one process, on the same requests: the dependency listing and the compile, and
how many of each list's unique requests take the fast path.

    python benchmarks/compile/dependency_pass.py --out benchmarks/results/dependency_pass.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--list", default="llama3-8b")
    ap.add_argument("--requests", type=int, default=20, help="unique requests timed (every third of the list's first)")
    ap.add_argument("--compiles", type=int, default=5)
    args = ap.parse_args()
    from hipexplore.compile.implicit import reads_only_request
    from hipexplore.compile.registry import get_compiler
    from hipexplore.provenance import collect
    from hipexplore.tuning import listfile

    tl = listfile.expand(listfile.read(args.list), "nvrtc", "sm_90")
    unique = list({(e.request.source.text, e.request.options): e.request for e in tl.entries}.values())
    fast = sum(reads_only_request(r, nvrtc=True) for r in unique)
    reqs = unique[: 3 * args.requests : 3]
    comp = get_compiler("nvrtc")
    comp.dependencies(reqs[0])  # load the library first
    dep, com = [], []
    for i, r in enumerate(reqs):  # alternating: a listing, and for the first few a compile, of the same request
        t = time.perf_counter()
        comp.dependencies(r)
        dep.append(time.perf_counter() - t)
        if i < args.compiles:
            t = time.perf_counter()
            comp.compile(r)
            com.append(time.perf_counter() - t)
    meta = collect(compilers=False)
    out = {
        "list": args.list,
        "compiler": "nvrtc",
        "target": "sm_90",
        "unique_requests": len(unique),
        "list_requests": len(tl.entries),
        "fast_path_requests": fast,
        "dependency_listing_s": dep,
        "compile_s": com,
        "dependency_median_s": statistics.median(dep),
        "compile_median_s": statistics.median(com),
        "share_of_compile": statistics.median(dep) / statistics.median(com),
        "provenance": {k: str(v) for k, v in meta.items()},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(
        f"{args.list}: {fast} of {len(unique)} unique requests take the fast path; dependency listing median "
        f"{out['dependency_median_s'] * 1e3:.1f} ms (n={len(dep)}), compile median {out['compile_median_s'] * 1e3:.0f} ms "
        f"(n={len(com)}): {out['share_of_compile']:.1%} of a compile"
    )


if __name__ == "__main__":
    main()
