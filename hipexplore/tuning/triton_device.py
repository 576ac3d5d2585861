"""Benchmark the Triton split-K candidates on a CUDA device (the H200) with the bench harness.

Why: the question of ``tuning/device.py`` — does the pick change under rotating buffers and cache
flushes? — for the Triton list, launching the cubins Triton compiled (through our cache, or carried
in from another machine: the H200 image has triton 3.6, this VM 3.9) with ``cuLaunchKernel``. A
Triton 3.x kernel takes trailing scratch pointers after its own arguments; the compile metadata
lists them (``scratch_params``) and the launcher passes null pointers when the kernel needs no
scratch (``global_scratch_size`` 0: refused otherwise, rather than guessed). Every candidate is
checked against numpy first. ``tl.dot`` on fp32 inputs runs in TF32 on sm_90 (Triton's default),
so the check's tolerance is TF32's, not the HIP list's 1e-5.
"""
from __future__ import annotations

import ctypes
import json
import math
import uuid
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ..bench import rotating as rot
from ..bench.flush import MODES, check_flush_mode, flush_mode, make_flusher
from ..bench.stats import StopRule
from ..bench.timing import time_launches
from ..compile.base import ObjectCode
from ..compile.cache import CompileCache
from ..devices import device_label
from ..devices.base import Device, DeviceBuffer, PackedArgs
from ..errors import BenchmarkError, ConfigError
from ..kernels import gemm as g
from .device import _stats, free_flushers, free_sets, ranked
from .lists import GemmProblem, transformer_problems
from .triton_list import TAIL_BLOCK, TritonConfig, default_candidates, role_request, roles_for

TF32_RTOL = 5e-3


def load_carried(directory: str | Path, request_digest: str) -> ObjectCode | None:
    """A cubin carried from another machine: DIR/<digest>.cubin + DIR/<digest>.json (see export_cubins)."""
    d = Path(directory)
    b, m = d / f"{request_digest}.cubin", d / f"{request_digest}.json"
    if not (b.is_file() and m.is_file()):
        return None
    meta = json.loads(m.read_text())
    return ObjectCode(binary=b.read_bytes(), compiler="triton", target=meta["target"], mode="binary",
                      lowered_names={meta["kernel"]: meta["metadata"]["name"]}, metadata=meta["metadata"])


def request_digest(req) -> str:
    """A digest of the request alone (no compiler identity): carried cubins are found by it."""
    from ..compile.request import canonical_json, sha256_digest

    return sha256_digest(canonical_json(req.record()))


def export_cubins(directory: str | Path, target: str = "sm_90", problems: Iterable[GemmProblem] | None = None,
                  candidates: Iterable[TritonConfig] | None = None, cache: CompileCache | None = None) -> int:
    """Compile every role of every candidate for ``target`` here and write DIR/<digest>.{cubin,json}."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    cache = cache if cache is not None else CompileCache(disk_dir=False)
    n = 0
    for prob in (tuple(problems) if problems is not None else transformer_problems()):
        for cfg in (tuple(candidates) if candidates is not None else default_candidates()):
            for role in roles_for(cfg):
                req = role_request(role, target, prob, cfg)
                dig = request_digest(req)
                if (d / f"{dig}.cubin").exists():
                    continue
                code = cache.get_or_compile(req).object_code
                (d / f"{dig}.cubin").write_bytes(code.binary)
                (d / f"{dig}.json").write_text(json.dumps({"target": target, "kernel": req.kernels[0], "role": role,
                                                           "problem": prob.name, "candidate": cfg.name,
                                                           "metadata": dict(code.metadata)}, indent=1))
                n += 1
    return n


def _grid(role: str, prob: GemmProblem, cfg: TritonConfig) -> tuple[int, int, int]:
    m, n = prob.shape.m, prob.shape.n
    if role == "gemm":
        return (math.ceil(m / cfg.block_m) * math.ceil(n / cfg.block_n), cfg.split_k, 1)
    count = cfg.split_k * m * n if role == "fill" else m * n
    return (math.ceil(count / TAIL_BLOCK), 1, 1)


class _Kernel:
    def __init__(self, device: Device, code: ObjectCode) -> None:
        md = code.metadata
        if int(md.get("global_scratch_size", 0)) or int(md.get("profile_scratch_size", 0)):
            raise BenchmarkError(f"kernel {md.get('name')} needs Triton scratch memory ({md.get('global_scratch_size')} B "
                                 f"global, {md.get('profile_scratch_size')} B profile); this launcher passes none")
        self.fn = device.kernel(device.load(code), md["name"])
        self.shared = int(md["shared"])
        self.block = (int(md["num_warps"]) * int(md["warp_size"]), 1, 1)
        self.n_scratch = len(md.get("scratch_params", []))
        if self.shared > 48 * 1024 and hasattr(device, "set_max_dynamic_shared"):
            device.set_max_dynamic_shared(self.fn, self.shared)

    def args(self, *bufs: DeviceBuffer) -> PackedArgs:
        return PackedArgs([ctypes.c_void_p(int(b.ptr)) for b in bufs] + [ctypes.c_void_p(0)] * self.n_scratch)


class TritonPipeline:
    """fill, gemm, (reduce,) bias_act of one candidate on buffer set ``s``: the harness's Workload."""

    def __init__(self, device: Device, prob: GemmProblem, cfg: TritonConfig, kernels: dict[str, _Kernel],
                 sets: Sequence[dict[str, DeviceBuffer]]) -> None:
        self.device = device
        self.steps = []
        for b in sets:
            c = b["c"] if cfg.split_k > 1 else b["ws"]
            plan = [("fill", (b["ws"],)), ("gemm", (b["a"], b["b"], b["ws"]))]
            if cfg.split_k > 1:
                plan.append(("reduce", (b["ws"], c)))
            plan.append(("pointwise", (c, b["bias"], b["y"])))
            self.steps.append([(kernels[r], _grid(r, prob, cfg), kernels[r].args(*a)) for r, a in plan])
        self.arg_sets = self.steps
        self.timer = None  # a pipeline has no in-kernel timer: events time it whole

    def launch(self, buffer_set: int, position: int = 0) -> None:
        for k, grid, args in self.steps[buffer_set]:
            self.device.launch(k.fn, grid, k.block, args, shared_bytes=k.shared)


