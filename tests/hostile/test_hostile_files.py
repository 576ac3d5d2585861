"""Hostile run files, tuning lists and environment values: answered like a bad command line, in
one stderr line naming the file (or variable), the value and what was expected, exit status 2,
fast, never a traceback and never a wrong answer.

Run files are real: two tiny host sweeps recorded by ``hipexplore bench`` (once per module),
then columns rewritten with pandas/pyarrow (the schema tag and the metadata kept, so each file is
what an edited hipexplore result looks like). Parser-level cases (many) run in this process
through ``main()`` or the reader itself, each within a bound of CPU time; a representative few go
through the real ``hipexplore`` command in a process of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cliproc
from hipexplore.cli import main
from hipexplore.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("hipexplore")
#: CPU seconds one refusal may take in process (the work before the answer, not the interpreter's start)
CPU_BOUND_S = 1.0
#: wall seconds of a whole ``hipexplore`` process (start-up with pandas on a loaded 2-core machine is most of it)
WALL_BOUND_S = 60.0
RECORD = [
    "bench",
    "triad",
    "--device",
    "host",
    "--size",
    "64KiB",
    "--rotating",
    "1",
    "--flush",
    "none",
    "--iterations",
    "20",
    "--units",
    "1",
    "--no-progress",
]


def _cli(cwd: Path, *argv: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    res = cliproc.run(  # the console script in a process of its own, forked from a preloaded interpreter
        argv,
        script=CLI,
        timeout=WALL_BOUND_S * 2,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), "HIPEXPLORE_CACHE_DIR": str(cwd / "cache"), **(env or {})},
    )
    return res, time.monotonic() - t0


def _one_line(res: subprocess.CompletedProcess, spent: float, rc: int = 2) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == rc and len(lines) == 1 and "Traceback" not in res.stderr, (
        res.returncode,
        res.stderr[-3000:],
    )
    assert spent < WALL_BOUND_S, spent
    assert "\x1b" not in res.stderr and "\x00" not in res.stderr
    return lines[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Two real host sweeps, a.parquet and b.parquet (+ summary, meta.json)."""
    from conftest import require_compiler

    require_compiler("host")
    d = tmp_path_factory.mktemp("runs")
    for name in ("a", "b"):
        res, _ = _cli(d, *RECORD, "--out", f"{name}.parquet")
        assert res.returncode == 0, res.stderr[-2000:]
    # the untouched files pass the checks: what each case below changes is what is refused
    res, _ = _cli(d, "compare", "a.parquet", "b.parquet")
    assert res.returncode == 0 and "triad" in res.stdout, res.stderr[-2000:]
    return d


def _rewrite(table: pa.Table, frame: pd.DataFrame, dst: Path) -> None:
    """Write ``frame`` with the original file's hipexplore metadata (schema tag, provenance)."""
    new = pa.Table.from_pandas(frame, preserve_index=False)
    keep = {k: v for k, v in (table.schema.metadata or {}).items() if k.startswith(b"hipexplore")}
    pq.write_table(new.replace_schema_metadata({**(new.schema.metadata or {}), **keep}), dst)


def hostile(
    runs: Path, name: str, samples=None, summary=None, meta_text: str | None = None, summary_meta: bytes | None = None
) -> Path:
    """b.parquet's three files copied to NAME.*, with the samples and/or summary frames changed by
    ``samples(frame)`` / ``summary(frame)``, meta.json replaced by ``meta_text``, the summary's
    embedded metadata by ``summary_meta``."""
    out = runs / f"{name}.parquet"
    for src, dst, change in (
        (runs / "b.parquet", out, samples),
        (runs / "b.summary.parquet", runs / f"{name}.summary.parquet", summary),
    ):
        table = pq.read_table(src)
        frame = table.to_pandas()
        if change is not None:
            frame = change(frame.copy())
        _rewrite(table, frame, dst)
    if summary_meta is not None:
        dst = runs / f"{name}.summary.parquet"
        t = pq.read_table(dst)
        pq.write_table(t.replace_schema_metadata({**t.schema.metadata, b"hipexplore": summary_meta}), dst)
    meta = runs / f"{name}.meta.json"
    if meta_text is None:
        shutil.copy(runs / "b.meta.json", meta)
    else:
        meta.write_text(meta_text)
    return out


def col(name: str, fn):
    def change(frame):
        frame[name] = fn(frame[name])
        return frame

    return change


def both(name: str, fn):
    """The same change in samples and summary (the summary names the configurations)."""
    return {"samples": col(name, fn), "summary": col(name, fn)}


