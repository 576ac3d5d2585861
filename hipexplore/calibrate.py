"""``hipexplore calibrate``: this device's A/A false-verdict rate, the coverage of its intervals and
the smallest change its defaults resolve, measured on a byte-identical copy of a kernel.

Why: every verdict leans on a false-verdict rate nobody could check on their own machine (nvbench
users ask for a self-comparison test, NVIDIA/nvbench #478 and #481). The measurement is the one
``benchmarks/verdict_truth.py`` made for BENCHMARKS.md, at the command's defaults, in one command:

* rounds of one interleaved sweep of kernel ``A`` and ``B`` (the same source text, another kernel
  name) at the default stop rule and units: every ``faster``/``slower`` of ``compare(run, base=A,
  new=B)`` is a false verdict on identical code (interleaved rows, decided at 95%; their cold
  references, measured apart, at 99%);
* consecutive rounds compared as separate runs (``A`` of round i against ``A`` of round i+1, and
  ``B`` likewise): every ``faster``/``slower`` is false too (decided at 99%);
* coverage: how many of those rows' intervals hold 1 (no change), against the nominal level;
* per size, the median ``min_detectable`` of the interleaved rows: changes smaller than it are
  not resolved at the defaults.

Rates come with a 95% Wilson score interval (``wilson``): 0 false verdicts in 24 rows is "0%
[0%, 13.8%]", not "never". The result is kept per device (``store``) where ``compare`` and the
report cite it (``cite``): "on this device identical code was called different in X of N rows;
changes under Y% are not resolved at defaults".
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .bench.info import DEVICE_NAME, GIT_REVISION, HIPEXPLORE
from .errors import ConfigError

#: the host's kernel (a C loop of multiply-adds, REPS times the work per element) and the GPU's (a
#: grid-stride stream: EXTRA percent more elements, wrapping around); the copies differ in name only
WORK_C = r"""
typedef unsigned long long hx_u64;
void hx_work(float* restrict a, const float* restrict b, float s, hx_u64 n) {
  for (hx_u64 i = 0; i < n; ++i) {
    float v = 2.0f + 0.0f * a[i];
    for (hx_u64 r = 0; r < 8 * REPS; ++r) v = v * s + 1.0f;
    a[i] = v + b[i] * 0.0f;
  }
}
"""
STREAM_CU = r"""
extern "C" __global__ void hx_stream(float* __restrict__ out, const float* __restrict__ a,
                                     const float* __restrict__ b, float s, unsigned long long n) {
  /* EXTRA/100 more elements than n, wrapping around: that much more work, the same code shape */
  unsigned long long total = n + (n * EXTRA) / 100;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    unsigned long long j = i < n ? i : i - n;
    out[j] = a[j] * s + b[j];
  }
}
"""
GPU_ARGS = "out:out:f32[n],in:a:f32[n],in:b:f32[n],s:f32=2.0,n:u64=n"
HOST_ARGS = "inout:a:f32[n],in:b:f32[n],s:f32=0.5,n:u64=n"
#: defaults per device class: sizes, and the wall-time budget of the rounds (the command's limit:
#: <= 3 min on the host, <= 5 min on a GPU, set-up included)
DEFAULTS = {"host": (("64KiB", "256KiB"), 120.0), "gpu": (("1MiB", "16MiB", "256MiB"), 250.0)}
MIN_ROUNDS = 2
FORMAT = "hipexplore-calibration/1"


def kernel_files(device_kind: str, folder: Path) -> tuple[list[Path], str, str]:
    """(the two byte-identical source files, entry, argument spec) for a device class."""
    host = device_kind == "host"
    text = ("#define REPS 1\n" + WORK_C) if host else ("#define EXTRA 0ULL\n" + STREAM_CU)
    files = [folder / f"{k}.{'c' if host else 'cu'}" for k in ("a", "b")]
    for f in files:
        f.write_text(text)
    return files, ("hx_work" if host else "hx_stream"), (HOST_ARGS if host else GPU_ARGS)


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion k/n (finite and inside [0, 1] also at k = 0 or n)."""
    from statistics import NormalDist

    if n <= 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _rate(rows: Any, what: str) -> dict[str, Any]:
    """False verdicts and coverage of identical-code rows."""
    both = rows[rows["present"] == "both"]
    n = int(len(both))
    false = int(both["verdict"].isin(("faster", "slower")).sum())
    lo, hi = both["ratio_ci_low"].astype(float), both["ratio_ci_high"].astype(float)
    finite = lo.notna() & hi.notna()
    covered = int(((lo <= 1) & (hi >= 1) & finite).sum())
    return {
        "kind": what,
        "rows": n,
        "false": false,
        "false_rate": false / n if n else math.nan,
        "false_ci": list(wilson(false, n)),
        "intervals": int(finite.sum()),
        "covered": covered,
        "coverage": covered / int(finite.sum()) if finite.any() else math.nan,
        "coverage_ci": list(wilson(covered, int(finite.sum()))),
        "undecided": int((both["verdict"] == "undecided").sum()),
    }