def _sizes(prob: GemmProblem, cfg: TritonConfig) -> dict[str, int]:
    m, n, k = prob.shape.m, prob.shape.n, prob.shape.k
    s = {"a": m * k, "b": k * n, "bias": n, "ws": cfg.split_k * m * n, "y": m * n}
    if cfg.split_k > 1:
        s["c"] = m * n
    return s


def benchmark_triton_candidates(device: Device, problems: Iterable[GemmProblem] | None = None,
                                candidates: Iterable[TritonConfig] | None = None, *, rotating: Sequence[int | str] = (1, "auto"),
                                flush: Sequence[str] = ("none", "l2-read"), iterations: int = 100,
                                cache: CompileCache | None = None, carried: str | Path | None = None,
                                rtol: float = TF32_RTOL) -> tuple[pd.DataFrame, dict[str, int]]:
    """Rows as ``tuning.device.benchmark_candidates`` (same columns), plus where each kernel came
    from: {"carried": n, "compiled": n} (carried cubins first, then our Triton backend)."""
    probs = tuple(problems) if problems is not None else transformer_problems()
    cands = tuple(candidates) if candidates is not None else default_candidates()
    for f in flush:
        launched = [m.name for m in MODES if not m.transforms_kernel]
        if f not in launched or flush_mode(f).transforms_kernel:
            raise ConfigError(f"flush mode {f!r}: expected one of {', '.join(launched)}")
        check_flush_mode(device, f)
    rot_list = [rot.parse_rotating(r) for r in rotating]
    cache = cache if cache is not None else CompileCache(max_entries=4096, max_bytes=2**30, disk_dir=False)
    source = {"carried": 0, "compiled": 0}
    flushers = {f: make_flusher(device, f) for f in flush}
    rows: list[dict[str, Any]] = []
    run_id = uuid.uuid4().hex[:12]
    try:
        for prob in probs:
            for cfg in cands:
                kernels = {}
                for role in roles_for(cfg):
                    req = role_request(role, device.target, prob, cfg, label=f"{prob.name}/{cfg.name}/{role}")
                    code = load_carried(carried, request_digest(req)) if carried else None
                    source["carried" if code is not None else "compiled"] += 1
                    code = code or cache.get_or_compile(req).object_code
                    kernels[role] = _Kernel(device, code)
                sizes = _sizes(prob, cfg)
                footprint = 4 * sum(sizes.values())
                free = device.memory_info()[0] if hasattr(device, "memory_info") else 2**34
                for req_rot in rot_list:
                    plan = rot.plan(req_rot, footprint_bytes=footprint, set_bytes=footprint, llc_bytes=device.llc_bytes,
                                    free_bytes=free, mem_fraction=rot.DEFAULT_MEM_FRACTION)
                    sets = [{k: device.alloc(4 * v) for k, v in sizes.items()} for _ in range(plan.count)]
                    try:
                        wl = TritonPipeline(device, prob, cfg, kernels, sets)
                        a, b, bias = g.random_inputs(prob.shape, None)
                        for s in sets:
                            device.copy_to_device(s["a"], a)
                            device.copy_to_device(s["b"], b)
                            device.copy_to_device(s["bias"], bias)
                        device.copy_to_device(sets[0]["y"], np.full(sizes["y"], np.nan, dtype=np.float32))
                        device.synchronize()
                        wl.launch(0)
                        device.synchronize()
                        y = np.empty(sizes["y"], dtype=np.float32)
                        device.copy_to_host(sets[0]["y"], y)
                        err = g.relative_error(y.reshape(prob.shape.m, prob.shape.n), g.reference(a, b, bias, prob.activation))
                        if not err <= rtol:
                            raise BenchmarkError(f"Triton candidate {cfg.name} of {prob.name} is wrong: relative error "
                                                 f"{err:.3g} > {rtol:g} against numpy")
                        for f in flush:
                            raw = time_launches(wl, flushers[f], StopRule(iterations=max(iterations, plan.count)))
                            st = _stats(raw.time_s)
                            notes = [st.pop("warning")] + list(raw.notes) + ([plan.note] if plan.note else [])
                            rows.append({
                                "run_id": run_id, "device": device_label(device), "device_name": device.name,
                                "problem": prob.name, "candidate": cfg.name, "m": prob.shape.m, "n": prob.shape.n,
                                "k": prob.shape.k, "split": cfg.split_k, "rotating": plan.count,
                                "rotating_requested": plan.requested, "flush": f, "footprint_bytes": footprint, **st,
                                "gflops": 2.0 * prob.shape.m * prob.shape.n * prob.shape.k / st["median_s"] / 1e9,
                                "rel_error": err, "warning": "; ".join(n for n in notes if n),
                            })
                    finally:
                        free_sets(device, sets)
    finally:
        free_flushers(flushers)
    return ranked(rows), source
