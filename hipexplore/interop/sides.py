"""``hipexplore compare`` on any result file: a sweep's parquet, an nvbench JSON or a pyperf JSON.

Why one entry: a reviewer's CI keeps whatever its team's tool writes; the verdicts (the rule,
intervals, minimum detectable effect) are the same, and what a source lacks is said on the frame
(``attrs["source_note"]``) and on its rows (``interval``, ``note``). Two sides must be of one format
(an nvbench cold time against a pyperf wall-clock time is no A/B). Files of one format that share
no benchmark are refused (``ConfigError``): they are two different benchmarks, not a comparison.

How each format is decided: a sweep's parquet and a pyperf file through ``verdicts.compare`` (pyperf's
runs are processes, i.e. units); an nvbench file, one process per file, by ``single_process_rows``
(module docstring of ``nvbench_files``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..untrusted import shown

FORMATS = ("parquet", "nvbench", "pyperf")
#: consecutive nvbench samples resampled together (they share the GPU's state of the moment)
NVBENCH_BLOCK = 16


@dataclass
class Side:
    """One side of a comparison read from a file: its samples frame (or summaries), metadata, format."""

    path: str
    fmt: str
    frame: Any
    meta: dict[str, str] = field(default_factory=dict)
    has_samples: bool = True
    lacks: str = ""


def detect(path: str | Path) -> str:
    """``parquet``, ``nvbench`` or ``pyperf`` from the file's first bytes (and, for JSON, its shape)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            head = fh.read(4)
    except (FileNotFoundError, IsADirectoryError):
        return "parquet"  # the parquet reader says what it expected there
    except OSError as exc:
        raise ConfigError(
            f"run {str(path)!r}: {exc.strerror or exc} (expected a sweep's .parquet, an nvbench or a pyperf JSON file)"
        ) from None
    if head == b"PAR1":
        return "parquet"
    if head[:2] == b"\x1f\x8b":
        return "pyperf"  # pyperf writes .json.gz; nvbench never compresses
    if head.lstrip()[:1] in (b"{", b"["):
        return "json"
    return "parquet"  # neither: the parquet reader names what it is not


def load_side(path: str, what: str) -> Side:
    from . import nvbench_files, pyperf_files

    fmt = detect(path)
    if fmt == "parquet":
        from ..verdicts import _samples_of

        frame, meta = _samples_of(path, what)
        return Side(path, "parquet", frame, meta)
    if fmt == "pyperf":
        frame, meta = pyperf_files.read(path)
        return Side(path, "pyperf", frame, meta, True, pyperf_files.LACKS)
    obj = nvbench_files.parse(Path(path))
    if nvbench_files.looks_like(obj):
        frame, meta, has = nvbench_files.read(path, obj)
        return Side(
            path, "nvbench", frame, meta, has, nvbench_files.LACKS_SAMPLES if has else nvbench_files.LACKS_SUMMARIES
        )
    if pyperf_files.looks_like(obj):
        frame, meta = pyperf_files.read(path, obj)
        return Side(path, "pyperf", frame, meta, True, pyperf_files.LACKS)
    raise ConfigError(
        f"{what} {str(path)!r} is JSON of no known kind (neither nvbench's 'benchmarks'+'devices' nor "
        f"pyperf's 'version'+'benchmarks'); expected a sweep's .parquet, an nvbench or a pyperf JSON file"
    )


