"""nvbench JSON, both ways: read with cuda-bench's own reader, written in the shape nvbench's compare
script reads.

Reading (``read``): ``cuda.bench.results.BenchmarkResult.from_json`` (cuda-bench >= 0.3 ships it) parses
the file and, where nvbench wrote them (``--jsonbin``), each state's per-sample times from the binary
files beside it. Each (benchmark, state) is one configuration. Before cuda-bench sees the file it is
checked as untrusted input here: bounded JSON (``untrusted.load_json``), and every binary file it
names must be a regular file in the JSON's own folder (nvbench writes ``NAME-bin/N.bin``); cuda-bench
then reads a checked copy naming them by absolute path (``_checked_binaries``): its reader would
otherwise open any path a file names (``/dev/stdin`` blocks, ``/etc/...`` is read) and look for a
missing one in the folder above and the working directory.

What an nvbench file lacks (said beside every verdict on one, ``lacks``): one file is one process,
so there are no units (hipexplore's verdict needs the variation between processes); a file written
with ``--json`` alone holds summaries (mean, relative stdev, sample count) and no samples at all. So:

* with samples: the interval is the within-process one (blocks of consecutive samples resampled),
  decided at 99% (``verdicts.SEPARATE_RUNS_LEVEL``) -- it covers the noise inside each run, not what
  moves between processes;
* summaries only: a weaker interval, the normal approximation on the log ratio of the two means from
  each side's mean, relative stdev and sample count (samples taken as independent, which they are
  not), at 99% too, named as such on every row.

Writing (``write``, ``bench --export nvbench``): nvbench's JSON shape (file version 1.0.0): one
benchmark per kernel with axes Size (int64 bytes), Rotating, Flush and Timer (strings), one state
per configuration with the summaries nvbench's compare scripts read (``nv/cold/time/gpu/mean``,
``.../stdev/relative``, ``.../median``, ``.../min``, ``.../max``, ``nv/cold/sample_size``) and the
between-unit interval of the median as ``hx/ci/low`` / ``hx/ci/high``.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from ..bench.info import DATE, DEVICE_KIND, DEVICE_NAME, GIT_REVISION, HIPEXPLORE, RUN_ID, SOURCE_FORMAT
from ..errors import ConfigError
from ..schema import Timer
from ..extras import require
from ..untrusted import check_name, load_json, shown

#: an nvbench JSON larger than this is refused before it is parsed
MAX_BYTES = 256 << 20
#: at most this many samples per state are read from its binary file
MAX_SAMPLES = 10_000_000
#: the timer name rows read from nvbench carry (nvbench's cold GPU time: events around single launches)
TIMER = Timer.NVBENCH_COLD.name
LACKS_SAMPLES = (
    "nvbench: one file is one process (no units), so the interval is the within-process one (blocks of "
    "consecutive samples), decided at 99%; it does not cover what moves between processes"
)
LACKS_SUMMARIES = (
    "nvbench summaries only (no per-sample data: written with --json, not --jsonbin): a weaker interval, "
    "the normal approximation from each side's mean, relative stdev and sample count (samples taken as "
    "independent), at 99%; no units, no median"
)
_FLAGS = re.compile(r"\[[^]]*\]$")


def looks_like(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("benchmarks"), list) and "devices" in obj


def _inside(name: Any, folder: Path, where: str) -> Path:
    """A sample file's path, if it lies in the JSON's folder: a relative name without '..' (current
    nvbench writes ``NAME-bin/N.bin``), or an absolute one inside that folder (older nvbench wrote the
    path it was given); anything else is refused before cuda-bench's reader could open it."""
    if not isinstance(name, str) or not name or ".." in Path(name).parts:
        raise ConfigError(
            f"{where}: sample file {shown(name)} is not a plain relative name in the JSON's folder; "
            f"expected NAME-bin/N.bin as nvbench writes it"
        )
    check_name(name, f"{where}: sample file name")
    target = Path(name) if os.path.isabs(name) else folder / name
    home = os.path.realpath(folder)
    if os.path.commonpath([os.path.realpath(target), home]) != home:
        raise ConfigError(
            f"{where}: sample file {shown(name)} is not a plain relative name in the JSON's folder "
            f"({shown(home)}); expected NAME-bin/N.bin as nvbench writes it"
        )
    return target


