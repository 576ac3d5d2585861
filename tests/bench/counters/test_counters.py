"""The counter pass (``hipexplore.bench.counters``) end to end, a phase of the one measurement
pipeline: the orchestrator running the counting unit after the timed units under a command prefix
and joining records (parsed from the H200's recorded ncu output) to the right summary rows, resume,
the CLI on the host, and (from the recordings in data/counters/) the records the recorded raw
outputs give. GPU-marked tests run ``hipexplore bench ... --counters`` for real, with CUPTI in the
counting unit's worker and under Nsight Compute. Each module's own rules are tested at its path
(test_record.py, test_counting.py, test_phase.py, test_ncu.py, test_rocprof.py, test_backends.py,
test_registry.py)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import cliproc
from conftest import GPU, need, need_tool
from hipexplore.bench import SweepSpec
from hipexplore.bench.counters import (
    COLD_AT,
    COUNTER_COLUMNS,
    HOST_LINE,
    WARM_AT,
    CountersSkipped,
    asks_cold,
    cache_state,
    collect,
)
from hipexplore.bench.counters.counting import MANIFEST
from hipexplore.bench.counters.ncu import NCU_GROUPS, NcuBackend, parse_csv
from hipexplore.bench.executors import InProcessExecutor
from hipexplore.bench.orchestrator import Orchestrator
from hipexplore.bench.result import RunOptions, SweepHooks
from hipexplore.bench.stats import StopRule
from hipexplore.errors import ConfigError
from hipexplore.schema import SUMMARY_COLUMNS

from bench.counters.test_phase import dev  # noqa: F401 - the host device fixture (a small LLC, its own compile cache)

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "data" / "counters" / "h200"
KIB, MIB = 1 << 10, 1 << 20


# -- the rule, the promise, the inputs ----------------------------------------------------------------


# -- the host, and the profilers' command lines ---------------------------------------------------


# -- parsers on text in the documented formats (the recorded outputs are tested further down) ----------


# -- the counting unit's replay, on the host device ------------------------------------------------


# -- the orchestrator: the counting unit after the timed units, under a prefix, joined to the rows ----
#: where each host configuration's counted launches come from: the H200's recorded ncu output of
#: triad at 1 MiB (the same kernel and size). ("auto", "none") is given launches that read their
#: inputs from DRAM (recorded after an l2-write flush); ("auto", "l2-write") the stand-alone replay's
#: own 40 sets, which read partial (0.73: why the pass replays the timed path now): a broken cold
#: promise, to see it flagged
RECORDED_FOR = {
    ("1", "none"): ("triad-1MiB", "1", "none"),
    ("1", "l2-write"): ("triad-1MiB-l2write", "1", "l2-write"),
    ("auto", "none"): ("triad-1MiB-l2write", "1", "l2-write"),
    ("auto", "l2-write"): ("triad-1MiB", "auto", "none"),
}
UNTIMED_READ = 1e12  # what a chunk's untimed lead and trail "read": a record that averaged them would show it


def _recorded_launches(folder: str, rotating: str, flush: str) -> list[dict[str, float]]:
    manifest = json.loads((RECORDED / folder / "group-0" / MANIFEST).read_text())
    launches = parse_csv((RECORDED / folder / "group-0" / "ncu.log").read_text())
    i = 0
    for e in manifest["entries"]:
        if (e["rotating_requested"], e["flush"]) == (rotating, flush):
            return [x.values for x in launches[i : i + e["count"]]]
        i += e["count"]
    raise AssertionError(f"{folder} has no {rotating}/{flush}")


class _RecordedNcu(NcuBackend):
    """Nsight Compute as the H200 recorded it, for a host without a GPU: the counting unit runs for
    real (a sweep worker under ``wrapper``, a prefix that writes its argv to a file and execs the
    rest), and its manifest's launches are given, as ncu's own CSV lines in ncu.log, the launches
    ncu recorded on the H200 (``RECORDED_FOR``): timed launch i the i-th recorded one. The real
    parser, attribution, record and join read them."""

    def __init__(self, wrapper: Path, argv_file: Path, seen: list) -> None:
        # one group of the four metrics, as the H200 recording was made (before NCU_GROUPS split them)
        super().__init__(
            ncu=str(wrapper),
            metrics=(
                "dram__bytes_read.sum",
                "dram__bytes_write.sum",
                "lts__t_sector_hit_rate.pct",
                "gpu__time_duration.sum",
            ),
        )
        self.marker, self.captures_warmup = (
            "none",
            False,
        )  # the host has no cuProfilerStart; the log holds the range only
        self.wrapper, self.argv_file, self.seen, self.calls = wrapper, argv_file, seen, []

    def available(self, device) -> str | None:
        return None

    def prefix(self, group, out_dir, entries):
        self.calls.append(len(self.seen))  # how many timed rows had arrived when the counting unit started
        return [str(self.wrapper), str(self.argv_file)]

    def parse(self, out_dir, entries=None):
        if entries is None:  # a kept folder read back (``collect``): its manifest
            entries = json.loads((out_dir / MANIFEST).read_text())["entries"]
        lines = [
            '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
        ]
        ident = 0
        for e in entries:
            recorded = _recorded_launches(*RECORDED_FOR[(e["rotating_requested"], e["flush"])])
            timed = iter(recorded)
            for _set, position in e["launches"]:
                values = (
                    next(timed)
                    if position >= 0
                    else {
                        "dram__bytes_read.sum": UNTIMED_READ,
                        "dram__bytes_write.sum": 0.0,
                        "lts__t_sector_hit_rate.pct": 0.0,
                    }
                )
                for name, value in values.items():
                    unit = "%" if name.endswith(".pct") else "nsecond" if name.startswith("gpu__time") else "byte"
                    scale = 1e9 if unit == "nsecond" else 1
                    lines.append(
                        f'"{ident}","1","python3","h","{e["entry"]}","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0",'
                        f'"Command line profiler metrics","{name}","{unit}","{value * scale:.6f}"'
                    )
                ident += 1
        (out_dir / "ncu.log").write_text("\n".join(lines) + "\n")
        return super().parse(out_dir)

    def describe(self):  # not ncu_version(): the wrapper is no ncu to ask
        return {
            "name": "ncu",
            "label": "ncu (recorded on the H200)",
            "metrics": list(self.metrics),
            "profiler_range": False,
        }


@pytest.fixture
def recorded_ncu(tmp_path):
    if not (RECORDED / "triad-1MiB" / "group-0" / "ncu.log").is_file():
        need("the recorded triad passes under data/counters/h200", "scripts/h200_all.sh counters records them")
    wrapper = tmp_path / "wrap.sh"
    wrapper.write_text('#!/bin/sh\nout="$1"; shift\nprintf \'%s\\n\' "$@" > "$out"\nexec "$@"\n')
    wrapper.chmod(0o755)
    seen: list = []
    return _RecordedNcu(wrapper, tmp_path / "argv.txt", seen), seen


def _host_spec(**kw) -> SweepSpec:
    return SweepSpec(
        kernels=("triad",),
        sizes=(MIB,),
        rotating=(1, "auto"),
        flush=("none", "l2-write"),
        stop=StopRule(iterations=4),
        units=1,
        reference_samples=4,
        warmup_s=0.0,
        **kw,
    )


def _sweep(dev, spec, out, backend=None, seen=None):
    hooks = SweepHooks(on_result=(seen.append if seen is not None else None))
    return Orchestrator(
        spec, InProcessExecutor(dev), RunOptions(out=out, hooks=hooks, progress=False), counter_backend=backend
    ).run()


def _by(summary) -> dict:
    return {(r["rotating_requested"], r["flush"]): r for r in summary.to_dict("records")}


def test_the_orchestrator_counts_after_the_timed_units_under_a_prefix_and_joins_the_rows(
    dev, tmp_path, recorded_ncu
) -> None:
    backend, seen = recorded_ncu
    out = tmp_path / "o.parquet"
    res = _sweep(dev, _host_spec(counters=True), out, backend, seen)
    assert backend.calls == [
        5
    ]  # one counting unit, started after all 5 timed rows (4 configurations and the reference)
    argv = backend.argv_file.read_text().splitlines()
    assert argv[:2] == [sys.executable, "-I"]  # the prefix, then the isolated interpreter of a sweep worker
    assert list(res.summary.columns) == [*SUMMARY_COLUMNS, *COUNTER_COLUMNS]  # schema.COUNTER_COLUMNS, re-exported
    rows = _by(res.summary)
    for key, (folder, rot, flush) in RECORDED_FOR.items():
        timed = _recorded_launches(folder, rot, flush)
        want = sum(x["dram__bytes_read.sum"] for x in timed) / len(timed)
        assert rows[key]["dram_read_bytes"] == pytest.approx(
            want
        )  # the timed launches' mean: leads and trails left out
        assert rows[key]["cold_fraction"] == pytest.approx(want / (2 * MIB)) and rows[key]["input_bytes"] == 2 * MIB
        assert rows[key]["counter_backend"] == "ncu (recorded on the H200)" and rows[key]["counter_launches"] == 12
    states = {k: (r["cache_state"], r["cold_promise"]) for k, r in rows.items()}
    assert states == {
        ("1", "none"): ("warm", ""),
        ("1", "l2-write"): ("cold", "kept"),
        ("auto", "none"): ("cold", "kept"),
        ("auto", "l2-write"): ("partial", "broken"),
        ("1", "cold-reference"): ("", ""),
    }
    broken = rows[("auto", "l2-write")]
    assert broken["counter_warning"].startswith("asked cold (flush l2-write) but counted partial")
    assert broken["counter_warning"] in broken["warning"]
    assert rows[("1", "none")]["median_s"] > 0  # the timed columns are the sweep's own
    assert res.metadata["counters.status"].startswith("counted 4 configuration(s) with ncu (recorded on the H200)")
    kept = tmp_path / "o.counters" / "triad-1048576"
    assert {p.name for p in kept.rglob("*")} >= {"backend.json", "group-0", MANIFEST, "ncu.log"}
    assert collect(kept, backend=backend).frame()["cache_state"].tolist() == ["warm", "cold", "cold", "partial"]
    on_disk = pd.read_parquet(tmp_path / "o.summary.parquet")
    assert on_disk["cache_state"].tolist() == res.summary["cache_state"].tolist()
    from hipexplore.verdicts import compare

    assert len(compare(str(out), str(out))) == 5  # a file with counters reads back as any result (bench.readback)
    from hipexplore.report.recorded import load_recorded

    assert (
        load_recorded(out).summary["cache_state"].tolist() == res.summary["cache_state"].tolist()
    )  # and in the report


def test_resume_counts_a_finished_sweep_without_timing_it_again(dev, tmp_path, recorded_ncu) -> None:
    backend, seen = recorded_ncu
    out = tmp_path / "o.parquet"
    first = _sweep(dev, _host_spec(), out, None, seen)  # no counters asked: the columns of a sweep without them
    assert list(first.summary.columns) == list(SUMMARY_COLUMNS) and len(seen) == 5
    seen.clear()
    again = _sweep(
        dev, _host_spec(counters=True), out, backend, seen
    )  # counters are not part of measurement(): resumed
    assert seen == [] and backend.calls == [0]  # nothing timed again; the counting unit ran
    assert again.summary["median_s"].tolist() == first.summary["median_s"].tolist()
    assert _by(again.summary)[("1", "none")]["cache_state"] == "warm"
    third = _sweep(dev, _host_spec(counters=True), out, backend, seen)  # every configuration counted: nothing runs
    assert seen == [] and backend.calls == [0] and third.metadata["counters.status"].startswith("every configuration")
    assert third.summary["cache_state"].tolist() == again.summary["cache_state"].tolist()
    plain = _sweep(dev, _host_spec(), out, None, seen)  # resumed without counters: the counted columns stay
    assert plain.summary["cache_state"].tolist() == again.summary["cache_state"].tolist()


def test_a_failed_counter_pass_is_one_line_and_the_sweep_is_kept(dev, tmp_path, recorded_ncu) -> None:
    backend, seen = recorded_ncu
    backend.prefix = lambda group, out_dir, entries: ["false"]  # a profiler that exits before starting the worker
    with pytest.warns(CountersSkipped) as caught:
        res = _sweep(dev, _host_spec(counters=True), tmp_path / "o.parquet", backend, seen)
    (line,) = [str(w.message) for w in caught if w.category is CountersSkipped]
    # the worker's death is a KernelFault naming how it ended, whether it died before or after its job was sent
    assert line.startswith("no counters: the counter pass failed (KernelFault: ") and "exit code 1" in line
    assert "\n" not in line
    assert res.metadata["counters.status"] == line
    assert len(seen) == 5 and res.summary["median_s"].notna().all()  # every timed row kept
    assert (res.summary["cache_state"].fillna("") == "").all()
    assert pd.read_parquet(tmp_path / "o.summary.parquet")["median_s"].notna().all()


def test_the_prefix_goes_in_front_of_the_isolated_interpreter() -> None:
    from hipexplore.interpreter import isolated_argv

    argv = isolated_argv("pass", "a", prefix=("ncu", "--csv"))
    assert argv[:4] == ["ncu", "--csv", sys.executable, "-I"] and argv[-1] == "a"


def test_counters_are_an_option_outside_the_measurement() -> None:
    from hipexplore.bench import sweep

    assert SweepSpec().counters is False and SweepSpec(counters="ON").counters is True
    assert SweepSpec(counters="ncu").counters == "ncu" and SweepSpec(counters="off").counters is False
    assert SweepSpec(counters=True).measurement() == SweepSpec().measurement()  # rows resume either way
    assert json.loads(SweepSpec(counters="rocprofv3").record()["sweep.spec"])["counters"] == "rocprofv3"
    import inspect

    assert inspect.signature(sweep).parameters["counters"].default is False
    with pytest.raises(
        ConfigError, match="counters must be on, off or a backend \\(cupti, ncu, rocprofv3\\), got 'triad'"
    ):
        SweepSpec(counters="triad")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return cliproc.run(["bench", *args], cwd=cwd, env=env, timeout=240)  # forked from a preloaded interpreter


def test_the_cli_on_the_host_says_in_one_line_why_there_are_no_counters(tmp_path) -> None:
    args = [
        "triad",
        "--device",
        "host",
        "--size",
        "64KiB",
        "--rotating",
        "1,2",
        "--iterations",
        "4",
        "--units",
        "1",
        "--reference-samples",
        "4",
        "--no-progress",
        "--json",
    ]
    plain = _cli(*args, "--out", str(tmp_path / "a.parquet"), cwd=tmp_path)
    counted = _cli(*args, "--counters", "--out", str(tmp_path / "b.parquet"), cwd=tmp_path)
    assert plain.returncode == counted.returncode == 0, counted.stderr
    assert counted.stderr.strip() == f"hipexplore bench: no counters: {HOST_LINE}"  # one line
    a, b = json.loads(plain.stdout), json.loads(counted.stdout)
    assert [list(r) for r in a["summary"]] == [list(r) for r in b["summary"]]  # the same columns: no counter column
    key = lambda r: (r["rotating_requested"], r["flush"], r["n"])  # noqa: E731
    assert [key(r) for r in a["summary"]] == [key(r) for r in b["summary"]]
    assert b["counters"] == f"no counters: {HOST_LINE}"
    table = _cli(*args[:-1], "--counters", cwd=tmp_path)
    assert table.returncode == 0 and " state " not in table.stdout.splitlines()[0]
    bad = _cli("triad", "--device", "host", "--counters", "nvprof", cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "'nvprof'" in bad.stderr


def test_the_library_warns_once_on_the_host(dev) -> None:
    with pytest.warns(CountersSkipped, match="no counters: host: no hardware counters"):
        res = Orchestrator(_host_spec(counters=True), InProcessExecutor(dev), RunOptions(progress=False)).run()
    assert "cache_state" not in res.summary.columns


def test_the_state_column_in_the_table() -> None:
    from hipexplore.cli.bench_table import table

    row = {c: math.nan for c in SUMMARY_COLUMNS}
    row.update(
        kernel="triad",
        size_bytes=MIB,
        rotating=40,
        rotating_requested="auto",
        flush="none",
        timer="events",
        n=10,
        median_s=1e-6,
        ci_low_s=1e-6,
        ci_high_s=1e-6,
        stop_reason="",
        warning="",
    )
    counted = {**row, "cache_state": "cold", "cold_fraction": 0.98}
    text = table(pd.DataFrame([counted, {**row, "cache_state": "", "cold_fraction": math.nan}]))
    head, first, second = text.splitlines()
    assert "state" in head.split() and "cold 0.98" in first and "cold" not in second
    assert "state" not in table(pd.DataFrame([row])).splitlines()[0].split()


# -- the H200 recordings ----------------------------------------------------------------------------
def _recorded() -> dict[str, object]:
    folders = sorted(p.parent for p in RECORDED.glob("*/backend.json")) if RECORDED.is_dir() else []
    if not folders:
        need(
            f"recorded counter passes under {RECORDED.relative_to(ROOT)}",
            "benchmarks/h200/counters.py records them on the H200 (scripts/h200_all.sh counters)",
        )
    return {p.name: collect(p) for p in folders}


def _state(passes, group: str, rotating: str, flush: str, size: int = MIB):
    rec = next(
        r for r in passes[group].records if (r.rotating_requested, r.flush, r.size_bytes) == (rotating, flush, size)
    )
    return rec


def test_recorded_passes_parse_and_follow_the_rule() -> None:
    passes = _recorded()
    for name, counted in passes.items():
        assert counted.records, name
        manifest = json.loads((RECORDED / name / "group-0" / MANIFEST).read_text())
        for rec, e in zip(counted.records, manifest["entries"]):
            assert rec.counter_launches == e["count"] and rec.input_bytes == e["input_bytes"] > 0
            assert rec.cache_state == cache_state(rec.dram_read_bytes / rec.input_bytes)
            assert 0 <= rec.l2_hit_rate <= 1 and rec.dram_read_bytes >= 0 and rec.dram_write_bytes >= 0
            assert (rec.cold_promise == "broken") == bool(rec.counter_warning)
        assert "pass" not in " ".join(counted.notes), (
            counted.notes
        )  # one replay pass: the counters saw the sequence's cache


def test_recorded_triad_states_grow_with_the_sets() -> None:
    """What the H200 recording (data/counters/h200/, scripts/h200_all.sh counters) says of the triad:
    one set of 1 MiB arrays stays in the L2, a write flush or a 48 MiB working set does not, and
    the cold fraction grows with the rotating sets. (The PR's 5 sets counted 0.39 here, partial, not
    the 0.00 of the earlier ncu read over the timed CLI process: BENCHMARKS.md "Counters" says why
    the pass replays the timed sequence itself.)"""
    passes = _recorded()
    if "triad-1MiB" not in passes:
        need("the recorded triad-1MiB pass", f"not among {sorted(passes)}")
    frac = {r: _state(passes, "triad-1MiB", r, "none").cold_fraction for r in ("1", "2", "5", "10", "20")}
    assert frac["1"] <= WARM_AT and frac["2"] <= WARM_AT
    assert frac["2"] < frac["5"] < frac["10"] < frac["20"], frac
    assert _state(passes, "triad-1MiB-l2write", "1", "l2-write").cold_fraction >= COLD_AT
    assert _state(passes, "triad-16MiB", "1", "none", 16 * MIB).cold_fraction >= COLD_AT
    assert all(r.input_bytes == 2 * r.size_bytes for c in passes.values() for r in c.records if r.kernel == "triad")


def test_recorded_user_kernels_keep_the_cold_promise() -> None:
    passes = _recorded()
    users = [n for n in passes if not n.startswith("triad")]
    if not users:
        need("recorded passes of the --source kernels", f"not among {sorted(passes)}")
    for name in users:
        for rec in passes[name].records:
            if asks_cold(rec.rotating_requested, rec.flush):
                assert rec.cold_promise == "kept", (name, rec)
        assert _state(passes, name, "1", "none").cache_state == "warm", name  # 1 MiB of inputs stays in a 60 MB L2


# -- on the GPU ----------------------------------------------------------------------------------------
def _ncu() -> str:
    return need_tool("ncu", "/usr/local/cuda/bin/ncu", flag=GPU, hint="Nsight Compute, part of the CUDA toolkit")


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cupti", "ncu"])
def test_counters_through_the_cli_on_the_gpu(cuda, tmp_path, backend) -> None:
    """``hipexplore bench ... --counters BACKEND``: one set of a 1 MiB triad stays in the L2 (warm),
    an l2-write flush makes it cold (the promise kept), and the summary's timing columns of the very
    same configurations are the sweep's own (the counting unit takes none). CUPTI counts in one
    counting unit for the whole pass, its values in the manifest; ncu under one process per metric group."""
    if backend == "ncu":
        _ncu()
    out = tmp_path / "t.parquet"
    res = _cli(
        "triad",
        "--device",
        "cuda",
        "--size",
        "1MiB",
        "--rotating",
        "1,auto",
        "--flush",
        "none,l2-write",
        "--counters",
        backend,
        "--json",
        "--no-progress",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    rows = {(r["rotating_requested"], r["flush"]): r for r in doc["summary"] if r["timer"] == "events"}
    states = {k: (r["cache_state"], r["cold_fraction"], r["cold_promise"]) for k, r in rows.items()}
    assert rows[("1", "none")]["cache_state"] == "warm", states
    assert (rows[("1", "l2-write")]["cache_state"], rows[("1", "l2-write")]["cold_promise"]) == ("cold", "kept"), states
    for key in (("auto", "none"), ("auto", "l2-write")):  # auto (~40 sets of 2 MiB) defeats the L2: the issue's >= 0.9
        assert (rows[key]["cache_state"], rows[key]["cold_promise"]) == ("cold", "kept"), states
    for key in (("1", "none"), ("1", "l2-write"), ("auto", "none"), ("auto", "l2-write")):
        r = rows[key]
        assert r["median_s"] > 0 and r["ci_low_s"] <= r["median_s"] <= r["ci_high_s"] and r["n"] > 0, key
        assert r["counter_launches"] >= 12 and r["input_bytes"] == 2 * MIB, key
        assert r["counter_backend"].startswith("ncu" if backend == "ncu" else "CUPTI"), key
    assert rows[("1", "cold-reference")]["cache_state"] in ("", None)
    assert doc["counters"].startswith(f"counted 4 configuration(s) with {'ncu' if backend == 'ncu' else 'CUPTI'}"), doc[
        "counters"
    ]
    if (
        backend == "ncu"
    ):  # ncu's own CSV kept beside the result: one profiled process per metric group (one replay pass each)
        logs = sorted((tmp_path / "t.counters").rglob("ncu.log"))
        assert len(logs) == len(NCU_GROUPS), logs
        assert all(parse_csv(log.read_text()) for log in logs), logs
    else:  # one counting unit for the pass; each counted launch's values in its manifest
        manifests = sorted((tmp_path / "t.counters").rglob(MANIFEST))
        assert len(manifests) == 1, manifests
        entries = json.loads(manifests[0].read_text())["entries"]
        assert len(entries) == 4 and all(len(e["values"]) == e["count"] >= 12 for e in entries), entries
        warm_rate, cold_rate = rows[("1", "none")]["l2_hit_rate"], rows[("1", "l2-write")]["l2_hit_rate"]
        if warm_rate is None:  # the chip counts no L2 counter in the DRAM pair's pass: said in the notes
            assert "the L2 hit rate is not counted" in json.dumps(doc), doc["counters"]
        else:
            assert warm_rate > cold_rate, states


@pytest.mark.gpu
def test_a_broken_cold_promise_is_flagged_in_the_cli_table_on_the_gpu(cuda, tmp_path) -> None:
    """auto on a 1 MiB "LLC" is 2 sets of 3 MiB, which the H200's real L2 keeps: asked cold, counted
    warm (ncu on the H200) or partial (CUPTI on an H100: 0.17 cold), never cold, and flagged. The
    default backend counts: CUPTI where it is usable, else Nsight Compute."""
    from hipexplore.bench.counters.cupti import CuptiBackend

    if CuptiBackend().available(cuda) is not None:
        _ncu()
    res = _cli(
        "triad",
        "--device",
        "cuda",
        "--size",
        "1MiB",
        "--rotating",
        "auto",
        "--llc-bytes",
        "1MiB",
        "--counters",
        "--no-progress",
        "--units",
        "1",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    head, *lines = res.stdout.splitlines()
    assert "state" in head.split()
    auto = next(line for line in lines if " auto=2 " in line and "cold-reference" not in line)
    state = "warm" if " warm " in auto else "partial"
    assert f" {state} " in auto, res.stdout
    # the row's note numbers point at the notes under the table, where the whole warning is spelled out
    marks = auto.split()[-1].split(",")
    notes = {
        line.split(None, 1)[0]: line.split(None, 1)[1]
        for line in lines
        if line.strip() and line.split(None, 1)[0].isdigit() and len(line.split(None, 1)) == 2
    }
    assert any(f"asked cold (rotating auto) but counted {state}" in notes.get(m, "") for m in marks), res.stdout


# -- the pipeline's own recording (the CLI's pass, one replay pass per metric group) -------------------
PIPELINE_RECORDED = ROOT / "data" / "counters" / "h100-cli"


def test_the_pipelines_recorded_pass_parses_here_to_what_the_cli_printed_on_the_gpu() -> None:
    """``hipexplore bench ... --counters`` on the H100 (data/counters/h100-cli/, BENCHMARKS.md "Wave 4"): its folders,
    one ``group-N`` per metric group, read back on the host give exactly the rows the CLI printed there
    (``summary.json``), and the issue's table: 5 sets of a 1 MiB triad warm, auto and l2-write cold with the
    promise kept, 3 sets of 4 MiB partial, the user kernels' auto and l2-write cold."""
    folders = sorted(p.parent for p in PIPELINE_RECORDED.glob("*/*/backend.json"))
    if not folders:
        need(
            f"the pipeline's recorded pass under {PIPELINE_RECORDED.relative_to(ROOT)}", "scripts/h200_all.sh counters"
        )
    printed = {
        (r["group"], r["rotating"].split("=")[0], r["flush"]): r
        for r in json.loads((PIPELINE_RECORDED / "summary.json").read_text())["rows"]
    }
    seen = {}
    for folder in folders:
        assert {p.name for p in folder.glob("group-*")} == {f"group-{i}" for i in range(len(NCU_GROUPS))}, folder
        for rec in collect(folder).records:
            key = (folder.parent.name, rec.rotating_requested, rec.flush)
            cli = printed[key]
            for col in ("dram_read_bytes", "dram_write_bytes", "l2_hit_rate", "cold_fraction", "counter_launches"):
                assert getattr(rec, col) == pytest.approx(cli[col], rel=1e-9), (key, col)
            assert (rec.cache_state, rec.cold_promise) == (cli["cache_state"], cli["cold_promise"]), key
            seen[key] = rec
    assert len(seen) == len(printed) == 24  # the table of BENCHMARKS.md "Wave 4": 6 + 1 + 6 + 6 + 4 + 1 configurations
    assert (
        seen[("triad-1MiB", "5", "none")].cold_fraction <= 0.1
        and seen[("triad-1MiB", "5", "none")].cache_state == "warm"
    )
    for key in (
        ("triad-1MiB", "auto", "none"),
        ("triad-1MiB-l2write", "1", "l2-write"),
        ("stencil2d-1MiB", "auto", "none"),
        ("reduce_sum-1MiB", "auto", "none"),
        ("stencil2d-1MiB", "5", "l2-write"),
        ("reduce_sum-1MiB", "1", "l2-write"),
    ):
        assert seen[key].cold_fraction >= COLD_AT and (seen[key].cache_state, seen[key].cold_promise) == (
            "cold",
            "kept",
        ), key
    assert seen[("triad-4MiB", "3", "none")].cache_state == "partial"
