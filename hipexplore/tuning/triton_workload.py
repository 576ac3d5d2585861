"""The Triton split-K candidates as workloads on a CUDA device (the H200), measured by the one
pipeline (``tuning.workload``) and ranked.

Why: the question of ``tuning.workload`` — does the pick change under rotating buffers and cache
flushes? — for the Triton list, launching the cubins Triton compiled (through our cache, or carried
in from another machine: the H200 image has triton 3.6, this VM 3.9) with ``cuLaunchKernel``. A
Triton 3.x kernel takes trailing scratch pointers after its own arguments; the compile metadata
lists them (``scratch_params``) and the launcher passes null pointers when the kernel needs no
scratch (``global_scratch_size`` 0: refused otherwise, rather than guessed). Every candidate is
checked against numpy first. ``tl.dot`` on fp32 inputs runs in TF32 on sm_90 (Triton's default),
so the check's tolerance is TF32's, not the HIP list's 1e-5.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from ..bench.workload import Launch, PipelineSet, pipeline_workload
from ..compile.base import ObjectCode
from ..compile.cache import CompileCache
from ..devices.base import Device
from ..files import write_file
from ..kernels.spec import KernelSpec
from ..errors import BenchmarkError
from .lists import GemmProblem, transformer_problems
from .triton_list import TAIL_BLOCK, TritonConfig, default_candidates, role_request, roles_for
from .workload import (
    checked_arguments,
    filled_set,
    measure_candidates,
    output_check,
    pipeline_plan,
    pointers,
    workload_name,
)

TF32_RTOL = 5e-3


def load_carried(directory: str | Path, request_digest: str) -> ObjectCode | None:
    """A cubin carried from another machine: DIR/<digest>.cubin + DIR/<digest>.json (see export_cubins)."""
    d = Path(directory)
    b, m = d / f"{request_digest}.cubin", d / f"{request_digest}.json"
    if not (b.is_file() and m.is_file()):
        return None
    meta = json.loads(m.read_text())
    return ObjectCode(
        binary=b.read_bytes(),
        compiler="triton",
        target=meta["target"],
        mode="binary",
        lowered_names={meta["kernel"]: meta["metadata"]["name"]},
        metadata=meta["metadata"],
    )


def request_digest(req: Any) -> str:
    """A digest of the request alone (no compiler identity): carried cubins are found by it."""
    from ..compile.request import canonical_json, sha256_digest

    return sha256_digest(canonical_json(req.record()))


def export_cubins(
    directory: str | Path,
    target: str = "sm_90",
    problems: Iterable[GemmProblem] | None = None,
    candidates: Iterable[TritonConfig] | None = None,
    cache: CompileCache | None = None,
) -> int:
    """Compile every role of every candidate for ``target`` here and write DIR/<digest>.{cubin,json}."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    cache = cache if cache is not None else CompileCache(disk_dir=False)
    n = 0
    for prob in tuple(problems) if problems is not None else transformer_problems():
        for cfg in tuple(candidates) if candidates is not None else default_candidates():
            for role in roles_for(cfg):
                req = role_request(role, target, prob, cfg)
                dig = request_digest(req)
                if (d / f"{dig}.cubin").exists():
                    continue
                code = cache.get_or_compile(req).object_code
                write_file(d / f"{dig}.cubin", code.binary, what="cubin")
                write_file(
                    d / f"{dig}.json",
                    json.dumps(
                        {
                            "target": target,
                            "kernel": req.kernels[0],
                            "role": role,
                            "problem": prob.name,
                            "candidate": cfg.name,
                            "metadata": dict(code.metadata),
                        },
                        indent=1,
                    ),
                    what="cubin metadata",
                )
                n += 1
    return n


def _grid(role: str, prob: GemmProblem, cfg: TritonConfig) -> tuple[int, int, int]:
    m, n = prob.shape.m, prob.shape.n
    if role == "gemm":
        return (math.ceil(m / cfg.block_m) * math.ceil(n / cfg.block_n), cfg.split_k, 1)
    count = cfg.split_k * m * n if role == "fill" else m * n
    return (math.ceil(count / TAIL_BLOCK), 1, 1)


