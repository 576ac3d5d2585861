"""The report's sentences on the compiler's own cache (issue 45, item 3): "beyond NVRTC's own cache:
X s [lo, hi]" from a replay recorded in rounds, read back through the report's own loader path
(``split_replay``), and what it says when the replay had no rounds."""

from __future__ import annotations

import pandas as pd
import pytest

from hipexplore.report import headline as hl
from hipexplore.report.baselines import own_cache_sentences
from hipexplore.report.replay import split_replay
from hipexplore.tuning.savings import savings

WALLS = {
    "ideal": [3.9, 4.2, 4.0],
    "cold": [10.0, 10.6, 9.8],
    "off": [9.9, 10.2, 9.7],
    "compiler-cache": [7.0, 7.4, 6.9],
    "memory": [4.0, 4.3, 4.1],
}
OWN = {
    "cold": "off: HIPEXPLORE_COMPILER_CACHE=off (hipexplore passes --no-cache); PCH off",
    "compiler-cache": "on: HIPEXPLORE_COMPILER_CACHE=on; PCH off",
}


def _frame(walls=WALLS) -> pd.DataFrame:
    """A replay frame as tune-replay --passes --frame writes it (two lookups a pass; timer made up)."""
    rows = []
    for scenario, ws in walls.items():
        for rnd, wall in enumerate(ws):
            for seq in range(2):
                rows.append(
                    {
                        "seq": seq,
                        "scenario": scenario,
                        "round": rnd,
                        "jobs": 1,
                        "pass_seconds": wall,
                        "outcome": "memory-hit" if scenario == "memory" and seq else "compiled",
                        "lookup_seconds": wall / 2,
                        "compile_seconds": wall / 2,
                        "compiler": "nvrtc",
                        "kernel": f"k{seq}",
                        "compiler_cache": OWN.get(scenario, "on: NVRTC's default; PCH off"),
                    }
                )
    return pd.DataFrame(rows)


def test_beyond_nvrtcs_own_cache_with_its_interval():
    data = split_replay(_frame(), "recorded")
    assert data.compiler == "nvrtc" and data.own_cache == "on: NVRTC's default; PCH off"
    expected = savings(WALLS, "memory")
    assert data.savings == expected
    text = " ".join(own_cache_sentences(data))
    beyond = expected["saved_beyond_compiler_cache"]
    lo, hi = beyond["seconds_ci"]
    assert f"Beyond NVRTC's own cache: {beyond['seconds']:.3g} s [" in text
    assert f"[{lo:.3g}, " in text and f", {hi:.3g}]" in text and "3+3 passes" in text
    assert "Against every compiler cache off ('cold'): " in text and "Memory pass / ideal: " in text
    assert "The compiler's own cache in this replay: on: NVRTC's default" in text
    assert "Beyond NVRTC's own cache" in " ".join(hl.cache_sentences(data))  # in the headline's cache paragraph


def test_both_caches_warm_is_said_when_the_replay_had_a_disk_warm_pass():
    walls = {**WALLS, "disk-cold": [4.1, 4.4, 4.2], "disk-warm": [0.5, 0.6, 0.55]}
    data = split_replay(_frame(walls), "recorded")
    warm = data.savings["warm_beyond_compiler_cache"]
    assert warm["scenario"] == "disk-warm"
    text = " ".join(own_cache_sentences(data))
    assert f"Beyond NVRTC's own cache, both warm: {warm['seconds']:.3g} s [" in text
    assert "both warm" not in " ".join(own_cache_sentences(split_replay(_frame(), "recorded")))


def test_a_replay_without_rounds_says_what_would_measure_it():
    data = split_replay(_frame({"off": [2.0], "memory": [1.0]}), "recorded")
    text = " ".join(own_cache_sentences(data))
    assert "Beyond NVRTC's own cache: not measured" in text and "--passes" in text
    one = split_replay(_frame({"compiler-cache": [2.0], "memory": [1.0]}), "recorded")
    assert "(one pass a side: no interval)" in " ".join(own_cache_sentences(one))


@pytest.mark.parametrize("compiler,own", [("hiprtc", "COMGR's own cache"), ("triton", "Triton's own cache")])
def test_other_compilers_are_named(compiler, own):
    data = split_replay(_frame().assign(compiler=compiler), "recorded")
    assert f"Beyond {own}: " in " ".join(own_cache_sentences(data))
