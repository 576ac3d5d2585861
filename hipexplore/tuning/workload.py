"""Each tuning candidate's pipeline as a workload, measured by the one pipeline, then ranked.

Why: rocMLIR PR 2188 replaced its L2 and instruction-cache flushes with rotating buffers. The
question a tuner owner asks is whether the *choice* of candidate depends on that: a candidate can
win only because its inputs stayed in the L2 from the previous launch. Every candidate's whole
pipeline (fill, GEMM, split-K reduction, bias + activation) is a workload
(``bench.workload.pipeline_workload``: it enqueues its kernels on buffer set *i*), and each
problem's candidates are one sweep (``bench``): every (rotating, flush) setting in units, with its
cold reference, the throttle rules, the launch floor and the output check, exactly as a kernel is
measured. Then the candidates are ranked (``tuning.ranking``). These used to be two engines of
their own (``tuning/device.py``, ``tuning/triton_device.py``) that guessed the device's compute units
and free memory and had none of that.

A candidate is checked against numpy in the first unit (fresh seeded inputs, outputs poisoned with
NaN, relative L2 error within ``rtol``): a fast wrong kernel never gets a row. Kernels are
compiled through a ``CompileCache``, so the tails shared across candidates compile once here too.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ..bench import rotating as rot
from ..bench.stats import StopRule
from ..bench.workload import Launch, PipelineSet, pipeline_workload
from ..compile.cache import CompileCache
from ..devices import get_device
from ..devices.base import Device, DeviceBuffer, PackedArgs
from ..errors import BenchmarkError, ConfigError
from ..kernels.spec import KernelSpec
from . import gemm as g
from .lists import GemmProblem, default_candidates, transformer_problems
from .ranking import RESULT_COLUMNS, candidate_rows, choice_table, ranked

#: fp32 accumulation in a different order than numpy's: relative error far under this.
DEFAULT_RTOL = 1e-5
#: the inputs every candidate is timed (and checked) on
INPUT_SEED = 0


def workload_name(problem: GemmProblem, candidate: str) -> str:
    """A candidate's name in the sweep's frames (an identifier)."""
    name = re.sub(r"\W", "_", f"{problem.name}__{candidate}")
    return name if name[:1].isalpha() else f"c_{name}"


def pointers(*bufs: DeviceBuffer, scratch: int = 0) -> PackedArgs:
    """Pointer arguments (and ``scratch`` null pointers after them: a Triton kernel's)."""
    return PackedArgs([ctypes.c_void_p(int(b.ptr)) for b in bufs] + [ctypes.c_void_p(0)] * scratch)


def filled_set(
    device: Device, sizes: dict[str, int], problem: GemmProblem, poison: Sequence[str], seed: int = INPUT_SEED
) -> dict[str, DeviceBuffer]:
    """One buffer set: every buffer (fp32 elements by name), the inputs a, b, bias drawn from
    ``seed`` (every set the same), the outputs in ``poison`` filled with NaN (an unwritten element
    fails the check)."""
    bufs = {name: device.alloc(4 * n) for name, n in sizes.items()}
    a, b, bias = g.random_inputs(problem.shape, seed)
    for name, host in (("a", a), ("b", b), ("bias", bias)):
        device.copy_to_device(bufs[name], host)
    for name in poison:
        if name in bufs:
            device.copy_to_device(bufs[name], np.full(sizes[name], np.nan, dtype=np.float32))
    device.synchronize()
    return bufs


def output_check(device: Device, problem: GemmProblem, what: str, rtol: float, seed: int = INPUT_SEED) -> Any:
    """The check of set 0: ``y`` against numpy (float64) on the inputs the set holds."""

    def check(one: PipelineSet) -> float:
        a, b, bias = g.random_inputs(problem.shape, seed)
        y = np.empty(problem.shape.m * problem.shape.n, dtype=np.float32)
        device.copy_to_host(one.buffers["y"], y)
        err = g.relative_error(y.reshape(problem.shape.m, problem.shape.n), g.reference(a, b, bias, problem.activation))
        if not err <= rtol:
            s = problem.shape
            raise BenchmarkError(
                f"{what} of {problem.name} ({s.m}x{s.n}x{s.k}) is wrong: relative error {err:.3g} > "
                f"{rtol:g} against numpy"
            )
        return err

    return check


def pipeline_plan(cfg_split: int, bufs: dict[str, DeviceBuffer], ws: str) -> list[tuple[str, tuple[DeviceBuffer, ...]]]:
    """The roles of a split-K pipeline and the buffers each reads and writes."""
    c = bufs["c"] if cfg_split > 1 else bufs[ws]
    plan = [("fill", (bufs[ws],)), ("gemm", (bufs["a"], bufs["b"], bufs[ws]))]
    if cfg_split > 1:
        plan.append(("reduce", (bufs[ws], c)))
    return plan + [("pointwise", (c, bufs["bias"], bufs["y"]))]


def hip_candidate(
    device: Device,
    cache: CompileCache,
    problem: GemmProblem,
    cfg: g.GemmConfig,
    rtol: float = DEFAULT_RTOL,
    seed: int = INPUT_SEED,
) -> KernelSpec:
    """A candidate of the HIP/CUDA/host list (``tuning.gemm``) as a workload: its kernels compiled
    through ``cache`` and loaded, its buffer sets (inputs drawn from ``seed``), its check."""
    shape = problem.shape
    kernels = {}
    for role in g.roles_for(cfg):
        req = g.kernel_request(
            role,
            device.compiler,
            device.target,
            shape,
            cfg,
            problem.activation,
            label=f"{problem.name}/{cfg.name}/{role}",
        )
        code = cache.get_or_compile(req).object_code
        kernels[role] = device.kernel(device.load(code), code.symbol(g.symbol(role)))
    sizes = {
        "a": shape.m * shape.k,
        "b": shape.k * shape.n,
        "bias": shape.n,
        "work": g.workspace_elements(shape, cfg),
        "y": shape.m * shape.n,
        **({"c": shape.m * shape.n} if cfg.split > 1 else {}),
    }
    sm_count = device.compute_units

    def make_set(i: int) -> PipelineSet:
        bufs = filled_set(device, sizes, problem, ("work", "y", "c"), seed)
        launches = []
        for role, args in pipeline_plan(cfg.split, bufs, "work"):
            geo = g.launch_geometry(role, shape, cfg, sm_count)
            launches.append(Launch(kernels[role], geo.grid, geo.block, pointers(*args)))
        return PipelineSet(bufs, launches)

    return pipeline_workload(
        workload_name(problem, cfg.name),
        device,
        make_set,
        footprint_bytes=4 * sum(sizes.values()),
        check=output_check(device, problem, f"candidate {cfg.name}", rtol, seed),
    )


def checked_arguments(
    problems: Iterable[GemmProblem] | None,
    candidates: Iterable[Any] | None,
    rotating: Sequence[int | str],
    flush: Sequence[str],
    iterations: int,
    default: Any,
) -> tuple[tuple, tuple, list, list]:
    """The arguments checked: (problems, candidates, rotating counts, flush modes)."""
    from ..bench.flush import flush_mode

    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ConfigError(f"iterations must be a positive integer; got {iterations!r}")
    probs = tuple(problems) if problems is not None else transformer_problems()
    cands = tuple(candidates) if candidates is not None else default()
    rot_list = [rot.parse_rotating(r) for r in rotating]
    flush_list = list(flush)
    for f in flush_list:
        if flush_mode(f).transforms_kernel:
            raise ConfigError(
                f"flush mode {f!r} is a source transform of the kernel under test, which a candidate's "
                f"pipeline of several kernels has no one place for; use a flush that launches on its own"
            )
    empty = [
        name
        for name, seq in (
            ("problems", probs),
            ("candidates", cands),
            ("rotating counts", rot_list),
            ("flush modes", flush_list),
        )
        if not seq
    ]
    if empty:
        raise ConfigError(
            f"need at least one problem, candidate, rotating count and flush mode; got none of: {', '.join(empty)}"
        )
    return probs, cands, rot_list, flush_list


def measure_candidates(
    device: Device,
    workloads: dict[str, tuple[GemmProblem, KernelSpec, str, int]],
    rotating: Sequence[int | str],
    flush: Sequence[str],
    iterations: int,
    **fields: Any,
) -> pd.DataFrame:
    """Every problem's candidates as one sweep (``bench.run``), ranked. ``workloads``: name ->
    (problem, workload, candidate name, split); ``fields``: more ``SweepSpec`` options (units, reference...)."""
    from ..bench.run import RunOptions, run
    from ..bench.spec import SweepSpec

    rows: list[dict[str, Any]] = []
    names = {name: (prob, cand, split) for name, (prob, _w, cand, split) in workloads.items()}
    for prob in dict.fromkeys(p for p, *_ in workloads.values()):
        mine = tuple(w for p, w, *_ in workloads.values() if p is prob)
        free = device.memory_info()[0]
        most = max(
            rot.plan(
                r,
                footprint_bytes=w.footprint(1),
                set_bytes=w.footprint(1),
                llc_bytes=device.llc_bytes,
                free_bytes=free,
                mem_fraction=fields.get("mem_fraction", rot.DEFAULT_MEM_FRACTION),
            ).count
            for w in mine
            for r in rotating
        )
        spec = SweepSpec(
            kernels=mine,
            sizes=(4 * prob.shape.m * prob.shape.n,),
            rotating=tuple(rotating),
            flush=tuple(flush),
            stop=StopRule(iterations=max(iterations, most)),
            **fields,
        )
        res = run(spec, device, RunOptions(progress=False))
        rows += candidate_rows(res.summary, res.info, names)
    return ranked(rows)


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
    **fields: Any,
) -> pd.DataFrame:
    """One row per (problem, candidate, rotating, flush): timing statistics of the candidate's whole
    pipeline, its rank among the candidates of that problem under that setting, and ``best``
    (``tuning.ranking.RESULT_COLUMNS``). ``iterations``: samples per setting (split among the units);
    ``fields``: other ``SweepSpec`` options (``units``, ``reference``, ...).

    A candidate whose result is wrong (relative error over ``rtol``) raises ``BenchmarkError``.
    """
    probs, cands, rot_list, flush_list = checked_arguments(
        problems, candidates, rotating, flush, iterations, default_candidates
    )
    dev = get_device(device) if isinstance(device, str) else device
    cache = cache if cache is not None else CompileCache(max_entries=4096, max_bytes=2**30, disk_dir=False)
    workloads = {}
    for prob in probs:
        for cfg in cands:
            w = hip_candidate(dev, cache, prob, cfg, rtol)
            workloads[w.name] = (prob, w, cfg.name, cfg.split)
    return measure_candidates(dev, workloads, rot_list, flush_list, iterations, mem_fraction=mem_fraction, **fields)


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
    """Run each case's pipeline (the workload a sweep times) ``trials`` times on a fresh set with
    fresh inputs and poisoned outputs; one row per trial with the relative error against numpy (float64)."""
    from ..bench.callable import CallableSets
    from ..devices import device_label

    dev = get_device(device) if isinstance(device, str) else device
    cache = cache if cache is not None else CompileCache(max_entries=4096, max_bytes=2**30, disk_dir=False)
    rows = []
    for dims, cfg, act in cases:
        prob = GemmProblem(f"check-{'x'.join(map(str, dims))}", g.GemmShape(*dims), act)
        for trial in range(trials):
            w = hip_candidate(dev, cache, prob, cfg, rtol=float("inf"), seed=1 + trial)
            with CallableSets(dev, w, 1, 1) as sets:
                dev.launch(w.call, (1, 1, 1), (1, 1, 1), sets.args[0])
                dev.synchronize()
                err = w.call.check(sets.args[0].values)
            rows.append(
                {
                    "device": device_label(dev),
                    "device_name": dev.name,
                    "compiler": dev.compiler,
                    "target": dev.target,
                    "m": dims[0],
                    "n": dims[1],
                    "k": dims[2],
                    "config": cfg.name,
                    "activation": act,
                    "trial": trial,
                    "rel_error": err,
                }
            )
    return pd.DataFrame(rows)


__all__ = [
    "CHECK_CASES",
    "DEFAULT_RTOL",
    "RESULT_COLUMNS",
    "benchmark_candidates",
    "check_on_device",
    "choice_table",
    "hip_candidate",
    "measure_candidates",
    "workload_name",
]
