"""Review verdicts on the H200 (issue 11, done-when), in one run.

A. A kernel made 5% slower by design, swept interleaved against its original over 1-256 MiB:
   ``stream`` (a[i] = s * b[i]: 8 bytes per element) and ``stream_plus5`` (the same, plus d[i] added
   for the first tenth of the elements: 8.4 bytes per element, 5% more traffic). Where the kernel is
   bandwidth-bound it should be called ``slower``; where it is not (small sizes: launch latency and
   L2), or where the noise does not allow a call at ±2%, the verdict says so (``undecided`` with its
   ``min_detectable``; ``same`` where the extra traffic costs nothing measurable).
B. The same kernel twice in one interleaved run (``stream`` vs ``stream_twin``, identical code):
   no ``faster`` / ``slower`` is allowed.
C. Two runs of one sweep of ``stream`` back to back (not interleaved), compared run against run:
   no ``faster`` / ``slower`` is allowed (drift between runs is reported by ``bench.drift`` too).

Usage (GPU machine): PYTHONPATH=. python3 benchmarks/h200/verdicts_ab.py --out DIR [--quick]
Writes DIR/verdicts.json (every table, and the pass/fail of B and C), DIR/*.parquet (the runs,
readable by ``hipexplore compare`` and ``hipexplore report --run ... --baseline ... --candidate ...``)
and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

MIB = 1 << 20

STREAM_CU = r"""
extern "C" __global__ void hx_stream(float* __restrict__ a, const float* __restrict__ b,
                                     const float* __restrict__ d, float s, unsigned long long m,
                                     unsigned long long n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = s * b[i];
    if (i < m) v += d[i];  /* m = n/10: 0.4 more bytes per element than 8, i.e. +5% traffic */
    a[i] = v;
  }
}
"""
#: a host twin, so the script can be smoke-tested off the GPU (--device host --sizes 64KiB,256KiB)
STREAM_C = r"""
void hx_stream(float* restrict a, const float* restrict b, const float* restrict d, float s,
               unsigned long long m, unsigned long long n) {
  for (unsigned long long i = 0; i < n; ++i) { float v = s * b[i]; if (i < m) v += d[i]; a[i] = v; }
}
"""
ARGS = "out:a:f32[n],in:b:f32[n],in:d:f32[n],s:f32=2.0,m:u64={m},n:u64=n"


def register() -> None:
    from hipexplore.kernels import user_kernel

    for name, m, bpl in (
        ("stream", "0", "8*n"),
        ("stream_twin", "0", "8*n"),
        ("stream_plus5", "n//10", "8*n + 4*(n//10)"),
    ):
        user_kernel(STREAM_CU, "hx_stream", ARGS.format(m=m), name=name, bytes_per_launch=bpl, host_source=STREAM_C)


def records(frame) -> list[dict]:
    cols = [
        c
        for c in (
            "kernel",
            "base_kernel",
            "new_kernel",
            "size_bytes",
            "flush",
            "present",
            "base_median_s",
            "new_median_s",
            "ratio",
            "ratio_ci_low",
            "ratio_ci_high",
            "p_value",
            "half_width",
            "min_detectable",
            "verdict",
            "interval",
            "note",
        )
        if c in frame.columns
    ]
    out = []
    for r in frame[cols].to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})
    return out


def show(title: str, frame) -> None:
    from hipexplore.cli.compare_cmd import table

    print(f"\n== {title}\n{table(frame)}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="sizes 1, 16, 256 MiB and a shorter stop rule")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sizes", default=None, help="comma separated sizes (default 1-256 MiB)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import hipexplore as hx
    from hipexplore.bench import StopRule, sweep
    from hipexplore.bench.drift import run_to_run
    from hipexplore.devices import get_device

    register()
    dev = get_device(args.device)
    from hipexplore.bench.spec_checks import parse_size

    sizes = [1 * MIB, 16 * MIB, 256 * MIB] if args.quick else [1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]
    if args.sizes:
        sizes = [parse_size(x) for x in args.sizes.split(",")]
    stop = StopRule(target_ci=0.004, min_samples=200, timeout_s=4.0 if args.quick else 8.0)
    flush = ["none", "l2-read"] if dev.kind != "host" else ["none"]
    result: dict = {"device": dev.name, "sizes": sizes, "flush": flush, "stop": repr(stop)}
    t0 = time.time()

    # A + B: one interleaved run of the three kernels
    ab = sweep(
        ["stream", "stream_plus5", "stream_twin"],
        sizes,
        [1],
        flush,
        device=dev,
        stop=stop,
        interleave=True,
        interleave_seed=11,
        reference=False,
        progress=False,
        out=out / "interleaved.parquet",
        resume=False,
    )
    slower = hx.compare(ab, base="stream", new="stream_plus5")
    twin = hx.compare(ab, base="stream", new="stream_twin")
    show("A. stream_plus5 (+5% traffic) vs stream, interleaved", slower)
    show("B. stream_twin (identical) vs stream, interleaved", twin)

    # C: two runs back to back
    runs = []
    for i in range(2):
        runs.append(
            sweep(
                ["stream"],
                sizes,
                [1],
                flush,
                device=dev,
                stop=stop,
                reference=False,
                progress=False,
                out=out / f"back_to_back_{i}.parquet",
                resume=False,
            )
        )
    b2b = hx.compare(runs[0], runs[1])
    show("C. stream, run 2 vs run 1 (back to back)", b2b)
    drift = run_to_run([r.summary for r in runs])
    print("\n== C. drift between the two runs (bench.drift.run_to_run)\n" + drift.to_string(), flush=True)

    false_b = twin[twin["verdict"].isin(["faster", "slower"])]
    false_c = b2b[b2b["verdict"].isin(["faster", "slower"])]
    called = slower[slower["verdict"] == "slower"]
    result.update(
        {
            "A_plus5_vs_stream": records(slower),
            "A_called_slower_at": [int(s) for s in called["size_bytes"]],
            "A_not_called_at": [
                {
                    "size_bytes": int(r["size_bytes"]),
                    "flush": r["flush"],
                    "verdict": r["verdict"],
                    "min_detectable": r["min_detectable"],
                    "change": r["ratio"] - 1,
                }
                for r in slower[slower["verdict"] != "slower"].to_dict("records")
            ],
            "B_twin_vs_stream": records(twin),
            "B_false_verdicts": len(false_b),
            "C_back_to_back": records(b2b),
            "C_false_verdicts": len(false_c),
            "C_drift": drift.to_dict("records"),
            "seconds": time.time() - t0,
        }
    )
    (out / "verdicts.json").write_text(json.dumps(result, indent=1, default=str))
    print(
        f"\nA: slower at {result['A_called_slower_at']} of {len(slower)} configurations; "
        f"B false verdicts: {len(false_b)}; C false verdicts: {len(false_c)}; {result['seconds']:.0f} s; "
        f"wrote {out / 'verdicts.json'}"
    )


if __name__ == "__main__":
    main()
