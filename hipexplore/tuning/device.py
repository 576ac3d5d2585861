"""Benchmark the candidates of a tuning list on a device and pick the best, under each rotating
buffer count and cache-flush mode.

Why: rocMLIR PR 2188 replaced its L2 and instruction-cache flushes with rotating buffers. The
question a tuner owner asks is whether the *choice* of candidate depends on that: a candidate can
win only because its inputs stayed in the L2 from the previous launch. Here every candidate (its
whole pipeline: fill, gemm, reduce, pointwise) is timed with the bench harness under each
(rotating, flush) setting, and the winners are compared.

Every candidate is checked against numpy once (fresh random inputs, poisoned outputs) before it is
timed: a fast wrong kernel must never win. Kernels are compiled through a ``CompileCache``, so the
tails shared across candidates compile once here too.
"""
from __future__ import annotations

import ctypes
import math
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ..bench import rotating as rot
from ..bench.flush import check_flush_mode, flush_mode, make_flusher
from ..bench.stats import Measurement, StopRule
from ..bench.timing import time_launches
from ..compile.cache import CompileCache
from ..devices import device_label, get_device
from ..devices.base import Device, DeviceBuffer, PackedArgs
from ..errors import BenchmarkError, ConfigError
from ..schema import Configuration
from ..kernels import gemm as g
from .lists import GemmProblem, default_candidates, transformer_problems

#: fp32 accumulation in a different order than numpy's: relative error far under this.
DEFAULT_RTOL = 1e-5

RESULT_COLUMNS = (
    "run_id", "device", "device_name", "problem", "candidate", "m", "n", "k", "split", "rotating",
    "rotating_requested", "flush", "footprint_bytes", "n_samples", "median_s", "mean_s", "min_s", "p5_s",
    "p95_s", "iqr_rel", "cv", "ci_low_s", "ci_high_s", "gflops", "rank", "best", "rel_error", "warning",
)


@dataclass
class _Loaded:
    """One candidate's kernels loaded on the device."""

    config: g.GemmConfig
    kernels: dict[str, Any]


def _buffers(device: Device, shape: g.GemmShape, cfg: g.GemmConfig) -> dict[str, DeviceBuffer]:
    sizes = {
        "a": shape.m * shape.k, "b": shape.k * shape.n, "bias": shape.n,
        "work": g.workspace_elements(shape, cfg), "y": shape.m * shape.n,
    }
    if cfg.split > 1:
        sizes["c"] = shape.m * shape.n
    return {name: device.alloc(4 * n) for name, n in sizes.items()}


def _pointer_args(*bufs: DeviceBuffer) -> PackedArgs:
    return PackedArgs([ctypes.c_void_p(int(b.ptr)) for b in bufs])


class PipelineWorkload:
    """A candidate's whole pipeline as one timed unit (the bench harness's ``Workload`` shape):
    ``launch(s)`` enqueues fill, gemm, (reduce,) pointwise on buffer set ``s``."""

    def __init__(self, device: Device, shape: g.GemmShape, loaded: _Loaded, sets: Sequence[dict[str, DeviceBuffer]], sm_count: int) -> None:
        self.device = device
        cfg = loaded.config
        self.steps: list[list[tuple[Any, tuple[int, int, int], tuple[int, int, int], PackedArgs]]] = []
        for bufs in sets:
            c = bufs["c"] if cfg.split > 1 else bufs["work"]
            plan = [("fill", (bufs["work"],)), ("gemm", (bufs["a"], bufs["b"], bufs["work"]))]
            if cfg.split > 1:
                plan.append(("reduce", (bufs["work"], c)))
            plan.append(("pointwise", (c, bufs["bias"], bufs["y"])))
            steps = []
            for role, args in plan:
                geo = g.launch_geometry(role, shape, cfg, sm_count)
                steps.append((loaded.kernels[role], geo.grid, geo.block, _pointer_args(*args)))
            self.steps.append(steps)
        self.arg_sets = self.steps  # the harness only needs len(arg_sets)
        self.timer = None  # a pipeline has no in-kernel timer: events time it whole

    def launch(self, buffer_set: int, position: int = 0) -> None:
        for kernel, grid, block, args in self.steps[buffer_set]:
            self.device.launch(kernel, grid, block, args)


