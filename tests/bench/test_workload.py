"""Workloads of several kernels (bench.workload.pipeline_workload) measured by the one pipeline:
a fill then a copy on the real host device, each buffer set its own, checked, freed with its set;
and a tuning candidate (tuning.workload) measured with units and a cold reference like a kernel."""

from __future__ import annotations

import numpy as np
import pytest

import hipexplore as hx
from hipexplore.bench.workload import Launch, PipelineSet, pipeline_workload
from hipexplore.devices.base import pack_args
from hipexplore.devices.host import HostDevice
from hipexplore.errors import BenchmarkError
from hipexplore.kernels import catalog
from hipexplore.kernels.build import kernel_for

N = 4096


class Counting(HostDevice):
    """The real host device, counting what is allocated and freed."""

    def __init__(self) -> None:
        super().__init__()
        self.live: set[int] = set()
        self.allocated = 0

    def alloc(self, nbytes: int):
        buf = super().alloc(nbytes)
        self.live.add(buf.ptr)
        self.allocated += 1
        return buf

    def free(self, buf) -> None:
        self.live.discard(buf.ptr)
        super().free(buf)


def fill_then_copy(dev: Counting, value: float, made: list[int], wrong: bool = False):
    fill, copy = catalog.get("fill"), catalog.get("copy")

    def make_set(i: int) -> PipelineSet:
        made.append(i)
        bufs = {"x": dev.alloc(4 * N), "y": dev.alloc(4 * N)}
        grid, block = fill.geometry(N, dev)
        return PipelineSet(
            bufs,
            [
                Launch(
                    kernel_for(dev, fill), grid, block, pack_args(fill.args, {"dst": bufs["x"], "value": value, "n": N})
                ),
                Launch(
                    kernel_for(dev, copy),
                    grid,
                    block,
                    pack_args(copy.args, {"dst": bufs["y"], "src": bufs["x"], "n": N}),
                ),
            ],
        )

    def check(one: PipelineSet) -> float:
        y = np.empty(N, dtype=np.float32)
        dev.copy_to_host(one.buffers["y"], y)
        if wrong or not np.all(y == value):
            raise BenchmarkError(f"fill_copy is wrong: y[0] = {y[0]}")
        return 0.0

    return pipeline_workload("fill_copy", dev, make_set, footprint_bytes=3 * 4 * N, check=check)


def test_a_pipeline_of_two_kernels_is_swept_on_its_own_sets_checked_and_freed():
    dev = Counting()
    made: list[int] = []
    try:
        w = fill_then_copy(dev, 2.5, made)
        res = hx.sweep(
            [w],
            [4 * N],
            [1, 3],
            ["none"],
            device=dev,
            iterations=6,
            units=2,
            reference_samples=4,
            warmup_s=0.0,
            progress=False,
        )
        s = res.summary
        assert set(s["kernel"]) == {"fill_copy"} and set(s["passes"]) == {2} and len(s) == 3  # 2 rotating + reference
        three = res.samples[(res.samples["rotating_requested"] == "3") & (res.samples["flush"] == "none")]
        assert sorted(three["buffer_set"].unique()) == [0, 1, 2]  # it enqueued itself on every set in turn
        assert res.info.measured.verify["fill_copy.16384"] == 0.0  # checked, in the first unit
        assert (s["footprint_bytes"] == 3 * 4 * N).all() and s["bias"].notna().all()
        assert made.count(0) >= 4 and max(made) == 2
        assert not dev.live and dev.allocated > 0  # every set's buffers went with the set
    finally:
        dev.close()


def test_a_wrong_pipeline_is_never_timed():
    dev = Counting()
    try:
        with pytest.raises(BenchmarkError, match="fill_copy is wrong"):
            hx.sweep(
                [fill_then_copy(dev, 1.0, [], wrong=True)],
                [4 * N],
                [1],
                ["none"],
                device=dev,
                iterations=4,
                units=1,
                reference=False,
                warmup_s=0.0,
                progress=False,
            )
        assert not dev.live
    finally:
        dev.close()


def test_a_tuning_candidate_is_measured_by_the_pipeline_with_units_and_a_reference():
    from hipexplore.compile.cache import CompileCache
    from hipexplore.tuning.gemm import GemmConfig
    from hipexplore.tuning.lists import transformer_problems
    from hipexplore.tuning.workload import hip_candidate

    prob = transformer_problems(tokens=16, d_model=8)[0]
    dev = Counting()
    try:
        w = hip_candidate(dev, CompileCache(disk_dir=False), prob, GemmConfig(16, 16, 8, 2, 2, split=3, unroll=2))
        res = hx.sweep(
            [w],
            [4 * prob.shape.m * prob.shape.n],
            [1, 2],
            ["none", "l2-read"],
            device=dev,
            iterations=6,
            reference_samples=6,
            warmup_s=0.0,
            progress=False,
        )
        s = res.summary
        assert len(s) == 4 + 1 and set(s["passes"]) == {3}  # in its units, like any kernel, with its cold reference
        assert s[s["flush"] != "cold-reference"]["bias"].notna().all()
        assert res.info.measured.verify[f"{w.name}.{4 * prob.shape.m * prob.shape.n}"] < 1e-5
        assert not dev.live
    finally:
        dev.close()