def compare_files(
    paths: list[str],
    *,
    base: str | None = None,
    new: str | None = None,
    threshold: float,
    allow_other_device: bool = False,
) -> Any:
    """The verdict frame of ``compare`` for one or two files of any format (module docstring)."""
    from ..verdicts import compare

    sides = [load_side(p, w) for p, w in zip(paths, ("base run", "new run") if len(paths) == 2 else ("run",))]
    fmts = {s.fmt for s in sides}
    if len(fmts) > 1:
        raise ConfigError(
            f"the base is a {sides[0].fmt} file and the new one a {sides[1].fmt} file; compare two files of "
            f"one format (their timers measure different things)"
        )
    kind = sides[0].fmt
    if kind == "parquet":
        return (
            compare(paths[0], paths[1], threshold=threshold, allow_other_device=allow_other_device)
            if len(paths) == 2
            else compare(paths[0], base=base, new=new, threshold=threshold)
        )
    frames = [_with_meta(s) for s in sides]
    names = [set(map(str, s.frame["kernel"].unique())) for s in sides]
    if len(sides) == 2 and not names[0] & names[1]:
        raise ConfigError(
            f"{kind} files {paths[0]!r} and {paths[1]!r} share no benchmark (base: "
            f"{shown(', '.join(sorted(names[0])), 120)}; new: {shown(', '.join(sorted(names[1])), 120)}); "
            f"expected two results of the same benchmark"
        )
    if len(sides) == 1:
        for flag, k in (("--base", base), ("--new", new)):
            if k not in names[0]:
                raise ConfigError(
                    f"{flag} {shown(k)} is not a benchmark of {paths[0]!r}; it holds "
                    f"{shown(', '.join(sorted(names[0])), 160)}"
                )
    if kind == "pyperf" or all(s.has_samples for s in sides) and kind != "nvbench":
        frame = (
            compare(*frames, threshold=threshold, allow_other_device=allow_other_device)
            if len(sides) == 2
            else compare(frames[0], base=base, new=new, threshold=threshold)
        )
    else:
        frame = single_process_rows(sides, base, new, threshold, allow_other_device)
    frame.attrs["source_note"] = "; ".join(dict.fromkeys(s.lacks for s in sides if s.lacks))
    frame.attrs["source_format"] = kind
    return frame


def _with_meta(side: Side) -> Any:
    frame = side.frame.copy()
    frame.attrs["metadata"] = dict(side.meta)
    return frame


def single_process_rows(
    sides: list[Side], base: str | None, new: str | None, threshold: float, allow_other_device: bool
) -> Any:
    """Rows of ``verdicts.compare``'s shape for sides of one process each (nvbench): with samples, the
    within-process interval (blocks of ``NVBENCH_BLOCK`` consecutive samples), else the normal
    approximation on the summaries; both decided at ``SEPARATE_RUNS_LEVEL``."""
    import pandas as pd

    from ..schema import Configuration
    from ..verdict_row import SEPARATE_RUNS_LEVEL
    from ..verdict_rule import rule_text

    if len(sides) == 2:
        d1, d2 = (set(map(str, s.frame["device_name"].unique())) for s in sides)
        if d1 != d2 and not allow_other_device:
            raise ConfigError(
                f"the files were measured on different devices (base: {sorted(d1)}, new: {sorted(d2)}); "
                f"--allow-other-device to compare anyway"
            )
        left, right = sides[0].frame, sides[1].frame
        keys, fixed = list(Configuration.COLUMNS), {}
    else:
        f = sides[0].frame
        left, right = f[f["kernel"] == base], f[f["kernel"] == new]
        keys, fixed = list(Configuration.SETUP_COLUMNS), {"base_kernel": base, "new_kernel": new}
    both_samples = all(s.has_samples for s in sides)
    if not both_samples:  # one side has samples, the other summaries: compare summaries of both
        left, right = (
            _as_summaries(f, keys) if s.has_samples else f for f, s in zip((left, right), (sides[0], sides[-1]))
        )
    lg = {k if isinstance(k, tuple) else (k,): g for k, g in left.groupby(keys, sort=True)}
    rg = {k if isinstance(k, tuple) else (k,): g for k, g in right.groupby(keys, sort=True)}
    rows = []
    for key in sorted(set(lg) | set(rg), key=str):
        if key in lg and key in rg:
            compared = {
                "present": "both",
                **(_sample_row if both_samples else _summary_row)(lg[key], rg[key], threshold, SEPARATE_RUNS_LEVEL),
            }
        else:
            compared = {
                "present": "base only" if key in lg else "new only",
                "verdict": "",
                "change_called": "",
                "note": f"only in the {'base' if key in lg else 'new'} file: not compared",
            }
        rows.append({**fixed, **dict(zip(keys, key)), **compared})
    frame = pd.DataFrame(rows)
    frame.attrs.update(
        threshold=threshold,
        level=SEPARATE_RUNS_LEVEL,
        rule=rule_text(threshold),
        caveat="",
        hint="",
        base_metadata=dict(sides[0].meta),
        new_metadata=dict(sides[-1].meta),
    )
    return frame