def _checked_binaries(obj: dict, folder: Path, where: str) -> dict:
    """``obj`` with every sample file it names checked: in the JSON's folder (``_inside``), a regular
    file (not a link, a FIFO or a device) of at most ``MAX_SAMPLES`` floats, then named by its
    absolute path; a summary naming a file that is not there is dropped (the state reads as
    summaries only). Why rewrite: cuda-bench's reader looks for a name it cannot find beside the
    JSON in the folder above and in the working directory too."""
    import stat as st_mod

    for bench in obj.get("benchmarks", []):
        for state in (bench.get("states") or []) if isinstance(bench, dict) else []:
            if not isinstance(state, dict):
                continue
            kept = []
            for summ in state.get("summaries") or []:
                names = (
                    [d for d in (summ.get("data") or []) if isinstance(d, dict) and d.get("name") == "filename"]
                    if isinstance(summ, dict) and str(summ.get("tag", "")).startswith("nv/json/")
                    else []
                )
                for d in names:
                    p = _inside(d.get("value"), folder, where)
                    try:
                        st = os.lstat(p)
                    except OSError:
                        summ = None  # absent: this state has summaries only
                        break
                    if not st_mod.S_ISREG(st.st_mode) or st.st_size > 4 * MAX_SAMPLES:
                        raise ConfigError(
                            f"{where}: sample file {shown(d.get('value'))} is not a regular file of at most "
                            f"{MAX_SAMPLES:,} floats"
                        )
                    d["value"] = os.path.realpath(p)
                if summ is not None:
                    kept.append(summ)
            state["summaries"] = kept
    return obj


def parse(path: Path) -> Any:
    """The file's JSON, bounded (``untrusted.load_json``); a truncated file is one line."""
    where = f"nvbench file {str(path)!r}"
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ConfigError(f"{where} is larger than {MAX_BYTES >> 20} MiB; expected an nvbench JSON result")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{where} is not UTF-8 text; expected nvbench JSON") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {where}: {exc.strerror or exc}") from None
    return load_json(text, where, hint="expected a complete nvbench JSON file (nvbench --json FILE)", max_depth=16)


def read(path: str | Path, parsed: Any = None) -> tuple[Any, dict[str, str], bool]:
    """(samples frame, metadata, has_samples) of an nvbench JSON file. Without per-sample data the
    frame holds one row per state with the summaries (``mean_s``, ``rel_sd``, ``n``)."""
    import pandas as pd

    from ..bench.readback import check_frame
    from ..schema import SAMPLES

    path = Path(path)
    where = f"nvbench file {str(path)!r}"
    obj = parse(path) if parsed is None else parsed
    if not looks_like(obj):
        raise ConfigError(
            f"{where} is not nvbench JSON (no 'benchmarks' and 'devices'); expected nvbench --json output"
        )
    results = require("cuda.bench.results", "reading an nvbench file", "interop")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hipexplore-nvbench-") as scratch:  # the checked copy cuda-bench reads
        checked = Path(scratch) / "nvbench.json"
        checked.write_text(json.dumps(_checked_binaries(obj, path.parent, where)))
        res = _from_json(results, checked, where)
    devices = {i: d.name for i, d in res.devices.items()}
    samples, summaries = [], []
    for bname, sub in res.items():
        for state in sub:
            if state.is_skipped:
                continue
            kernel, size, rot, flush = _key(bname, state, len(sub.devices) > 1)
            device = str(devices.get(state.device, "nvbench device"))
            base = {
                "kernel": kernel,
                "size_bytes": size,
                "rotating_requested": rot,
                "flush": flush,
                "timer": TIMER,
                "device_name": device,
            }
            if state.samples is not None and len(state.samples) > 0:
                values = list(state.samples)[:MAX_SAMPLES]
                samples += [
                    {**base, "time_s": float(v), "chunk": i, "pass_index": 0, "dropped": False}
                    for i, v in enumerate(values)
                ]
                continue
            summ = {t: s.value for t, s in state.summaries.items()}
            mean, rel, n = (
                summ.get("nv/cold/time/gpu/mean"),
                summ.get("nv/cold/time/gpu/stdev/relative"),
                summ.get("nv/cold/sample_size"),
            )
            if mean is None:
                continue
            summaries.append(
                {
                    **base,
                    "time_s": float(mean),
                    "rel_sd": float(rel) if rel is not None else math.nan,
                    "n": int(n) if n is not None else 0,
                    "chunk": 0,
                    "pass_index": 0,
                    "dropped": False,
                }
            )
    rows = samples or summaries
    if not rows:
        raise ConfigError(f"{where} holds no measured state (every state skipped, or no cold GPU time)")
    frame = pd.DataFrame(rows)
    for name in frame["kernel"].unique():
        check_name(name, f"{where}: benchmark name")
    check_frame(frame, SAMPLES, str(path))
    meta = {
        **DEVICE_NAME.entry(", ".join(sorted(set(map(str, frame["device_name"].unique()))))),
        **DEVICE_KIND.entry("nvbench"),
        **SOURCE_FORMAT.entry("nvbench"),
    }
    return frame, meta, bool(samples)


def _from_json(results: Any, path: Path, where: str) -> Any:
    try:
        return results.BenchmarkResult.from_json(path)
    except Exception as exc:  # noqa: BLE001 - cuda-bench raises KeyError, ValueError, TypeError on a malformed file
        raise ConfigError(
            f"{where}: cuda-bench's reader refused it ({type(exc).__name__}: {shown(str(exc), 160)}); "
            f"expected a complete nvbench JSON file"
        ) from None