# (case id, changes, what the line must say)
RUN_CASES = [
    (
        "times scaled by 1e-300",
        {"samples": col("time_s", lambda s: s * 1e-300)},
        ("'time_s' holds ", "e-30", "at row 0"),
    ),
    ("all times zero", {"samples": col("time_s", lambda s: s * 0.0)}, "'time_s' holds 0.0 at row 0"),
    ("negative times", {"samples": col("time_s", lambda s: -s)}, "'time_s' holds -"),
    ("a NaN time", {"samples": col("time_s", lambda s: s.where(s.index != 3, np.nan))}, "'time_s' holds nan at row 3"),
    (
        "an infinite time",
        {"samples": col("time_s", lambda s: s.where(s.index != 5, np.inf))},
        "'time_s' holds inf at row 5",
    ),
    (
        "a time of a day",
        {"samples": col("time_s", lambda s: s.where(s.index != 7, 86400.0))},
        "'time_s' holds 86400.0 at row 7",
    ),
    (
        "times as text",
        {"samples": col("time_s", lambda s: s.astype(str))},
        "'time_s' holds text; expected floating-point seconds",
    ),
    (
        "times as integer ns",
        {"samples": col("time_s", lambda s: (s * 1e9).astype(np.int64))},
        "'time_s' holds integers",
    ),
    ("negative size", both("size_bytes", lambda s: -s), "'size_bytes' holds -65536"),
    ("zero size", both("size_bytes", lambda s: s * 0), "'size_bytes' holds 0"),
    ("2**62 size", both("size_bytes", lambda s: s * 0 + 2**62), "'size_bytes' holds 4611686018427387904"),
    ("size as float", both("size_bytes", lambda s: s.astype(float)), "'size_bytes' holds floating-point numbers"),
    ("size as text", both("size_bytes", lambda s: s.astype(str)), "'size_bytes' holds text"),
    ("chunk as float", {"samples": col("chunk", lambda s: s + 0.5)}, "'chunk' holds floating-point numbers"),
    ("negative pass index", {"samples": col("pass_index", lambda s: s - 9)}, "'pass_index' holds -9"),
    ("dropped as integers", {"samples": col("dropped", lambda s: s.astype(np.int64))}, "'dropped' holds integers"),
    ("kernel with a newline", both("kernel", lambda s: s + "\nfaster"), "'kernel' holds 'triad\\nfaster'"),
    ("kernel with an ANSI escape", both("kernel", lambda s: "\x1b[2J" + s), "holds an escape (U+001B"),
    ("kernel with a NUL", both("kernel", lambda s: s + "\x00"), "holds a NUL (U+0000)"),
    ("kernel with a bidi override", both("kernel", lambda s: s + "\u202e"), "bidirectional control (U+202E"),
    (
        "kernel missing",
        {"samples": col("kernel", lambda s: s.where(s.index != 2, None))},
        "'kernel' has no value at row 2",
    ),
    (
        "device name with an escape",
        {"samples": col("device_name", lambda s: s + "\x1b]0;owned\x07")},
        "'device_name' holds",
    ),
    ("kernel as integers", both("kernel", lambda s: s.str.len()), "'kernel' holds integers; expected text"),
    (
        "summary median 1e-300",
        {"summary": col("median_s", lambda s: s * 1e-300)},
        "summary.parquet': column 'median_s'",
    ),
    ("summary n as float", {"summary": col("n", lambda s: s.astype(float))}, "'n' holds floating-point numbers"),
    ("no time column", {"samples": lambda f: f.drop(columns=["time_s"])}, "has no column 'time_s'"),
]


@pytest.mark.parametrize("case, changes, says", RUN_CASES, ids=[c[0] for c in RUN_CASES])
def test_compare_refuses_a_hostile_run_file_in_one_line(runs, capsys, case, changes, says):
    """``hipexplore compare`` (in process: the reader is what is tested) on a.parquet and an edited
    b.parquet: exit 2, one line naming the file, the column and the value, within a CPU bound."""
    path = hostile(runs, "x", **changes)
    capsys.readouterr()
    t0 = time.process_time()
    rc = main(["compare", str(runs / "a.parquet"), str(path)])
    spent = time.process_time() - t0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, (rc, err[-2000:])
    assert str(runs / "x") in lines[0] and all(s in lines[0] for s in _all(says)), lines[0]
    assert "\x1b" not in err and "\x00" not in err and "\u202e" not in err
    assert spent < CPU_BOUND_S, spent


def _all(says: str | tuple[str, ...]) -> tuple[str, ...]:
    return (says,) if isinstance(says, str) else says