class _Kernel:
    """A Triton cubin loaded: its function, dynamic shared memory, block and scratch pointers."""

    def __init__(self, device: Device, code: ObjectCode) -> None:
        md = code.metadata
        if int(md.get("global_scratch_size", 0)) or int(md.get("profile_scratch_size", 0)):
            raise BenchmarkError(
                f"kernel {md.get('name')} needs Triton scratch memory ({md.get('global_scratch_size')} B "
                f"global, {md.get('profile_scratch_size')} B profile); this launcher passes none"
            )
        self.fn = device.kernel(device.load(code), md["name"])
        self.shared = int(md["shared"])
        self.block = (int(md["num_warps"]) * int(md["warp_size"]), 1, 1)
        self.n_scratch = len(md.get("scratch_params", []))
        if self.shared > 48 * 1024:  # CUDA caps dynamic shared memory at 48 KiB unless allowed more
            device.set_max_dynamic_shared(self.fn, self.shared)


def triton_candidate(
    device: Device,
    cache: CompileCache,
    prob: GemmProblem,
    cfg: TritonConfig,
    *,
    carried: str | Path | None = None,
    source: dict[str, int] | None = None,
    rtol: float = TF32_RTOL,
) -> KernelSpec:
    """A Triton candidate as a workload: each role's cubin (carried, else compiled through ``cache``;
    ``source`` counts which), its buffer sets, its check."""
    kernels = {}
    for role in roles_for(cfg):
        req = role_request(role, device.target, prob, cfg, label=f"{prob.name}/{cfg.name}/{role}")
        code = load_carried(carried, request_digest(req)) if carried else None
        if source is not None:
            source["carried" if code is not None else "compiled"] += 1
        kernels[role] = _Kernel(device, code or cache.get_or_compile(req).object_code)
    m, n, k = prob.shape.m, prob.shape.n, prob.shape.k
    sizes = {
        "a": m * k,
        "b": k * n,
        "bias": n,
        "ws": cfg.split_k * m * n,
        "y": m * n,
        **({"c": m * n} if cfg.split_k > 1 else {}),
    }

    def make_set(i: int) -> PipelineSet:
        bufs = filled_set(device, sizes, prob, ("y",))
        return PipelineSet(
            bufs,
            [
                Launch(
                    kernels[r].fn,
                    _grid(r, prob, cfg),
                    kernels[r].block,
                    pointers(*a, scratch=kernels[r].n_scratch),
                    kernels[r].shared,
                )
                for r, a in pipeline_plan(cfg.split_k, bufs, "ws")
            ],
        )

    return pipeline_workload(
        workload_name(prob, cfg.name),
        device,
        make_set,
        footprint_bytes=4 * sum(sizes.values()),
        check=output_check(device, prob, f"Triton candidate {cfg.name}", rtol),
    )


def benchmark_triton_candidates(
    device: Device,
    problems: Iterable[GemmProblem] | None = None,
    candidates: Iterable[TritonConfig] | None = None,
    *,
    rotating: Sequence[int | str] = (1, "auto"),
    flush: Sequence[str] = ("none", "l2-read"),
    iterations: int = 100,
    cache: CompileCache | None = None,
    carried: str | Path | None = None,
    rtol: float = TF32_RTOL,
    **fields: Any,
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Rows as ``tuning.workload.benchmark_candidates`` (same columns), plus where each kernel came
    from: {"carried": n, "compiled": n} (carried cubins first, then our Triton backend)."""
    probs, cands, rot_list, flush_list = checked_arguments(
        problems, candidates, rotating, flush, iterations, default_candidates
    )
    cache = cache if cache is not None else CompileCache(max_entries=4096, max_bytes=2**30, disk_dir=False)
    source = {"carried": 0, "compiled": 0}
    workloads = {}
    for prob in probs:
        for cfg in cands:
            w = triton_candidate(device, cache, prob, cfg, carried=carried, source=source, rtol=rtol)
            workloads[w.name] = (prob, w, cfg.name, cfg.split_k)
    return measure_candidates(device, workloads, rot_list, flush_list, iterations, **fields), source


__all__ = [
    "TF32_RTOL",
    "benchmark_triton_candidates",
    "export_cubins",
    "load_carried",
    "request_digest",
    "triton_candidate",
]
