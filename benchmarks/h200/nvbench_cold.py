"""nvbench's cold measurement of the catalog triad, in this (fresh) process: the reference that
`timing_truth.py` runs beside our l2-write sweep, one process per alternation (a CUDA context and
its allocations differ between processes, so both sides get fresh ones).

nvbench's cold mode: a memset of the L2, a sync, its blocking kernel, one launch; its median per
size is written to --out as JSON {size_bytes: {"median_s", "mean_s", "tags"}}. Needs the
`cuda-bench` package (carried as a wheel in .whl by scripts/h200_all.sh).

Usage (GPU machine): PYTHONPATH=/tmp/site:. python3 benchmarks/h200/nvbench_cold.py --out F.json --sizes-mib 1 16 256
(Extracted unchanged from benchmarks/history/h200_truth.py and truth2_h200.py's --nvbench-only.)
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

MIB = 1 << 20


def nvbench_cold(dev, sizes, json_flag="--json", out_dir=None, spec=None, reads: int = 2, writes: int = 1):
    """nvbench cold medians and means (s) per size for our triad cubin (or ``spec``'s, which moves
    ``reads`` and ``writes`` arrays of the size), launched on nvbench's stream.
    ``json_flag="--jsonbin"`` keeps nvbench's per-sample files too; ``out_dir``: where nvbench.json
    (and nvbench.json-bin/) stay (default: a temporary folder)."""
    import tempfile

    import cuda.bench as bench
    from cuda.bindings import driver as drv

    from hipexplore.bench import rotating as rot
    from hipexplore.kernels import catalog
    from hipexplore.kernels.build import kernel_for

    spec = spec if spec is not None else catalog.get("triad")
    kernel = kernel_for(dev, spec)
    keep = []
    for size in sizes:
        n = spec.elements(size)
        sets = rot.BufferSets(dev, spec, n, 1)
        keep.append(sets)
        grid, block, _shared = spec.launch(n, dev)
        args = sets.args[0]

        def fn(state, grid=grid, block=block, args=args, size=size):
            state.add_global_memory_reads(reads * size)
            state.add_global_memory_writes(writes * size)
            state.exec(
                lambda launch: dev.launch(
                    kernel, grid, block, args, stream=drv.CUstream(launch.get_stream().__cuda_stream__()[1])
                )
            )

        fn.__name__ = f"triad_{size // MIB}MiB"
        bench.register(fn)
    out = Path(out_dir or tempfile.mkdtemp()) / "nvbench.json"
    argv = ["nvbench_cold", json_flag, str(out)]  # a program name, never `python -c`'s "-c" (nvbench parses it)
    bench.run_all_benchmarks(argv)
    root = json.loads(out.read_text())
    res = {}
    for b in root.get("benchmarks", []):
        size = int(b["name"].split("_")[1].replace("MiB", "")) * MIB
        for st in b.get("states", []):
            tags = {s["tag"]: {d["name"]: d.get("value") for d in s.get("data", [])} for s in st.get("summaries", [])}
            med = tags.get("nv/cold/time/gpu/median", {}).get("value")
            mean = tags.get("nv/cold/time/gpu/mean", {}).get("value")
            res[size] = {
                "median_s": float(med) if med is not None else math.nan,
                "mean_s": float(mean) if mean is not None else math.nan,
                "tags": sorted(tags),
            }
    for s in keep:
        s.free()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--sizes-mib", type=float, nargs="+", required=True)
    a = ap.parse_args()
    from hipexplore.devices import get_device

    sizes = [int(s * MIB) for s in a.sizes_mib]
    res = nvbench_cold(get_device("cuda"), sizes)
    Path(a.out).write_text(json.dumps({str(k): v for k, v in res.items()}))


if __name__ == "__main__":
    main()