def _footprint(shape: g.GemmShape, cfg: g.GemmConfig) -> int:
    """Bytes one pipeline run touches at least once (each buffer once)."""
    n = shape.m * shape.k + shape.k * shape.n + shape.n + g.workspace_elements(shape, cfg) + shape.m * shape.n
    if cfg.split > 1:
        n += shape.m * shape.n
    return 4 * n


def check_candidate(device: Device, workload: PipelineWorkload, bufs: dict[str, DeviceBuffer], shape: g.GemmShape,
                    activation: str, seed: int | None = None) -> float:
    """Run the pipeline once on fresh random inputs with every output poisoned (NaN); return the
    relative error against numpy (inf when any element was left unwritten)."""
    a, b, bias = g.random_inputs(shape, seed)
    device.copy_to_device(bufs["a"], a)
    device.copy_to_device(bufs["b"], b)
    device.copy_to_device(bufs["bias"], bias)
    for name in ("work", "y", "c"):
        if name in bufs:
            device.copy_to_device(bufs[name], np.full(bufs[name].nbytes // 4, np.nan, dtype=np.float32))
    device.synchronize()
    workload.launch(0)
    device.synchronize()
    y = np.empty(shape.m * shape.n, dtype=np.float32)
    device.copy_to_host(bufs["y"], y)
    return g.relative_error(y.reshape(shape.m, shape.n), g.reference(a, b, bias, activation))


def _stats(samples: np.ndarray) -> dict[str, Any]:
    m = Measurement(samples)
    lo, hi = m.bootstrap_ci()
    warns = m.warnings() if callable(m.warnings) else m.warnings
    return {
        "n_samples": m.n, "median_s": m.median, "mean_s": m.mean, "min_s": m.min, "p5_s": m.p5, "p95_s": m.p95,
        "iqr_rel": m.iqr_rel, "cv": m.cv, "ci_low_s": lo, "ci_high_s": hi, "warning": "; ".join(warns),
    }


def _checked(problems: Iterable[GemmProblem] | None, candidates: Iterable[g.GemmConfig] | None,
             rotating: Sequence[int | str], flush: Sequence[str], iterations: int) -> tuple[tuple, tuple, list, list]:
    """``benchmark_candidates``' arguments checked: (problems, candidates, rotating counts, flush modes)."""
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ConfigError(f"iterations must be a positive integer; got {iterations!r}")
    probs = tuple(problems) if problems is not None else transformer_problems()
    cands = tuple(candidates) if candidates is not None else default_candidates()
    rot_list = [rot.parse_rotating(r) for r in rotating]
    flush_list = list(flush)
    for f in flush_list:
        if flush_mode(f).transforms_kernel:
            raise ConfigError(f"{f} needs a source transform of every candidate; use a flush that launches on its own here")
    empty = [name for name, seq in (("problems", probs), ("candidates", cands), ("rotating counts", rot_list),
                                    ("flush modes", flush_list)) if not seq]
    if empty:
        raise ConfigError(f"need at least one problem, candidate, rotating count and flush mode; got none of: {', '.join(empty)}")
    return probs, cands, rot_list, flush_list


def _load_candidate(dev: Device, cache: CompileCache, prob: GemmProblem, cfg: g.GemmConfig) -> _Loaded:
    """Every kernel of a candidate's pipeline compiled through ``cache`` and loaded on ``dev``."""
    kernels = {}
    for role in g.roles_for(cfg):
        req = g.kernel_request(role, dev.compiler, dev.target, prob.shape, cfg, prob.activation,
                               label=f"{prob.name}/{cfg.name}/{role}")
        code = cache.get_or_compile(req).object_code
        kernels[role] = dev.kernel(dev.load(code), code.symbol(g.symbol(role)))
    return _Loaded(cfg, kernels)


def benchmark_candidates(
    problems: Iterable[GemmProblem] | None = None,
    candidates: Iterable[g.GemmConfig] | None = None,
    *,
    device: str | Device = "auto",
    rotating: Sequence[int | str] = (1, "auto"),
    flush: Sequence[str] = ("none", "l2-read"),
    iterations: int = 100,
    rtol: float = DEFAULT_RTOL,
    cache: CompileCache | None = None,
    mem_fraction: float = rot.DEFAULT_MEM_FRACTION,
) -> pd.DataFrame:
    """One row per (problem, candidate, rotating, flush): timing statistics of the candidate's whole
    pipeline, its rank among the candidates of that problem under that setting, and ``best``.

    A candidate whose result is wrong (relative error over ``rtol``) raises ``BenchmarkError``.
    """
    probs, cands, rot_list, flush_list = _checked(problems, candidates, rotating, flush, iterations)
    dev = get_device(device) if isinstance(device, str) else device
    for f in flush_list:
        check_flush_mode(dev, f)
    cache = cache if cache is not None else CompileCache(max_entries=4096, max_bytes=2**30, disk_dir=False)
    sm_count = int(getattr(dev, "compute_units", 0) or 132)
    run_id = uuid.uuid4().hex[:12]
    rows: list[dict[str, Any]] = []
    flushers = {f: make_flusher(dev, f) for f in flush_list}
    try:
        for prob in probs:
            shape = prob.shape
            for cfg in cands:
                loaded = _load_candidate(dev, cache, prob, cfg)
                footprint = _footprint(shape, cfg)
                free = dev.memory_info()[0] if hasattr(dev, "memory_info") else 2**34
                for req_rot in rot_list:
                    plan = rot.plan(req_rot, footprint_bytes=footprint, set_bytes=footprint, llc_bytes=dev.llc_bytes,
                                    free_bytes=free, mem_fraction=mem_fraction)
                    sets = [_buffers(dev, shape, cfg) for _ in range(plan.count)]
                    try:
                        wl = PipelineWorkload(dev, shape, loaded, sets, sm_count)
                        err = check_candidate(dev, wl, sets[0], shape, prob.activation)
                        if not err <= rtol:
                            raise BenchmarkError(
                                f"candidate {cfg.name} of {prob.name} ({shape.m}x{shape.n}x{shape.k}) is wrong: relative "
                                f"error {err:.3g} > {rtol:g} against numpy"
                            )
                        for s in sets[1:]:  # every set holds valid inputs too
                            for name in ("a", "b", "bias"):
                                dev.copy_to_device(s[name], _host_copy(dev, sets[0][name]))
                        for f in flush_list:
                            raw = time_launches(wl, flushers[f], StopRule(iterations=max(iterations, plan.count)))
                            st = _stats(raw.time_s)
                            notes = [st.pop("warning")] + list(raw.notes) + ([plan.note] if plan.note else [])
                            rows.append({
                                "run_id": run_id, "device": device_label(dev), "device_name": dev.name,
                                "problem": prob.name, "candidate": cfg.name, "m": shape.m, "n": shape.n, "k": shape.k,
                                "split": cfg.split, "rotating": plan.count, "rotating_requested": plan.requested,
                                "flush": f, "footprint_bytes": footprint, **st,
                                "gflops": 2.0 * shape.m * shape.n * shape.k / st["median_s"] / 1e9,
                                "rel_error": err, "warning": "; ".join(n for n in notes if n),
                            })
                    finally:
                        free_sets(dev, sets)
    finally:
        free_flushers(flushers)
    return ranked(rows)


def free_sets(device: Device, sets: Sequence[dict[str, DeviceBuffer]]) -> None:
    """Give back every buffer of a candidate's rotating sets."""
    for s in sets:
        for buf in s.values():
            device.free(buf)


def free_flushers(flushers: dict[str, Any]) -> None:
    for fl in flushers.values():
        if fl is not None:
            fl.free()


def ranked(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The candidates' result rows as one frame, ranked by median within (problem, rotating, flush)."""
    df = pd.DataFrame(rows)
    df["rank"] = df.groupby(["problem", *Configuration.COLUMNS[2:4]])["median_s"].rank(method="min").astype("int64")
    df["best"] = df["rank"] == 1
    return df[list(RESULT_COLUMNS)]


#: Correctness cases for a device: ragged tiles, K not divisible by the split, split > K.
CHECK_CASES: tuple[tuple[tuple[int, int, int], g.GemmConfig, str], ...] = (
    ((512, 1536, 512), g.GemmConfig(64, 64, 16, 4, 4, split=1, unroll=4), "none"),
    ((100, 70, 90), g.GemmConfig(64, 32, 16, 4, 2, split=3, unroll=4), "gelu"),
    ((33, 17, 7), g.GemmConfig(16, 16, 8, 2, 2, split=4, unroll=2), "relu"),
    ((65, 129, 1001), g.GemmConfig(128, 64, 8, 8, 4, split=4, unroll=8), "gelu"),
    ((5, 3, 2), g.GemmConfig(16, 16, 8, 2, 2, split=4, unroll=2), "none"),
    ((512, 512, 2048), g.GemmConfig(32, 32, 32, 2, 2, split=4, unroll=8), "none"),
)


def check_on_device(
    device: str | Device = "auto",
    cases: Sequence[tuple[tuple[int, int, int], g.GemmConfig, str]] = CHECK_CASES,
    trials: int = 3,
    cache: CompileCache | None = None,
) -> pd.DataFrame:
    """Run each case's pipeline on the device ``trials`` times on fresh random inputs with poisoned
    outputs; one row per trial with the relative error against numpy (float64)."""
    dev = get_device(device) if isinstance(device, str) else device
    cache = cache if cache is not None else CompileCache(max_entries=4096, max_bytes=2**30, disk_dir=False)
    sm_count = int(getattr(dev, "compute_units", 0) or 132)
    rows = []
    for dims, cfg, act in cases:
        shape = g.GemmShape(*dims)
        kernels = {}
        for role in g.roles_for(cfg):
            code = cache.get_or_compile(g.kernel_request(role, dev.compiler, dev.target, shape, cfg, act)).object_code
            kernels[role] = dev.kernel(dev.load(code), code.symbol(g.symbol(role)))
        bufs = _buffers(dev, shape, cfg)
        try:
            wl = PipelineWorkload(dev, shape, _Loaded(cfg, kernels), [bufs], sm_count)
            for trial in range(trials):
                err = check_candidate(dev, wl, bufs, shape, act)
                rows.append({"device": device_label(dev), "device_name": dev.name, "compiler": dev.compiler,
                             "target": dev.target, "m": shape.m, "n": shape.n, "k": shape.k, "config": cfg.name,
                             "activation": act, "trial": trial, "rel_error": err})
        finally:
            for b in bufs.values():
                dev.free(b)
    return pd.DataFrame(rows)


def _host_copy(dev: Device, buf: DeviceBuffer) -> np.ndarray:
    out = np.empty(buf.nbytes // 4, dtype=np.float32)
    dev.copy_to_host(buf, out)
    return out


def choice_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per problem and setting: the winner, its time, and what the winner under the reference
    setting (the first rotating count with flush 'none', i.e. hot caches) costs under this one.

    ``same_choice`` False means the rotating count or the flush changed the pick; ``regret`` is how
    much slower the hot-cache pick runs under this setting than this setting's own pick;
    ``distinguishable`` says whether the two picks' 95% intervals of the median are disjoint (else
    the change is within noise)."""
    rows = []
    for prob, g_ in results.groupby("problem", sort=False):
        settings = list(dict.fromkeys(zip(g_["rotating_requested"], g_["flush"])))
        ref = settings[0]
        ref_rows = g_[(g_["rotating_requested"] == ref[0]) & (g_["flush"] == ref[1])]
        ref_pick = ref_rows.loc[ref_rows["median_s"].idxmin(), "candidate"]
        for rr, fl in settings:
            s = g_[(g_["rotating_requested"] == rr) & (g_["flush"] == fl)]
            best = s.loc[s["median_s"].idxmin()]
            ref_row = s.loc[s["candidate"] == ref_pick].iloc[0]
            ref_time = float(ref_row["median_s"])
            rows.append({
                "problem": prob, "rotating_requested": rr, "rotating": int(best["rotating"]), "flush": fl,
                "best": best["candidate"], "best_median_s": float(best["median_s"]),
                "hot_pick": ref_pick, "hot_pick_median_s": ref_time,
                "same_choice": best["candidate"] == ref_pick,
                "regret": ref_time / float(best["median_s"]) - 1.0,
                "runner_up_gap": _runner_up_gap(s),
                # the change of pick is real only when the confidence intervals do not overlap
                "distinguishable": bool(best["candidate"] != ref_pick and float(ref_row["ci_low_s"]) > float(best["ci_high_s"])),
            })
    return pd.DataFrame(rows)


def _runner_up_gap(s: pd.DataFrame) -> float:
    t = np.sort(s["median_s"].to_numpy())
    return float(t[1] / t[0] - 1.0) if len(t) > 1 else math.nan
