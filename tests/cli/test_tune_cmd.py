"""hipexplore.cli.tune_cmd: ``hipexplore tune-replay``'s text report. The command run end to end:
tests/e2e/test_first_run_cli.py."""

from __future__ import annotations

import pandas as pd


def test_negative_vs_ideal_is_explained():
    from hipexplore.cli.tune_cmd import replay_text

    out = {
        "compiler": "host",
        "target": "host",
        "jobs": 1,
        "cache": "memory",
        "isolated": True,
        "problems": ["qkv"],
        "candidates_per_problem": 2,
        "kernels": 4,
        "unique_kernels": 3,
        "by_role": {},
        "seconds": 0.8,
        "seconds_ideal": 1.0,
        "seconds_without_cache": 2.0,
        "seconds_without_cache_source": "measured",
        "overhead_vs_ideal": -0.2,
        "speedup_vs_without_cache": 2.5,
        "failed": 0,
        "seconds_saved": 1.2,
        "seconds_saved_recorded": 0.9,
    }
    cols = [
        "scenario",
        "jobs",
        "lookups",
        "compiles",
        "memory_hits",
        "disk_hits",
        "remote_hits",
        "joins",
        "failed",
        "seconds",
        "compile_seconds",
        "seconds_saved",
    ]
    text = replay_text(out, pd.DataFrame([dict.fromkeys(cols, 0)]))
    assert "vs ideal: -20.0%" in text and "negative: this pass was faster than the ideal pass" in text
    assert "saved: 1.200 s of wall time" in text and "quote this one" in text
    assert "negative" not in replay_text({**out, "overhead_vs_ideal": 0.1}, pd.DataFrame([dict.fromkeys(cols, 0)]))
