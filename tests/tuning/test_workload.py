"""``hipexplore.tuning.workload``: tuning candidates as bench workloads on the host device (the
real harness, host C kernels through ctypes): checked against numpy before any is timed (a wrong
result never is), checked on a device over trials, and bad arguments refused. (Their ranking and
the choice table: test_ranking.py; a candidate through the sweep's pipeline: tests/bench/test_workload.py.)"""

from __future__ import annotations

import pytest

from hipexplore.errors import BenchmarkError, ConfigError
from hipexplore.tuning.gemm import GemmConfig
from hipexplore.tuning.lists import transformer_problems
from hipexplore.tuning.workload import benchmark_candidates, check_on_device

from tuning.test_ranking import CANDS

pytestmark = pytest.mark.timeout(300)


def test_wrong_results_are_never_timed():
    probs = transformer_problems(tokens=8, d_model=8)[:1]
    with pytest.raises(BenchmarkError, match="relative error"):
        benchmark_candidates(probs, CANDS[:1], device="host", rotating=(1,), flush=("none",), iterations=2, rtol=0.0)


def test_check_on_device_host():
    cases = (((33, 17, 7), GemmConfig(16, 16, 8, 2, 2, split=4, unroll=2), "relu"),)
    df = check_on_device("host", cases, trials=2)
    assert len(df) == 2 and (df["rel_error"] < 1e-5).all()


def test_bad_device_arguments():
    with pytest.raises(ConfigError, match="'l3-flush'"):
        benchmark_candidates(device="host", flush=("l3-flush",))
    with pytest.raises(ConfigError, match="iterations"):
        benchmark_candidates(device="host", iterations=0)
    with pytest.raises(ConfigError, match="rotating"):
        benchmark_candidates(device="host", rotating=("many",))