@pytest.mark.parametrize(
    "case, changes, says",
    [RUN_CASES[0], RUN_CASES[6], RUN_CASES[8], RUN_CASES[17]],
    ids=["1e-300", "text times", "negative size", "ANSI kernel"],
)
def test_hostile_run_files_through_the_real_cli(runs, case, changes, says):
    path = hostile(runs, "cli", **changes)
    res, spent = _cli(runs, "compare", "a.parquet", path.name)
    line = _one_line(res, spent)
    assert "cli.parquet" in line and all(s in line for s in _all(says)), line
    assert res.stdout == ""  # no table, no verdict


def test_a_report_of_a_hostile_folder_is_refused_too(runs):
    """The report's reader (``load_recorded``) checks the same way: a folder holding an edited run."""
    from hipexplore.report.recorded import load_recorded

    d = runs / "folder"
    d.mkdir(exist_ok=True)
    hostile(runs, "rep", samples=col("time_s", lambda s: -s))
    for p in runs.glob("rep.*"):
        shutil.move(str(p), d / p.name)
    t0 = time.process_time()
    with pytest.raises(ConfigError, match=r"rep\.parquet': column 'time_s' holds -") as err:
        load_recorded(d)
    assert "\n" not in str(err.value) and time.process_time() - t0 < CPU_BOUND_S


DEEP = "[" * 100_000 + "]" * 100_000
BIG = "9" * 5000


@pytest.mark.parametrize("meta_text", ['{"command": ' + DEEP + "}", "[1, 2, 3]"], ids=["deep", "an array"])
def test_a_hostile_meta_json_is_unreadable_metadata_not_a_traceback(runs, capsys, meta_text):
    """meta.json is a readable copy of the summary's embedded metadata (bench.io): an unreadable one
    (not JSON, too deep, huge integers, not an object of text) is as if absent, as an unparsable one
    always was; these two ended ``compare`` in a RecursionError and a TypeError traceback."""
    path = hostile(runs, "meta", meta_text=meta_text)
    t0 = time.process_time()
    rc = main(["compare", str(runs / "a.parquet"), str(path)])
    assert rc == 0 and time.process_time() - t0 < 30, capsys.readouterr().err[-2000:]
    assert "triad" in capsys.readouterr().out


def test_a_deep_sweep_spec_in_the_summary_does_not_end_a_resume_in_a_traceback(runs):
    """The summary's embedded metadata (what resume trusts) with a ``sweep.spec`` nested 100,000
    deep: the real ``hipexplore bench --out`` over it answers in one line or resumes; no traceback."""
    meta = json.loads(pq.read_schema(runs / "b.summary.parquet").metadata[b"hipexplore"])
    meta["sweep.spec"] = DEEP
    path = hostile(runs, "spec", summary=lambda f: f, summary_meta=json.dumps(meta).encode())
    res, spent = _cli(runs, *RECORD, "--out", path.name)
    assert "Traceback" not in res.stderr and spent < WALL_BOUND_S, res.stderr[-3000:]
    assert res.returncode in (0, 2) and len(res.stderr.strip().splitlines()) <= 1, res.stderr[-3000:]


def test_a_file_larger_than_any_sweep_is_refused_from_its_footer(runs, monkeypatch, capsys):
    """The row bound is read from the parquet footer before the file is read (a smaller bound here,
    so that the test does not write 20 million rows)."""
    from hipexplore.bench import readback

    monkeypatch.setattr(readback, "MAX_ROWS", 10)
    rc = main(["compare", str(runs / "a.parquet"), str(runs / "b.parquet")])
    line = capsys.readouterr().err.strip()
    assert rc == 2 and "a.parquet" in line and "rows" in line and "at most 10 rows" in line, line


# --- tuning lists --------------------------------------------------------------------------------

HEADER = '{"format": "hipexplore.tuning-list", "version": 1}\n'
ROW = '{"problem": "p", "m": 4, "n": 8, "k": 16, "perf_config": "v1:32,32,16,2,2,4,1,4"}\n'


def _row(old: str, new: str) -> str:
    assert old in ROW
    return HEADER + ROW.replace(old, new)