def _key(bname: str, state: Any, devices: bool = False) -> tuple[str, int, str, str]:
    """A state's configuration: our own export's axes back to their columns; any other benchmark's
    axes stay in its name (``bench[Elements=2^20]``), its size unknown (1, shown as '-'); a
    benchmark run on several devices has the device in its name too (``bench[Device=1]``)."""
    point = ({"Device": state.device} if devices else {}) | dict(state.point)
    size, rot, flush = 1, "-", "-"
    if "Size" in point:
        try:
            size = int(str(point.pop("Size")))
        except ValueError:
            size = 1
        rot = str(point.pop("Rotating", "-"))
        flush = str(point.pop("Flush", "-"))
        point.pop("Timer", None)
    extra = " ".join(f"{_FLAGS.sub('', str(k))}={v}" for k, v in point.items())  # BlockSize[pow2] -> BlockSize
    return (f"{bname}[{extra}]" if extra else bname), max(1, size), rot, flush


#: the metadata a written file names under meta.hipexplore
_SHOWN = tuple(k.name for k in (RUN_ID, GIT_REVISION, HIPEXPLORE, DATE, DEVICE_KIND))


def _summary(tag: str, name: str, value: Any, kind: str = "float64", hint: str = "duration") -> dict[str, Any]:
    return {
        "tag": tag,
        "name": name,
        "hint": hint,
        "description": name,
        "data": [{"name": "value", "type": kind, "value": str(value)}],
    }


def write(summary: Any, samples: Any, metadata: dict[str, str]) -> str:
    """nvbench-shaped JSON of a sweep (module docstring)."""
    device = DEVICE_NAME.of(metadata) or DEVICE_KIND.of(metadata) or "device"
    kept = samples[~samples["dropped"].astype(bool)] if "dropped" in samples.columns else samples
    benches = []
    for b, (kernel, rows) in enumerate(summary.groupby("kernel", sort=False)):
        states = []
        axes_vals: dict[str, list] = {"Size": [], "Rotating": [], "Flush": [], "Timer": []}
        for r in rows.to_dict("records"):
            t = kept[
                (kept["kernel"] == kernel)
                & (kept["size_bytes"] == r["size_bytes"])
                & (kept["rotating_requested"].astype(str) == str(r["rotating_requested"]))
                & (kept["flush"] == r["flush"])
                & (Timer.of_column(kept) == Timer.of_cell(r.get("timer")))
            ]["time_s"]
            if not len(t):
                continue
            mean, sd = float(t.mean()), float(t.std(ddof=1)) if len(t) > 1 else math.nan
            point = {
                "Size": int(r["size_bytes"]),
                "Rotating": str(r["rotating_requested"]),
                "Flush": str(r["flush"]),
                "Timer": Timer.of_cell(r.get("timer")).name,
            }
            for k, v in point.items():
                if v not in axes_vals[k]:
                    axes_vals[k].append(v)
            sums = [
                _summary("nv/cold/sample_size", "Samples", len(t), "int64", "sample_size"),
                _summary("nv/cold/time/gpu/mean", "GPU Time", mean),
                _summary("nv/cold/time/gpu/median", "GPU Median", float(r["median_s"])),
                _summary("nv/cold/time/gpu/min", "Min GPU Time", float(t.min())),
                _summary("nv/cold/time/gpu/max", "Max GPU Time", float(t.max())),
                _summary(
                    "nv/cold/time/gpu/stdev/relative",
                    "Noise",
                    sd / mean if mean > 0 and sd == sd else 0.0,
                    hint="percentage",
                ),
                _summary("hx/ci/low", "hipexplore 95% CI low (median)", float(r["ci_low_s"])),
                _summary("hx/ci/high", "hipexplore 95% CI high (median)", float(r["ci_high_s"])),
            ]
            states.append(
                {
                    "name": "Device=0 " + " ".join(f"{k}={v}" for k, v in point.items()),
                    "device": 0,
                    "type_config_index": 0,
                    "is_skipped": False,
                    "summaries": sums,
                    "axis_values": [
                        {"name": k, "type": "int64" if k == "Size" else "string", "value": str(v)}
                        for k, v in point.items()
                    ],
                }
            )
        axes = [
            {
                "name": k,
                "type": "int64" if k == "Size" else "string",
                "flags": "",
                "values": [
                    {"input_string": str(v), "description": "", **({"value": v} if k == "Size" else {"value": v})}
                    for v in vals
                ],
            }
            for k, vals in axes_vals.items()
        ]
        benches.append({"name": str(kernel), "index": b, "devices": [0], "axes": axes, "states": states})
    doc = {
        "meta": {
            "argv": ["hipexplore", "bench"],
            "version": {"json": {"major": 1, "minor": 0, "patch": 0, "string": "1.0.0"}},
            "hipexplore": {k: str(v) for k, v in metadata.items() if k in _SHOWN},
        },
        "devices": [{"id": 0, "name": device}],
        "benchmarks": benches,
    }
    return json.dumps(doc, indent=1)


__all__ = ["LACKS_SAMPLES", "LACKS_SUMMARIES", "MAX_BYTES", "TIMER", "looks_like", "parse", "read", "write"]