def analyse(runs: Sequence[Any], kernels: tuple[str, str] = ("A", "B"), threshold: float = 0.02) -> dict[str, Any]:
    """Counts of an A/A calibration from its interleaved runs (samples frames or paths)."""
    import numpy as np
    import pandas as pd

    from .schema import Configuration
    from .verdicts import compare

    a, b = kernels
    inter = pd.concat(
        [compare(r, base=a, new=b, threshold=threshold).assign(run=i) for i, r in enumerate(runs)], ignore_index=True
    )
    frames = [r if isinstance(r, pd.DataFrame) else pd.read_parquet(r) for r in runs]
    sep = [
        compare(
            frames[i][frames[i]["kernel"] == k], frames[i + 1][frames[i + 1]["kernel"] == k], threshold=threshold
        ).assign(run=i, kernel=k)
        for i in range(len(frames) - 1)
        for k in kernels
    ]
    separate = pd.concat(sep, ignore_index=True) if sep else inter.iloc[0:0]
    cold = Configuration.marks_reference(inter)
    kinds = [
        _rate(inter[~cold], "interleaved (95%)"),
        _rate(inter[cold], "cold references (99%)"),
        _rate(separate, "separate runs (99%)"),
    ]
    every = pd.concat([inter, separate], ignore_index=True)
    total = _rate(every, "all")
    mde = {}
    for size, g in inter[~cold & (inter["present"] == "both")].groupby("size_bytes"):
        md = g["min_detectable"].astype(float).to_numpy()
        mde[str(int(size))] = float(np.nanmedian(md)) if np.isfinite(md).any() else math.nan
    return {"kinds": kinds, "all": total, "min_detectable": mde, "threshold": threshold, "runs": len(runs)}