def _as_summaries(frame: Any, keys: list[str]) -> Any:
    """Per-sample rows as nvbench's summaries would hold them: mean, relative stdev, sample count."""
    g = frame.groupby(keys, sort=True)["time_s"]
    out = g.agg(time_s="mean", sd="std", n="size").reset_index()
    out["rel_sd"] = out["sd"] / out["time_s"]
    return out.drop(columns="sd")


def _decided(ratio: float, lo: float, hi: float, threshold: float) -> dict[str, Any]:
    from ..verdict_rule import change_called, verdict

    half = (hi - lo) / 2
    return {
        "ratio": ratio,
        "ratio_ci_low": lo,
        "ratio_ci_high": hi,
        "change": ratio - 1.0,
        "half_width": half,
        "min_detectable": threshold + half,
        "verdict": verdict(lo, hi, threshold),
        "change_called": change_called(lo, hi),
    }


def _sample_row(b: Any, n: Any, threshold: float, level: float) -> dict[str, Any]:
    import numpy as np

    from ..bench.stats import Measurement, ratio_ci
    from ..mann_whitney import mann_whitney_u

    mb, mn = (Measurement(g["time_s"].to_numpy(float), chunks=np.arange(len(g)) // NVBENCH_BLOCK) for g in (b, n))
    ratio, lo, hi = ratio_ci(mn, mb, level=level)
    b_lo, b_hi = mb.bootstrap_ci(0.95)
    n_lo, n_hi = mn.bootstrap_ci(0.95)
    out = {
        "base_n": mb.n,
        "new_n": mn.n,
        "base_units": 1,
        "new_units": 1,
        "base_iqr_rel": mb.iqr_rel,
        "new_iqr_rel": mn.iqr_rel,
        "base_median_s": mb.median,
        "base_ci_low_s": b_lo,
        "base_ci_high_s": b_hi,
        "new_median_s": mn.median,
        "new_ci_low_s": n_lo,
        "new_ci_high_s": n_hi,
        "p_value": mann_whitney_u(mn.samples, mb.samples)[1],
        "interval": f"within one process per side (nvbench samples, blocks of {NVBENCH_BLOCK}), {level:.0%}",
    }
    return {**out, **_decided(ratio, lo, hi, threshold), "note": ""}


def _summary_row(b: Any, n: Any, threshold: float, level: float) -> dict[str, Any]:
    """The weaker interval: log(mean_new / mean_base) ± z * sqrt(cv_b²/n_b + cv_n²/n_n)."""
    from statistics import NormalDist

    rb, rn = b.iloc[0], n.iloc[0]
    mb, mn = float(rb.get("time_s")), float(rn.get("time_s"))
    cb, cn = float(rb.get("rel_sd", math.nan)), float(rn.get("rel_sd", math.nan))
    nb, nn = int(rb.get("n", 0) or 0), int(rn.get("n", 0) or 0)
    ratio = mn / mb
    if nb > 1 and nn > 1 and math.isfinite(cb) and math.isfinite(cn):
        se = math.sqrt(cb * cb / nb + cn * cn / nn)
        z = NormalDist().inv_cdf(1 - (1 - level) / 2)
        lo, hi = ratio * math.exp(-z * se), ratio * math.exp(z * se)
    else:
        lo = hi = math.nan
    out = {
        "base_n": nb,
        "new_n": nn,
        "base_units": 1,
        "new_units": 1,
        "base_iqr_rel": math.nan,
        "new_iqr_rel": math.nan,
        "base_median_s": mb,
        "base_ci_low_s": math.nan,
        "base_ci_high_s": math.nan,
        "new_median_s": mn,
        "new_ci_low_s": math.nan,
        "new_ci_high_s": math.nan,
        "p_value": math.nan,
        "interval": f"summaries only (nvbench mean, relative stdev, sample count; samples taken as independent), "
        f"{level:.0%}: weaker",
    }
    if math.isfinite(lo):
        return {**out, **_decided(ratio, lo, hi, threshold), "note": ""}
    return {
        **out,
        **_decided(ratio, lo, hi, threshold),
        "verdict": "undecided",
        "note": "no relative stdev or sample count in the summaries: no interval",
    }


__all__ = ["FORMATS", "NVBENCH_BLOCK", "Side", "compare_files", "detect", "load_side", "single_process_rows"]