LIST_CASES = [
    (_row('"m": 4', '"m": ' + BIG), "'m': an integer of 5000 digits"),
    (_row('"m": 4', '"m": -' + BIG), "'m': an integer of 5000 digits"),
    (HEADER.replace("}", ', "kernels": ' + BIG + "}") + ROW, ":1: 'kernels': an integer of 5000 digits"),
    (HEADER.replace("}", ', "candidates": 1.5}') + ROW, "header 'candidates' must be a count"),
    (_row("v1:32,32", "v1:" + "3" * 5000 + ",32"), "perf config"),
    (_row(',1,4"', ",1" + "0" * 30 + ',4"'), "a field of 31 digits"),
    (_row(',1,4"', ',1000,4"'), "split 1000 is more than 256"),
    (_row('"k": 16,', '"k": 16, "meta": {"a": ' + DEEP + "},"), ":2: JSON nested more than 32 levels deep"),
    (
        _row('"k": 16,', '"k": 16, "meta": {"a": [1, 2, ' + BIG + "]},"),
        "'meta' -> 'a' -> [2]: an integer of 5000 digits",
    ),
    (_row('"k": 16,', '"k": 16, "x_ms": NaN,'), "'x_ms': NaN, not a JSON number"),
    (_row('"k": 16,', '"k": 16, "x_ms": Infinity,'), "'x_ms': Infinity, not a JSON number"),
    (_row('"k": 16,', '"k": 16, "x_ms": 1e999,'), "'x_ms': '1e999', not a finite number"),
    (_row('"p"', '"p\\nq"'), "problem name 'p\\nq' holds a newline"),
    (_row('"p"', '"p\\u001b[31mred"'), "holds an escape (U+001B"),
    (_row('"p"', '"p\\u0000"'), "holds a NUL (U+0000)"),
    (_row('"p"', '"p\\ud800"'), "holds a lone surrogate (U+D800"),
    (_row('"p"', '"p\\u202e"'), "holds a bidirectional control"),
    (_row('"p"', '"' + "p" * 100_000 + '"'), "(100000 characters) is longer than 256 characters"),
    (_row('"m": 4', '"m": "' + "4" * 100_000 + '"'), "'m' must be an integer; got '444"),
    (HEADER.replace("}", ', "name": "list\\u001b[2J"}') + ROW, "header 'name'"),
    (HEADER.replace("}", ', "description": "two\\nlines"}') + ROW, "header 'description'"),
    (HEADER + ROW.replace('"k": 16,', '"k": 16, "meta": {"a": "' + "[" * 2_000_000 + '"},'), "a line of"),
]


def test_hostile_lists_are_refused_by_the_parser_in_one_short_line():
    """Every case through ``listfile.parse`` in this process: a ConfigError of one line, shorter
    than 600 characters whatever the value's size, naming the line and the value, each within the
    CPU bound (the 100,000-deep line and the 2-million-bracket line included)."""
    from hipexplore.tuning import listfile

    failures = []
    for text, says in LIST_CASES:
        t0 = time.process_time()
        try:
            listfile.parse(text, "hostile.jsonl")
            failures.append((says, "accepted"))
            continue
        except ConfigError as exc:
            msg = str(exc)
        except Exception as exc:  # noqa: BLE001 - what the test is about: no other exception gets out
            failures.append((says, f"{type(exc).__name__}: {str(exc)[:200]}"))
            continue
        spent = time.process_time() - t0
        if not (
            says in msg
            and msg.startswith("hostile.jsonl:")
            and "\n" not in msg
            and len(msg) < 600
            and spent < CPU_BOUND_S
            and msg.isascii()
        ):
            failures.append((says, f"{spent:.2f} s CPU: {msg[:700]}"))
    assert not failures, failures


@pytest.mark.parametrize("index", [0, 7, 6, 12], ids=["5000-digit m", "100000-deep meta", "split 1000", "newline name"])
def test_hostile_lists_through_the_real_cli(tmp_path, index):
    text, says = LIST_CASES[index]
    (tmp_path / "l.jsonl").write_text(text, encoding="utf-8")
    res, spent = _cli(tmp_path, "tune-replay", "--compiler", "host", "--list", "l.jsonl", "--dry-run")
    line = _one_line(res, spent)
    assert says in line and "l.jsonl:" in line, line


# --- environment values and numeric options ------------------------------------------------------

ENV_CASES = [
    ("HIPEXPLORE_COMPILE_TIMEOUT", "1e300", "at most 1e6"),
    ("HIPEXPLORE_CACHE_LOCK_TIMEOUT", "1e300", "at most 1e6"),
    ("HIPEXPLORE_CACHE_REMOTE_TIMEOUT", "1e300", "at most 1e6"),
    ("HIPEXPLORE_CACHE_MAX_BYTES", "9" * 5000, "(5000 characters) is invalid"),
    ("HIPEXPLORE_CACHE_DISK_MAX_BYTES", str(10**4000), "(4001 characters) is invalid"),
    ("HIPEXPLORE_CACHE_MAX_EVENTS", str(2**63), "at most 2**62"),
    ("HIPEXPLORE_LLC_BYTES", str(2**63), "at most 2**50"),
    ("HIPEXPLORE_COMPILE_WORKERS", str(10**12), "at most 1024"),
]