def calibrate(
    device: str = "auto",
    sizes: Sequence[str] | None = None,
    flush: Sequence[str] = ("none",),
    *,
    budget_s: float | None = None,
    rounds: int | None = None,
    threshold: float = 0.02,
    iterations: int | None = None,
    units: int | str = "auto",
    progress: Callable[[str], None] | None = None,
    keep: str | None = None,
) -> dict[str, Any]:
    """Run the calibration (module docstring) and return its record (``store`` keeps it).
    ``iterations``/``units``: other than the defaults only for a quick look (the record says so)."""
    from .bench import sweep
    from .devices import get_device
    from .kernels.catalog import user_kernel
    from .verdict_rule import check_threshold

    check_threshold(threshold)
    dev = get_device(device)
    cls = "host" if dev.kind == "host" else "gpu"
    sizes = list(sizes or DEFAULTS[cls][0])
    budget = DEFAULTS[cls][1] if budget_s is None else float(budget_s)
    say = progress or (lambda text: None)
    folder = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="hipexplore-calibrate-"))
    folder.mkdir(parents=True, exist_ok=True)
    files, entry, args = kernel_files(dev.kind, folder)
    kernels = [user_kernel(f, entry, args, name=k, register_it=False) for f, k in zip(files, ("A", "B"))]
    runs, walls, t0, load0 = [], [], time.monotonic(), os.getloadavg()[0]
    while True:
        done = time.monotonic() - t0
        if rounds is not None and len(runs) >= rounds:
            break
        if rounds is None and len(runs) >= MIN_ROUNDS and done + (done / len(runs)) > budget:
            break
        say(
            f"round {len(runs) + 1}{f'/{rounds}' if rounds else ''}: A and its byte-identical copy B interleaved, "
            f"{', '.join(sizes)} x {', '.join(flush)} ({done:.0f} s of {budget:.0f} s)"
        )
        start = time.monotonic()
        res = sweep(
            kernels,
            sizes,
            ["1"],
            list(flush),
            device=dev,
            interleave=True,
            progress=False,
            interleave_seed=len(runs),
            iterations=iterations,
            units=units,
        )
        walls.append(time.monotonic() - start)
        runs.append(res.samples)
    say(f"comparing {len(runs)} round(s): interleaved copies and separate runs")
    record = analyse(runs, threshold=threshold)
    meta = res.metadata
    record.update(
        format=FORMAT,
        device_name=DEVICE_NAME.of(meta, dev.name),
        device_kind=dev.kind,
        device_class=cls,
        sizes=sizes,
        flush=list(flush),
        wall_s=walls,
        date=time.strftime("%Y-%m-%d"),
        hipexplore=HIPEXPLORE.of(meta, ""),
        git_revision=GIT_REVISION.of(meta, ""),
        iterations=iterations,
        units=units,
        host_load=[round(load0, 2), round(os.getloadavg()[0], 2)],
        at_defaults=iterations is None and units == "auto",
        command=" ".join(["hipexplore", "calibrate", "--device", device, "--sizes", ",".join(sizes)]),
    )
    return record


# -- where it is kept and cited ---------------------------------------------------------------


