"""hipexplore.tuning.triton_cache: Triton's own on-disk cache (TRITON_CACHE_DIR) timed over a tuning
list beside ours. Real Triton compiles (gfx942, isolated workers) of a one-problem list: the cold
pass compiles each unique kernel once and hits its repeats, the warm pass hits everything, and a
given directory keeps its entries for the next run."""

from __future__ import annotations

import pytest

from conftest import require_compiler
from hipexplore.tuning.lists import select_problems
from hipexplore.tuning.results import ReplayReport, ScenarioResult
from hipexplore.tuning.triton_cache import TRITON_SCENARIOS, add_triton_cache_passes, triton_cache_passes
from hipexplore.tuning.triton_list import build_triton_list


@pytest.fixture(scope="module")
def tuning_list():
    require_compiler("triton")
    return build_triton_list("gfx942", problems=select_problems("1", tokens=64, d_model=32), limit=2)


def outcomes(result: ScenarioResult) -> dict[str, int]:
    return result.frame["outcome"].value_counts().to_dict()


@pytest.mark.timeout(600)
def test_cold_then_warm_in_a_given_directory_and_again(tuning_list, tmp_path):
    assert TRITON_SCENARIOS == ("triton-cold", "triton-warm")
    folder = tmp_path / "triton-own"
    out = triton_cache_passes(tuning_list, jobs=1, cache_dir=str(folder))
    assert list(out) == list(TRITON_SCENARIOS)
    cold, warm = out["triton-cold"], out["triton-warm"]
    kernels, unique = tuning_list.kernels, tuning_list.unique_kernels
    assert outcomes(cold) == {"compiled": unique, **({"disk-hit": kernels - unique} if kernels > unique else {})}
    assert outcomes(warm) == {"disk-hit": kernels}
    assert (cold.scenario, cold.jobs, warm.scenario) == ("triton-cold", 1, "triton-warm")
    assert cold.frame["seq"].tolist() == list(range(kernels))  # in time order, numbered
    assert (cold.frame.loc[cold.frame["outcome"] == "compiled", "compile_seconds"] > 0).all()
    assert (warm.frame["compile_seconds"] == 0).all() and warm.seconds < cold.seconds
    assert cold.summary()["compiles"] == unique and warm.summary()["hits"] == kernels
    assert any(folder.rglob("*")) and folder.is_dir()  # a given directory is kept
    again = triton_cache_passes(tuning_list, jobs=1, cache_dir=str(folder))
    assert outcomes(again["triton-cold"]) == {"disk-hit": kernels}  # "cold" over a directory that is not empty


@pytest.mark.timeout(600)
def test_added_to_a_report_beside_its_scenarios(tuning_list):
    import pandas as pd

    report = ReplayReport(
        tuning_list,
        jobs=1,
        cache="memory",
        isolated=True,
        primary="memory",
        scenarios={"memory": ScenarioResult("memory", 1, 1.0, pd.DataFrame())},
    )
    assert add_triton_cache_passes(report) is report
    assert list(report.scenarios) == ["memory", *TRITON_SCENARIOS]
    assert outcomes(report.scenarios["triton-warm"]) == {"disk-hit": tuning_list.kernels}