@pytest.mark.parametrize("name, value, says", ENV_CASES, ids=[f"{n}={v[:12]}" for n, v, _ in ENV_CASES])
def test_hostile_environment_values_are_one_escaped_line(monkeypatch, name, value, says):
    from hipexplore import settings

    monkeypatch.setenv(name, value)
    t0 = time.process_time()
    with pytest.raises(ConfigError) as err:
        settings.get(name)
    msg = str(err.value)
    assert name in msg and says in msg and "\n" not in msg and msg.isascii() and len(msg) < 400, msg
    assert time.process_time() - t0 < CPU_BOUND_S


def test_a_huge_compile_timeout_through_the_real_cli(tmp_path):
    """It passed the check, then overflowed the C time type of the worker's wait (a traceback)."""
    from conftest import require_compiler

    require_compiler("hiprtc")
    (tmp_path / "k.hip").write_text("__global__ void k(float* a) { a[0] = 1; }\n")
    res, spent = _cli(
        tmp_path,
        "compile",
        "k.hip",
        "--compiler",
        "hiprtc",
        "--target",
        "gfx90a",
        env={"HIPEXPLORE_COMPILE_TIMEOUT": "1e300"},
    )
    line = _one_line(res, spent)
    assert "HIPEXPLORE_COMPILE_TIMEOUT='1e300'" in line, line


def test_a_cache_dir_that_is_no_directory_is_one_warning_line(tmp_path):
    """``HIPEXPLORE_CACHE_DIR=/dev/null``: the compile runs on the memory cache, and says so in
    one line, not Python's two (``cache.py:321: RuntimeWarning: ...`` and the source line)."""
    from conftest import require_compiler

    require_compiler("host")
    (tmp_path / "k.c").write_text("void k(float* a) { a[0] = 1; }\n")
    res, spent = _cli(tmp_path, "compile", "k.c", "--compiler", "host", env={"HIPEXPLORE_CACHE_DIR": "/dev/null"})
    line = _one_line(res, spent, rc=0)
    assert line.startswith("hipexplore compile: warning:") and "'/dev/null'" in line, line
    assert "RuntimeWarning" not in res.stderr and ".py:" not in res.stderr


def test_an_unknown_nvrtc_target_is_one_line(tmp_path):
    from conftest import require_compiler

    require_compiler("nvrtc")
    (tmp_path / "k.cu").write_text("__global__ void k(float* a) { a[0] = 1; }\n")
    res, spent = _cli(tmp_path, "compile", "k.cu", "--compiler", "nvrtc", "--target", "sm_1")
    line = _one_line(res, spent)
    assert "'sm_1'" in line and "sm_90" in line, line


@pytest.mark.parametrize(
    "what, expr",
    [
        ("bytes_per_launch", "2**63"),
        ("bytes_per_launch", "2**61"),
        ("flops_per_launch", "2**63"),
        ("bytes_per_launch", "n*2**60"),
    ],
)
def test_a_count_per_launch_beyond_what_a_sweep_records_is_refused_before_measuring(what, expr):
    """In process: the kernel is built, and the pre-flight's ``footprint`` / flops refuse it."""
    from hipexplore.kernels import catalog

    spec = catalog.user_kernel(
        "void k(float* a, unsigned long n) { }\n",
        "k",
        "out:a:f32[n],n:u64=n",
        name="huge",
        register_it=False,
        **{what: expr},
    )
    t0 = time.process_time()
    with pytest.raises(ConfigError, match=r"expected a count in \[0, 2\*\*60\] per launch"):
        spec.footprint(1024) if what == "bytes_per_launch" else spec.flops_per_launch(1024)
    assert time.process_time() - t0 < CPU_BOUND_S


def test_bytes_per_launch_2_63_through_the_real_cli_measures_nothing(tmp_path):
    """It passed validation, measured, then died in a 46-line OverflowError (exit 1)."""
    from conftest import require_compiler

    require_compiler("host")
    (tmp_path / "k.c").write_text(
        "void k(float* a, unsigned long n) { for (unsigned long i = 0; i < n; i++) a[i] = 1; }\n"
    )
    res, spent = _cli(
        tmp_path,
        "bench",
        "k",
        "--source",
        "k.c",
        "--args",
        "out:a:f32[n],n:u64=n",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "3",
        "--no-reference",
        "--no-progress",
        "--bytes-per-launch",
        "2**63",
        "--out",
        "r.parquet",
    )
    line = _one_line(res, spent)
    assert "'2**63'" in line and "bytes_per_launch" in line, line
    assert not list(tmp_path.glob("r.*")) and res.stdout == ""