def store_dir() -> Path:
    from . import settings

    env = settings.CALIBRATION_DIR.get()
    if env is not None:
        return env
    base = os.environ.get("XDG_DATA_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "hipexplore" / "calibration"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:100] or "device"


def store(record: Mapping[str, Any], out: str | None = None) -> Path:
    """Keep the record as this device's calibration (and at ``out`` too, where given)."""
    from .files import write_file

    text = json.dumps(record, indent=1, default=float)
    folder = store_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = write_file(folder / f"{_slug(str(record['device_name']))}.json", text, what="calibration")
    if out:
        write_file(out, text, what="calibration --out")
    return path


def load(device_name: str) -> dict[str, Any] | None:
    """This device's kept calibration, None when there is none or it cannot be read."""
    from .untrusted import load_json

    path = store_dir() / f"{_slug(device_name)}.json"
    try:
        if not path.is_file() or path.stat().st_size > 1 << 20:
            return None
        got = load_json(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, ConfigError):
        return None
    return got if isinstance(got, dict) and got.get("format") == FORMAT else None


def sentence(record: Mapping[str, Any]) -> str:
    """The citation: "on this device identical code was called different in X of N rows ...; changes
    under Y% are not resolved at defaults"."""
    from .verdict_rule import size_text

    tot = record["all"]
    lo, hi = tot["false_ci"]
    mde = {int(k): v for k, v in record.get("min_detectable", {}).items() if v == v}
    worst = max(mde.values()) if mde else math.nan
    per = ", ".join(f"{size_text(k)} {v:.1%}" for k, v in sorted(mde.items()))
    text = (
        f"on this device ({record['device_name']}, hipexplore calibrate {record.get('date', '')}) identical code was "
        f"called different in {tot['false']} of {tot['rows']} rows ({tot['false_rate']:.1%}, 95% interval "
        f"[{lo:.1%}, {hi:.1%}])"
    )
    if math.isfinite(worst):
        at = (
            "at defaults" if record.get("at_defaults", True) else "at the calibration's own settings (not the defaults)"
        )
        text += f"; changes under {worst:.1%} are not resolved {at} (per size: {per})"
    return text


def cite(metadata: Mapping[str, Any]) -> str:
    """The sentence for the device a run's metadata names, "" when it was never calibrated."""
    name = DEVICE_NAME.of(metadata, "")
    got = load(name) if name else None
    if not got:
        return ""
    try:
        return sentence(got)
    except (KeyError, TypeError, ValueError):
        return ""


def report_text(record: Mapping[str, Any]) -> str:
    """What ``hipexplore calibrate`` prints: a line per kind of row, then the minimum detectable effects."""
    from .verdict_rule import size_text

    lines = [
        f"device: {record['device_name']} ({record['device_kind']}); {record['runs']} round(s), sizes "
        f"{', '.join(record['sizes'])}, flush {', '.join(record['flush'])}, threshold {record['threshold']:.0%}",
        f"{'rows':<24} {'n':>5} {'false':>6} {'false rate [95%]':>24} {'coverage of 1 [95%]':>26}",
    ]
    for k in [*record["kinds"], record["all"]]:
        if not k["rows"]:
            continue
        fr = f"{k['false_rate']:.1%} [{k['false_ci'][0]:.1%}, {k['false_ci'][1]:.1%}]"
        cov = (
            f"{k['coverage']:.1%} [{k['coverage_ci'][0]:.1%}, {k['coverage_ci'][1]:.1%}]"
            if k["intervals"]
            else "no intervals"
        )
        lines.append(f"{k['kind']:<24} {k['rows']:>5} {k['false']:>6} {fr:>24} {cov:>26}")
    import textwrap

    at = "the default wall time" if record.get("at_defaults", True) else "this calibration's settings"
    lines += textwrap.wrap(
        f"minimum detectable change at {at} (median over interleaved rows): "
        + ", ".join(f"{size_text(int(s))} {v:.1%}" for s, v in record["min_detectable"].items()),
        120,
    )
    lines += textwrap.wrap(sentence(record), 120, subsequent_indent="  ")
    return "\n".join(lines)


def markdown_table(records: Mapping[str, Mapping[str, Any]]) -> str:
    """The verdicts guide's table, one row per recorded calibration (``data/calibration/CLASS/calibrate.json``,
    keyed by its folder): false verdicts of identical code per kind of row, coverage, minimum detectable change."""
    from .verdict_rule import size_text

    def rate(k: Mapping[str, Any]) -> str:
        return f"{k['false']} of {k['rows']} ({k['false_ci'][0]:.0%}–{k['false_ci'][1]:.0%})" if k["rows"] else "–"

    lines = [
        "| device (folder) | date, revision | rounds, wall time, load | interleaved (95%) | cold references (99%) | "
        "separate runs (99%) | coverage of 1 | min. detectable at defaults |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for folder, r in sorted(records.items()):
        kinds = {k["kind"]: k for k in r["kinds"]}
        load = r.get("host_load") or []
        mde = ", ".join(f"{size_text(int(s))} {v:.1%}" for s, v in r["min_detectable"].items())
        cov = r["all"]
        lines.append(
            f"| {r['device_name']} ({folder}) | {r['date']}, {str(r.get('git_revision', ''))[:7]} | "
            f"{r['runs']}, {sum(r['wall_s']):.0f} s{f', load {load[0]:g}-{load[1]:g}' if load else ''} | "
            + " | ".join(
                rate(kinds.get(k, {"rows": 0}))
                for k in ("interleaved (95%)", "cold references (99%)", "separate runs (99%)")
            )
            + f" | {cov['covered']} of {cov['intervals']} | {mde}"
            + ("" if r.get("at_defaults", True) else " (not at defaults)")
            + " |"
        )
    return "\n".join(lines)


__all__ = [
    "DEFAULTS",
    "FORMAT",
    "GPU_ARGS",
    "HOST_ARGS",
    "STREAM_CU",
    "WORK_C",
    "analyse",
    "calibrate",
    "cite",
    "load",
    "markdown_table",
    "report_text",
    "sentence",
    "store",
    "store_dir",
    "wilson",
]
