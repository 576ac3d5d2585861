"""Review verdicts: is the new kernel (option, code object, cache) faster, and how sure are we?

Why a decision rule and not a p-value: with thousands of samples any difference is "significant",
and chunk-correlated samples make a rank test's p-value too small anyway. A review needs to know
whether the change matters, so the verdict comes from the 95% interval of the ratio
``median(new) / median(base)`` against a practical threshold (default 2%).

Which interval: the one at the level that varies (``bench.levels``). A sweep measures each
configuration in several *units* (``SweepSpec.units``; the ``pass_index`` of each sample): each unit
with its own buffer placement, process and time. The decision interval is the between-unit one
(``levels.decision_interval``): two kernels of one interleaved run (``bench.interleave``) get a t
interval over their per-unit ratios (what a unit shares cancels in its ratio); two separate runs a
Welch t interval over each run's unit levels (``levels.unit_level``: on a timer grid a unit's
10%-trimmed mean, off one its median). Its half-width is at least the timer's grid (a
median read on a 32 ns grid is not known better than that, and three units reading the same grid
values would otherwise give an interval of width 0). The within-unit interval (``chunk_ci_*``: for
an interleaved pair, windows of chunks holding samples of both resampled jointly,
``paired_ratio_ci``; otherwise each side's chunk blocks on their own) is reported beside it, as
information: each unit's median already carries its chunks' noise, and deciding on the wider of the
two covered 1 in 98.3-98.8% of identical-code rows at a nominal 95% (H100, H200, busy host), the
units' interval with the grid floor in 94.2-98.0% (BENCHMARKS.md, "Wave 4 on the H100"). Units that
shared one process (the host device's default, ``levels.SHARED_PROCESS_LOCATIONS``) decide on the
wider of the two, each at 99% at least (``levels.SHARED_PROCESS_LEVEL``): they do not draw the
process-level state afresh, and on a loaded CI host three of them called a byte-identical copy 1.117x
slower on the units' interval alone, and later (dccd73b) slower on both 95% intervals.

With fewer than ``levels.MIN_UNITS`` units on a side there is no between-unit interval and the
verdict is ``undecided``, saying what to run instead: chunks of one unit share its placement and
process, and on the H200 an interval from them called a byte-identical copy 3.5% slower. The rule:

* ``faster`` / ``slower``: the whole interval lies below ``1 - threshold`` / above ``1 + threshold``;
* ``same``: the whole interval lies within ``[1 - threshold, 1 + threshold]``;
* ``undecided``: otherwise (the noise does not allow a call at this threshold), or too few units, or
  the paired ratio of an interleaved run drifts over the run (Mann-Kendall, ``drift_check``).

``min_detectable`` is the smallest change the rule could call with this noise: the threshold plus
the interval's half-width. The Mann–Whitney U p-value (normal approximation with tie correction,
exact for small samples without ties) is reported beside it, as information, not as the rule.

Two runs are compared configuration by configuration (kernel, size, rotating, flush, timer), their
between-unit interval at ``SEPARATE_RUNS_LEVEL`` (99%) at least: what changed between two sessions
is a level no unit inside either run sees (two kernels of one run that were not interleaved, such as
their cold references, are decided at that level too);
configurations only in one run are listed with ``present`` = ``base only`` / ``new only``.
Runs from different devices are refused unless ``allow_other_device=True``. Two kernels of one
(interleaved) run are compared with ``compare(run, base="A", new="B")``.

Where the parts live: the rule and its words in ``verdict_rule``, one compared configuration in
``verdict_row`` (its drift check in ``verdict_drift``, the Mann–Whitney p-value in ``mann_whitney``),
the compile-cache A/B in ``verdict_scenarios``; this module loads runs and compares them
configuration by configuration.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .bench.info import SWEEP_UNIT_LOCATION
from .bench.levels import MIN_UNITS, pooled_spreads, shared_process
from .bench.stats import Measurement
from .errors import ConfigError
from .schema import Configuration
from .verdict_row import comparison_row
from .verdict_rule import DEFAULT_THRESHOLD, check_threshold, rule_text

# Re-exported: notebooks, the docs' examples, scripts and users import these names from
# ``hipexplore.verdicts``, where they were defined before the module was split by job.
from .mann_whitney import mann_whitney_u
from .verdict_drift import DRIFT_P, drift_check  # noqa: F401
from .verdict_row import SEPARATE_RUNS_LEVEL  # noqa: F401
from .verdict_rule import CHANGES, VERDICTS, _thr, change_called, change_text, size_text, verdict  # noqa: F401
from .verdict_scenarios import compare_scenarios, saving_text

# -- loading runs ---------------------------------------------------------------------------------


def _samples_of(run: Any, what: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """Sample rows and metadata of a SweepResult, a samples parquet file or a samples frame."""
    if isinstance(run, pd.DataFrame):
        return run, dict(run.attrs.get("metadata", {}))
    if hasattr(run, "samples") and hasattr(run, "metadata"):
        return run.samples, dict(run.metadata)
    if isinstance(run, (str, Path)):
        from .bench.io import output_paths, read_results

        path = Path(run)
        if str(path).endswith(".summary.parquet"):
            raise ConfigError(
                f"{what} {str(path)!r} is a summary file; give the samples file "
                f"{str(path).replace('.summary.parquet', '.parquet')!r} (comparisons need the raw samples)"
            )
        paths = output_paths(path)
        if not paths[0].is_file():
            raise ConfigError(f"{what} {str(path)!r} does not exist (expected a sweep's samples .parquet file)")
        got = read_results(paths)  # checked there as untrusted input (bench.readback)
        if got is None:  # samples without a summary file: read the samples alone, checked the same way
            from .bench.readback import read_frame
            from .schema import SAMPLES

            return read_frame(paths[0], SAMPLES), {}
        return got[0], dict(got[2] or {})
    raise ConfigError(
        f"{what} must be a SweepResult, a samples .parquet path or a samples DataFrame; got {type(run).__name__}"
    )


def _one_process(meta: Mapping[str, Any], samples: pd.DataFrame) -> bool:
    """True when a run's units shared one process (``levels.shared_process``): its metadata says
    where they ran; a run recorded without it is taken as in-process when it ran on the host
    device (where units run unless ``worker=True``) in more than one unit."""
    where = SWEEP_UNIT_LOCATION.of(meta, "")
    if where:
        return shared_process(where)
    devices = set(map(str, samples["device"].unique())) if len(samples) and "device" in samples.columns else set()
    return (
        bool(devices)
        and all(d == "host" or d.startswith("host:") for d in devices)
        and "pass_index" in samples.columns
        and samples["pass_index"].nunique() > 1
    )


def _measurements(samples: pd.DataFrame, keys: Sequence[str], what: str) -> dict[tuple, Measurement]:
    need = [*keys, "time_s", "chunk"]
    missing = [c for c in need if c not in samples.columns]
    if missing:
        raise ConfigError(f"{what} is missing sample columns {missing} (is it a samples frame?)")
    kept = samples[~samples["dropped"].to_numpy(bool)] if "dropped" in samples.columns else samples
    out: dict[tuple, Measurement] = {}
    for key, g in kept.groupby(list(keys), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        key = tuple(
            str(k) if name == "rotating_requested" else int(k) if name == "size_bytes" else k
            for name, k in zip(keys, key)
        )
        # a sweep in passes (bench.passes): the interval is bootstrapped over its passes too, as its summary's is
        groups = g["pass_index"].to_numpy() if "pass_index" in g.columns and g["pass_index"].nunique() > 1 else None
        out[key] = Measurement(
            g["time_s"].to_numpy(), chunks=g["chunk"].to_numpy(), groups=groups, label=" ".join(map(str, key))
        )
    return out


def _device_names(samples: pd.DataFrame) -> set[str]:
    return set(map(str, samples["device_name"].unique())) if "device_name" in samples.columns else set()


def _kernels_of_one_run(run: Any, base: str | None, new: str | None) -> tuple:
    """(keys, base and new measurements, fixed columns, both sides' metadata and samples) of kernel
    ``new`` against kernel ``base`` of one run, configuration by configuration."""
    if base is None or new is None:
        raise ConfigError("comparing within one run needs both base= and new= kernel names")
    samples, meta = _samples_of(run, "run")
    have = sorted(map(str, samples["kernel"].unique())) if "kernel" in samples.columns else []
    for name, k in (("base", base), ("new", new)):
        if k not in have:
            raise ConfigError(f"{name} kernel {k!r} is not in the run; it holds {have}")
    if base == new:
        raise ConfigError(f"base and new are the same kernel {base!r}")
    keys = Configuration.SETUP_COLUMNS
    left = _measurements(samples[samples["kernel"] == base], keys, "run")
    right = _measurements(samples[samples["kernel"] == new], keys, "run")
    fixed = {"base_kernel": base, "new_kernel": new}
    return keys, left, right, fixed, (meta, meta), (samples, samples)


def _two_runs(run: Any, other: Any, allow_other_device: bool) -> tuple:
    """The same as ``_kernels_of_one_run`` for two runs, matched on every configuration column;
    runs of different devices are refused unless ``allow_other_device``."""
    s1, m1 = _samples_of(run, "base run")
    s2, m2 = _samples_of(other, "new run")
    d1, d2 = _device_names(s1), _device_names(s2)
    if d1 and d2 and d1 != d2 and not allow_other_device:
        raise ConfigError(
            f"the runs were measured on different devices (base: {sorted(d1)}, new: {sorted(d2)}); "
            f"timings of different devices are no A/B comparison (allow_other_device=True / "
            f"--allow-other-device to compare anyway)"
        )
    keys = Configuration.COLUMNS
    left, right = _measurements(s1, keys, "base run"), _measurements(s2, keys, "new run")
    return keys, left, right, {}, (m1, m2), (s1, s2)


def compare(
    run: Any,
    other: Any = None,
    *,
    base: str | None = None,
    new: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    level: float = 0.95,
    resamples: int = 2000,
    allow_other_device: bool = False,
) -> pd.DataFrame:
    """Verdicts, one row per configuration (see the module docstring).

    ``compare(base_run, new_run)``: two runs (SweepResult, samples .parquet path or samples frame),
    configuration by configuration. ``compare(run, base="A", new="B")``: kernel ``B`` against
    kernel ``A`` of one run, configuration by configuration (size, rotating, flush, timer).
    The frame's ``attrs`` hold the threshold, the rule and both sides' metadata.
    """
    threshold = check_threshold(threshold)
    if not 0 < level < 1:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")
    if other is not None and (base is not None or new is not None):
        raise ConfigError("give either two runs, or one run with base= and new= kernel names, not both")
    if other is None:
        keys, left, right, fixed, metas, sides = _kernels_of_one_run(run, base, new)
    else:
        keys, left, right, fixed, metas, sides = _two_runs(run, other, allow_other_device)
    one_process = any(_one_process(m, s) for m, s in zip(metas, sides))
    rows = _rows(keys, left, right, fixed, (threshold, level, resamples), other is not None, one_process)
    frame = pd.DataFrame(rows)
    frame.attrs.update(
        threshold=threshold,
        level=level,
        rule=rule_text(threshold),
        caveat="" if other is None else _separate_runs_caveat(sides),
        base_metadata=dict(metas[0]),
        new_metadata=dict(metas[1]),
        hint=_no_overlap_hint(frame) if other is not None else "",
    )
    return frame


def _rows(
    keys: Sequence[str],
    left: dict[tuple, Measurement],
    right: dict[tuple, Measurement],
    fixed: dict[str, str],
    settings: tuple[float, float, int],
    separate: bool,
    one_process: bool,
) -> list[dict[str, Any]]:
    """``compare``'s rows in key order: every configuration of either side, compared where both
    have it (``settings``: threshold, level, resamples), else listed as present on one side only."""
    threshold, level, resamples = settings
    flush_at = list(keys).index("flush")
    pooled = pooled_spreads(
        {k: (right[k], left[k]) for k in set(left) & set(right)}, lambda k: k[:flush_at] + k[flush_at + 1 :]
    )
    rows = []
    for key in sorted(
        set(left) | set(right),
        key=lambda k: tuple((0, x, "") if isinstance(x, (int, float, np.integer)) else (1, 0, str(x)) for x in k),
    ):
        if key in left and key in right:
            compared = {
                "present": "both",
                **comparison_row(
                    left[key],
                    right[key],
                    threshold,
                    level,
                    resamples,
                    separate=separate,
                    one_process=one_process,
                    pooled=pooled.get(key),
                ),
            }
        else:
            compared = {
                "present": "base only" if key in left else "new only",
                "verdict": "",
                "change_called": "",
                "note": f"only in the {'base' if key in left else 'new'} run: not compared",
            }
        rows.append({**fixed, **dict(zip(keys, key)), **compared})
    return rows


def _separate_runs_caveat(sides: tuple[Any, Any]) -> str:
    """What the intervals of two separate runs cover, by the fewer units (pass_index) of the two."""

    def passes_of(samples: Any) -> int:  # units (pass_index) of a run
        return int(samples["pass_index"].nunique()) if "pass_index" in samples.columns and len(samples) else 1

    fewest = min(passes_of(sides[0]), passes_of(sides[1]))
    return (
        f"two separate runs, each in {fewest} or more units: the intervals compare the runs' unit levels "
        f"(each unit its own process and placement), so they cover what moved between units, not what "
        f"changed between the two runs' sessions (a driver update, another machine); one interleaved run "
        f"(hipexplore bench A,B --interleave) leaves nothing between them"
        if fewest >= MIN_UNITS
        else "two separate runs with a single unit on a side: nothing says how far a rerun would move, so no "
        "row is decided; rerun both with --units 4 or more, or measure both in one interleaved run"
    )


def _no_overlap_hint(frame: pd.DataFrame) -> str:
    """Two runs sharing no configuration, most often because their kernels have other names
    (every row "only in the base run" / "only in the new run"): say which kernels each run holds
    and how to compare two differently named kernels."""
    if frame.empty or "present" not in frame.columns or (frame["present"] == "both").any():
        return ""
    kernels = (
        {
            side: sorted(map(str, pd.unique(frame.loc[frame["present"] == f"{side} only", "kernel"])))
            for side in ("base", "new")
        }
        if "kernel" in frame.columns
        else {"base": [], "new": []}
    )
    if kernels["base"] and kernels["new"] and set(kernels["base"]) != set(kernels["new"]):
        a, b = kernels["base"][0], kernels["new"][0]
        return (
            f"no configuration is in both runs: configurations are matched by kernel name, and the base run "
            f"holds kernel(s) {', '.join(kernels['base'])} while the new run holds {', '.join(kernels['new'])}. "
            f"To compare two kernels, measure them in one run and name them: hipexplore bench {a},{b} "
            f"--interleave --out RUN.parquet, then hipexplore compare RUN.parquet --base {a} --new {b}"
        )
    return (
        "no configuration is in both runs (sizes, rotating counts, flush modes or timers differ): "
        "rerun one of them with the other's configurations"
    )


def pairs(kernels: Sequence[str]) -> list[tuple[str, str]]:
    """Every (base, new) pair of ``kernels`` in order (the first is the base of the others first)."""
    return list(combinations(list(kernels), 2))


__all__ = [
    "CHANGES",
    "DEFAULT_THRESHOLD",
    "VERDICTS",
    "change_called",
    "change_text",
    "check_threshold",
    "compare",
    "compare_scenarios",
    "comparison_row",
    "mann_whitney_u",
    "pairs",
    "rule_text",
    "saving_text",
    "verdict",
]
