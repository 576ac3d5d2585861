#!/usr/bin/env python3
"""H200: bring your own kernel (issue 10), end to end, every result written under --out.

In one process: a templated 2-D transpose swept over sizes with grid expressions; a row softmax
with dynamic shared memory; a stencil whose coefficients come from a header in an -I directory
(then the header edited and swept again); a cubin compiled by ``hipexplore compile --out`` and
swept through ``--code-object``; a torch add through ``callable_kernel`` - each with rotating sets
{1, 4} and flushes {none, l2-write}, output-checked against NumPy. Then a kernel writing through
NULL at 16 MiB (the sweep runs in a worker by default: the error names kernel and configuration,
the finished sizes are kept) followed by a good sweep, in a worker and in this process; and the
in-process vs worker medians of the triad (benchmarks/h200/worker_medians.py).

    PYTHONPATH=. python3 benchmarks/h200/own_kernels.py --out data/byok_h200
Outputs: <name>.parquet (+ .summary.parquet, .meta.json) per sweep, byok.json (what ran, errors,
the fault text, medians), byok_sources/ (the kernels and the header as swept).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
import traceback
from pathlib import Path

MIB = 1 << 20
ROT, FLUSH = [1, 4], ["none", "l2-write"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="bring-your-own-kernel run on a CUDA GPU")
    p.add_argument("--out", required=True)
    p.add_argument("--iterations", type=int, default=100)
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    import hipexplore as hx
    from hipexplore.cli import main as cli
    from hipexplore.devices import get_device

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # on sys.path in sweep workers too
    from fixtures import (
        byok_examples as ex,
    )  # tests/fixtures/byok_examples.py: the kernels tests/gpu/test_gpu_byok.py checks
    from hipexplore.kernels.catalog import user_kernel

    src = ex.write_sources(out / "byok_sources")
    inc = src["stencil.cu"].parent / "include"
    dev = get_device("cuda")
    report: dict = {"device": dev.name, "target": dev.target, "runs": {}, "errors": {}}

    def sweep(name, kernel, sizes, **kw):
        t0 = time.time()
        args = dict(
            rotating=ROT,
            flush=FLUSH,
            iterations=a.iterations,
            reference=True,
            reference_samples=20,
            progress=False,
            out=out / f"{name}.parquet",
            resume=False,
        )
        args.update(kw)
        try:
            res = hx.sweep(kernel, sizes, device=dev, **args)
            s = res.summary
            report["runs"][name] = {
                "seconds": time.time() - t0,
                "checks": {k: v for k, v in res.metadata.items() if k.startswith("verify.")},
                "summary": s[
                    ["size_bytes", "rotating", "flush", "n", "median_s", "bandwidth_gbs", "bias", "warning"]
                ].to_dict("records"),
            }
            print(f"{name}: {len(s)} configurations in {time.time() - t0:.1f} s")
        except Exception as exc:  # recorded, and the run goes on
            report["errors"][name] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}"
            print(f"{name}: FAILED {type(exc).__name__}: {exc}")

    sweep(
        "transpose",
        user_kernel(
            src["transpose.cu"],
            "transpose_tiled<32, 8>",
            ex.TRANSPOSE_ARGS,
            name="transpose",
            grid="cols/32,rows/32",
            block="32,8",
            bytes_per_launch="8*n",
            reference=ex.transpose_ref,
            register_it=False,
        ),
        [1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB],
    )
    sweep(
        "softmax",
        user_kernel(
            src["softmax.cu"],
            "row_softmax",
            ex.SOFTMAX_ARGS,
            name="softmax",
            grid="rows",
            block=256,
            shared_bytes="block_x*4",
            bytes_per_launch="8*n",
            reference=ex.softmax_ref,
            rtol=1e-4,
            atol=1e-7,
            register_it=False,
        ),
        [1 * MIB, 16 * MIB, 128 * MIB],
    )
    stencil = user_kernel(
        src["stencil.cu"],
        "stencil5",
        ex.STENCIL_ARGS,
        name="stencil",
        grid="ceil(n/256)",
        block=256,
        include_dirs=[inc],
        bytes_per_launch="8*n",
        reference=ex.stencil_ref_for(0.5, 0.2, 0.05),
        register_it=False,
    )
    sweep("stencil", stencil, [1 * MIB, 16 * MIB, 256 * MIB])
    (inc / "stencil_coeffs.h").write_text(ex.stencil_header(0.6, 0.1, 0.1))
    sweep(
        "stencil_edited", dataclasses.replace(stencil, reference=ex.stencil_ref_for(0.6, 0.1, 0.1)), [1 * MIB, 16 * MIB]
    )

    cubin = out / "byok_sources" / "saxpy.cubin"
    rc = cli(
        [
            "compile",
            str(src["saxpy.cu"]),
            "--compiler",
            "nvrtc",
            "--target",
            dev.target,
            "--kernel",
            "saxpy",
            "--out",
            str(cubin),
            "--no-cache",
        ]
    )
    report["cubin_compile_rc"] = rc
    sweep(
        "cubin_saxpy",
        user_kernel(
            None,
            "saxpy",
            ex.SAXPY_ARGS,
            name="cubin_saxpy",
            code_object=cubin,
            grid="ceil(n/256)",
            block=256,
            bytes_per_launch="12*n",
            reference=ex.saxpy_ref,
            register_it=False,
        ),
        [1 * MIB, 16 * MIB, 256 * MIB],
    )
    try:
        import torch

        def make_args(n, i):
            g = torch.Generator(device="cuda").manual_seed(i)
            x = torch.rand(n, device="cuda", generator=g)
            return x, torch.rand(n, device="cuda", generator=g), torch.empty_like(x)

        add = hx.callable_kernel(
            lambda x, y, z: torch.add(x, y, out=z),
            make_args,
            bytes_per_launch="12*n",
            stream="torch",
            name="torch_add",
            check=hx.OutputCheck(lambda args: args[0] + args[1]),
            register_it=False,
        )
        sweep("torch_add", add, [1 * MIB, 16 * MIB, 256 * MIB])
    except ImportError as exc:
        report["errors"]["torch_add"] = f"torch not importable: {exc}"

    faulty = user_kernel(
        src["faulty.cu"], "scale_faulty", ex.FAULTY_ARGS, name="faulty", grid="ceil(n/256)", register_it=False
    )
    t0 = time.time()
    try:
        hx.sweep(
            faulty,
            [1 * MIB, 4 * MIB, 16 * MIB],
            device=dev,
            iterations=20,
            reference=False,
            progress=False,
            out=out / "faulty.parquet",
            resume=False,
        )
        report["fault"] = {"error": "no fault raised"}
    except hx.HipexploreError as exc:
        report["fault"] = {
            "type": type(exc).__name__,
            "message": str(exc),
            "seconds": time.time() - t0,
            "kept": list(getattr(getattr(exc, "result", None), "summary", {}).get("size_bytes", [])),
        }
    print("fault:", report["fault"])
    good = user_kernel(
        src["faulty.cu"],
        "scale_faulty",
        ex.FAULTY_ARGS,
        name="after_fault",
        grid="ceil(n/256)",
        reference=ex.scale_ref,
        register_it=False,
    )
    sweep("after_fault_worker", good, [1 * MIB], reference=False)
    sweep("after_fault_in_process", "triad", [1 * MIB], reference=False, worker=False)
    dev.close()

    wm = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("worker_medians.py")),
            "--device",
            "cuda",
            "--out",
            str(out),
            "--sizes",
            "64KiB,1MiB,16MiB,256MiB",
            "--rounds",
            "3",
            "--iterations",
            "300",
        ],
        capture_output=True,
        text=True,
    )
    report["worker_medians"] = {"rc": wm.returncode, "stdout": wm.stdout, "stderr": wm.stderr[-3000:]}
    print(wm.stdout, wm.stderr[-2000:])
    (out / "byok.json").write_text(json.dumps(report, indent=2, default=str))
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
