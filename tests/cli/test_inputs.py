"""The newcomer's CLI inputs (issue 15): each bad value is one line on stderr naming the value and
what was expected, exit status 2, and nothing is lost (an existing file keeps its bytes, a long
run is not started). In-process ``main()`` except where the claim is about a process (a compiler
worker's crash dump, the progress bar on stderr next to JSON on stdout).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

import cliproc
from hipexplore.cli import main
from hipexplore.errors import CompileError

REPO = Path(__file__).resolve().parents[2]
HOST_KERNEL = "void k(float* a, unsigned long n) { for (unsigned long i = 0; i < n; i++) a[i] = 1; }\n"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cache"


def bad(capsys, *argv: str) -> str:
    """Run the CLI; it must exit 2 with exactly one line on stderr. Returns that line."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def run_cli(*argv: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m hipexplore ARGV`` in a process of its own (forked from a preloaded interpreter:
    tests/cliproc.py)."""
    return cliproc.run(argv, timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_compile_timeout_nan_is_refused(tmp_path, capsys, monkeypatch):
    (tmp_path / "k.c").write_text(HOST_KERNEL)
    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "nan")
    line = bad(capsys, "compile", str(tmp_path / "k.c"), "--compiler", "host")
    assert "HIPEXPLORE_COMPILE_TIMEOUT='nan'" in line and "positive, finite" in line


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--block", "0"], "argument --block: expected a positive integer, got '0'"),
        (["--grid", "-3"], "argument --grid: expected a positive integer, got '-3'"),
        (["--iterations", "1000000000000"], "argument --iterations: 1000000000000 is more than the maximum, 1,000,000"),
        (["--min-time", "nan"], "min_time_s must be a finite number >= 0, got nan"),
        (["--llc-bytes", "-1"], "argument --llc-bytes: expected a positive size such as 32MiB or 33554432, got '-1'"),
        (["--floor", "maybe"], "argument --floor: expected auto, on or off, got 'maybe'"),
        (["--chunk-lead", "sometimes"], "argument --chunk-lead: expected random or an integer >= 0, got 'sometimes'"),
        (["--chunk-lead", "-1"], "argument --chunk-lead: expected random or an integer >= 0, got '-1'"),
        (["--chunk-trail", "x"], "argument --chunk-trail: expected an integer >= 0, got 'x'"),
    ],
)
def test_bench_absurd_values(tmp_path, capsys, argv, says):
    (tmp_path / "k.c").write_text(HOST_KERNEL)
    line = bad(
        capsys,
        "bench",
        "k",
        "--source",
        str(tmp_path / "k.c"),
        "--args",
        "out:a:f32[n],n:u64=n",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--no-reference",
        *argv,
    )
    assert says in line, line


def test_bench_out_over_a_corrupt_result_changes_nothing(tmp_path, capsys):
    out = tmp_path / "x.parquet"
    assert (
        main(
            [
                "bench",
                "triad",
                "--device",
                "host",
                "--size",
                "4KiB",
                "--iterations",
                "5",
                "--no-reference",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    out.write_bytes(b"not a parquet file")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    line = bad(
        capsys,
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "5",
        "--no-reference",
        "--out",
        str(out),
    )
    assert "x.parquet" in line and "not a readable parquet file" in line and "nothing was changed" in line
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_bench_out_refuses_a_foreign_parquet_unless_forced(tmp_path, capsys):
    import pandas as pd

    out = tmp_path / "mine.parquet"
    pd.DataFrame({"precious": [1, 2, 3]}).to_parquet(out)
    before = out.read_bytes()
    line = bad(capsys, "bench", "triad", "--device", "host", "--size", "4KiB", "--iterations", "5", "--out", str(out))
    assert "is not a hipexplore result (no mine.meta.json beside it)" in line and "--force" in line
    assert out.read_bytes() == before and not (tmp_path / "mine.meta.json").exists()
    assert (
        main(
            [
                "bench",
                "triad",
                "--device",
                "host",
                "--size",
                "4KiB",
                "--iterations",
                "5",
                "--no-reference",
                "--out",
                str(out),
                "--force",
            ]
        )
        == 0
    )
    assert "precious" not in pd.read_parquet(out).columns


def test_destinations_are_checked_before_the_work(tmp_path, capsys, monkeypatch):
    import hipexplore.report.notebooks as nbmod
    import hipexplore.tuning.replay as replay

    def must_not_run(*args, **kwargs):  # the bug: the replay / notebook ran first and the write failed after it
        raise AssertionError("the work started before its destination was checked")

    monkeypatch.setattr(replay, "run_replay", must_not_run)
    monkeypatch.setattr(nbmod, "execute_notebook", must_not_run)
    line = bad(capsys, "tune-replay", "--compiler", "host", "--frame", "/no/dir/f.parquet")
    assert "--frame '/no/dir/f.parquet'" in line and "does not exist" in line
    line = bad(capsys, "report", "--out", "/proc/x.html")
    assert "/proc/x.html" in line and "cannot create a file in the folder" in line


@pytest.mark.parametrize(
    "argv, says",
    [
        (
            ["tune-replay", "--compiler", "host", "--tokens", str(10**12)],
            "argument --tokens: 1000000000000 is more than the maximum, 1,048,576",
        ),
        (["report", "--timeout", "0"], "argument --timeout: expected a positive number of seconds, got '0'"),
        (["report", "--timeout", "nan"], "argument --timeout: expected a positive number of seconds, got 'nan'"),
    ],
)
def test_absurd_values_of_replay_and_report(capsys, argv, says):
    assert says in bad(capsys, *argv)


def test_params_iterations_abc_on_recorded_data(tmp_path, capsys):
    (tmp_path / "rec").mkdir()
    (tmp_path / "p.yaml").write_text("data: rec\niterations: abc\n")
    line = bad(capsys, "report", "--params", str(tmp_path / "p.yaml"), "--out", str(tmp_path / "r.html"))
    assert "iterations: 'abc' is not a positive integer" in line and "p.yaml" in line


def test_params_paths_resolve_against_the_params_file(tmp_path, monkeypatch):
    from hipexplore.report import load_params

    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "p.yaml").write_text("data: data/h200\ntuning_data: live\n")
    monkeypatch.chdir("/")
    params = load_params(tmp_path / "cfg" / "p.yaml")
    assert params["data"] == str(tmp_path / "cfg" / "data" / "h200") and params["tuning_data"] == "live"


def test_a_30000_option_compile_error_is_short_and_keeps_everything(tmp_path):
    from hipexplore.compile.cache import CompileCache
    from hipexplore.compile.request import CompileRequest, Source

    options = tuple(f"-DOPTION_NUMBER_{i}=1" for i in range(30000))
    req = CompileRequest(
        source=Source("bad.c", "int f(void) { return }\n"), compiler="host", target="host", options=options
    )
    with pytest.raises(CompileError) as err:
        CompileCache(max_entries=0, max_bytes=0, disk_dir=False).get_or_compile(req)
    text = str(err.value)
    assert len(text) < 12_000, len(text)
    assert re.search(r"\.\.\. 2999\d more\]", text), text[:600]
    assert set(options) <= set(err.value.options) and err.value.log  # the exception keeps it all


def test_a_crashing_target_is_one_line_and_the_dump_goes_to_a_log(tmp_path):
    from conftest import require_compiler

    require_compiler("hiprtc")
    src = tmp_path / "k.hip"
    src.write_text('extern "C" __global__ void k(float* a) { a[0] = 1; }\n')
    env = {"HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    res = run_cli("compile", str(src), "--compiler", "hiprtc", "--target", "gfx942", env=env)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "SIGABRT" in lines[0] and "gfx942" in lines[0], res.stderr
    log = Path(lines[0].split("crash output is in ")[1].split(";")[0])
    assert log.parent == tmp_path and "Fatal Python error" in log.read_text()
    debug = run_cli(
        "compile", str(src), "--compiler", "hiprtc", "--target", "gfx942", env={**env, "HIPEXPLORE_DEBUG": "1"}
    )
    assert debug.returncode != 0 and "Fatal Python error" in debug.stderr  # the dump, shown


def test_unknown_kernel_lists_user_kernels_only(capsys):
    line = bad(capsys, "bench", "nosuch", "--device", "host")
    assert "unknown kernel 'nosuch'" in line and "triad" in line
    assert "spin" not in line and "flush-" not in line


def test_sizes_accept_tib_and_print_human_readable():
    from hipexplore.bench.spec_checks import parse_size
    from hipexplore.readable import format_bytes, format_percent

    assert parse_size("1TiB") == 1 << 40 and parse_size("2T") == 2 << 40
    assert (
        format_bytes(268435456) == "256 MiB"
        and format_bytes(16106127360000) == "14.6 TiB"
        and format_bytes(512) == "512 B"
    )
    assert format_percent(0.01234) == "1.2%" and format_percent(-0.5, signed=True) == "-50.0%"
    with pytest.raises(Exception, match="1TiB"):
        parse_size("-1TiB")


# --- issue 25 item 7 / issue 26 items 12, 13: every subcommand's bad values, one line each -------


@pytest.fixture
def files(tmp_path):
    """A kernel, a non-UTF-8 file, a directory, a junk .parquet, an existing output to protect."""
    (tmp_path / "k.c").write_text(HOST_KERNEL)
    (tmp_path / "bad.c").write_bytes(b"void k(float* a) { } /* \xff\xfe */\n")
    (tmp_path / "bad.yaml").write_bytes(b"device: host\n\xff: 1\n")
    (tmp_path / "broken.json").write_text('{"device": "host"')
    (tmp_path / "adir").mkdir()
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    (tmp_path / "keep.bin").write_bytes(b"precious")
    return tmp_path


@pytest.mark.parametrize(
    "argv, says",
    [
        (["compile", "k.c", "--compiler", "host", "--out", ""], "--out is empty"),
        (["compile", "k.c", "--compiler", "host", "--out", "/proc/x.so"], "cannot write --out '/proc/x.so'"),
        (["compile", "k.c", "--compiler", "host", "--out", "adir"], "is a directory"),
        (["compile", "k.c", "--compiler", "host", "--out", "nodir/x.so"], "directory 'nodir' does not exist"),
        (["compile", "k.c", "--compiler", "host", "--target", ""], "--target is empty"),
        (["compile", "bad.c", "--compiler", "host", "--out", "new.bin"], "is not UTF-8"),
        (["compile", "adir", "--compiler", "host"], "is a directory"),
        (["cache", "stats", "--dir", ""], "--dir is empty"),
        (["cache", "clear", "--dir", "k.c"], "is not a directory"),
        (["compare", "junk.parquet", "junk.parquet"], "run 'junk.parquet' is not a readable parquet file"),
        (["compare", "adir", "adir"], "adir"),
        (["compare", "nosuch.parquet", "nosuch.parquet"], "does not exist"),
        (
            ["compare", "nosuch.parquet", "nosuch.parquet", "--threshold", "nan"],
            "threshold must be a fraction in (0, 1)",
        ),
        (
            ["tune-replay", "--compiler", "host", "--jobs", "99999999999"],
            "argument --jobs: 99999999999 is more than the maximum, 256",
        ),
        (
            ["tune-replay", "--compiler", "host", "--jobs", "-1"],
            "argument --jobs: expected a positive integer, got '-1'",
        ),
        (["tune-replay", "--compiler", "host", "--frame", "/proc/x.parquet"], "--frame '/proc/x.parquet'"),
        (["tune-replay", "--compiler", "host", "--frame", "adir"], "--frame"),
        (["report", "--params", "bad.yaml", "--out", "r.html"], "--params 'bad.yaml' is not UTF-8 text"),
        (["report", "--params", "adir", "--out", "r.html"], "--params 'adir' is a directory"),
        (["report", "--params", "nosuch.yaml", "--out", "r.html"], "--params 'nosuch.yaml' does not exist"),
        (["report", "--params", "broken.json", "--out", "r.html"], "broken.json"),
        (["report", "--out", "/proc/x.html"], "/proc/x.html"),
        (
            ["report", "--baseline", "a.parquet", "--candidate", "b.parquet", "--threshold", "nan"],
            "threshold must be a fraction in (0, 1)",
        ),
        (["tune-replay", "--compiler", "host", "--target", ""], "--target must be a non-empty string"),
        (["tune-replay", "--compiler", "host", "--problems", ""], "--problems is empty"),
        (["tune-replay", "--compiler", "host", "--problems", " , "], "--problems is empty"),
        (["bench", "", "--device", "host"], "names no kernel"),
        (["bench", "triad", "--device", "host", "--size", ""], "--size '' names no size"),
        (
            ["bench", "triad", "--device", "host", "--iterations", "3", "--timeout", "-5"],
            "timeout_s must be a finite number > 0, got -5",
        ),
        (
            ["bench", "triad", "--device", "host", "--iterations", "3", "--target-ci", "nan"],
            "target_ci must be a finite number > 0, got nan",
        ),
        (
            ["bench", "triad", "--device", "host", "--chunk-lead", "99999999999999999"],
            "argument --chunk-lead: 99999999999999999 is more than the maximum, 1,024",
        ),
        (
            ["bench", "triad", "--device", "host", "--chunk-trail", "10000"],
            "argument --chunk-trail: 10000 is more than the maximum",
        ),
        (
            ["bench", "triad", "--device", "host", "--iterations", "3", "--out", "/proc/x.parquet"],
            "--out '/proc/x.parquet': cannot create a file in the folder '/proc'",
        ),
        (
            ["bench", "k", "--source", "bad.c", "--args", "out:a:f32[n]", "--device", "host"],
            "--source 'bad.c' is not UTF-8 text (byte 0xff",
        ),
        (
            ["bench", "k", "--source", "k.c", "--header", "bad.c", "--args", "out:a:f32[n]", "--device", "host"],
            "--header 'bad.c' is not UTF-8",
        ),
        (
            ["bench", "k", "--source", "k.c", "--header", "adir", "--args", "out:a:f32[n]", "--device", "host"],
            "--header 'adir' is a directory",
        ),
        (
            ["bench", "k", "--source", "adir", "--args", "out:a:f32[n]", "--device", "host"],
            "--source 'adir' is not a kernel source file name",
        ),
        (
            ["bench", "k", "--source", "k.c", "-I", "nodir", "--args", "out:a:f32[n]", "--device", "host"],
            "--include-dir 'nodir' is not a directory",
        ),
        (
            ["bench", "k", "--source", "k.c", "--entry", "", "--args", "out:a:f32[n]", "--device", "host"],
            "--entry is empty",
        ),
        (["bench", "k", "--source", "k.c", "--args", "out:a:f32[\u0661\u0662],n:u64=n", "--device", "host"], "U+0661"),
        (["bench", "k", "--source", "k.c", "--args", "out:a:f32[n", "--device", "host"], "is never closed"),
        (
            [
                "bench",
                "k",
                "--source",
                "k.c",
                "--args",
                "out:a:f32[n],n:u64=-1",
                "--device",
                "host",
                "--iterations",
                "3",
            ],
            "outside uint64's range",
        ),
        (
            [
                "bench",
                "k",
                "--source",
                "k.c",
                "--args",
                "out:a:f32[0],n:u64=n",
                "--device",
                "host",
                "--iterations",
                "3",
            ],
            "a buffer needs at least 1 element",
        ),
        (
            [
                "bench",
                "k",
                "--source",
                "k.c",
                "--args",
                "out:a:f32[n],n:u64=n",
                "--grid",
                "n**n",
                "--device",
                "host",
                "--iterations",
                "3",
            ],
            "out of range",
        ),
        (
            [
                "bench",
                "k",
                "--source",
                "k.c",
                "--args",
                "out:a:f32[n],n:u64=n",
                "--grid",
                "max(n,1",
                "--device",
                "host",
            ],
            "never closed",
        ),
    ],
)
def test_every_subcommand_refuses_bad_values_in_one_line(files, capsys, argv, says):
    before = {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()}
    line = bad(capsys, *argv)
    assert says in line, line
    assert {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()} == before  # nothing clobbered, nothing new
    assert list((files / "adir").iterdir()) == []


def test_compile_out_is_replaced_whole_or_not_at_all(files, capsys):
    (files / "broken.c").write_text("int f(void) { return }\n")
    assert main(["compile", "broken.c", "--compiler", "host", "--out", "keep.bin"]) == 2  # a compile error
    assert (files / "keep.bin").read_bytes() == b"precious"
    # not compiler output: left as it is unless --force (hipexplore never overwrites a file it did not write)
    assert main(["compile", "k.c", "--compiler", "host", "--out", "keep.bin"]) == 2
    assert (files / "keep.bin").read_bytes() == b"precious"
    assert "exists and is not compiler output" in capsys.readouterr().err
    assert main(["compile", "k.c", "--compiler", "host", "--out", "keep.bin", "--force"]) == 0
    assert (files / "keep.bin").read_bytes().startswith(b"\x7fELF")
    assert main(["compile", "k.c", "--compiler", "host", "--out", "keep.bin"]) == 0  # its own output: replaced
    assert not [p.name for p in files.iterdir() if p.name.endswith((".tmp", ".check"))]


def test_compare_help_has_no_doubled_percent(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    out = capsys.readouterr().out
    assert "95% interval" in out and "%%" not in out


def test_info_lists_every_target_gfx90a_included(capsys):
    from conftest import require_compiler
    from hipexplore.compile.registry import compiler_info

    require_compiler("hiprtc")
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    hiprtc = next(c for c in compiler_info() if c["name"] == "hiprtc")
    assert "gfx90a" in hiprtc["targets"] and len(hiprtc["targets"]) > 12
    block = text.split("  hiprtc", 1)[1].split("crashing targets", 1)[0]
    assert all(t in block.replace("\n", " ") for t in hiprtc["targets"]) and " ..." not in block


def test_compare_of_runs_with_other_kernel_names_says_why_and_what_to_do(tmp_path, capsys):
    for kernel in ("triad", "copy"):
        assert (
            main(
                [
                    "bench",
                    kernel,
                    "--device",
                    "host",
                    "--size",
                    "4KiB",
                    "--iterations",
                    "24",
                    "--no-reference",
                    "--no-progress",
                    "--out",
                    str(tmp_path / f"{kernel}.parquet"),
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "triad.parquet"), str(tmp_path / "copy.parquet")]) == 0
    out = capsys.readouterr().out
    hint = [" ".join(h.split()) for h in out.split("\n\n") if h.startswith("hint: ")]  # wrapped at 120 columns
    assert len(hint) == 1, out
    assert "the base run holds kernel(s) triad while the new run holds copy" in hint[0]
    assert "--base triad --new copy" in hint[0] and "--interleave" in hint[0]
    assert main(["compare", str(tmp_path / "triad.parquet"), str(tmp_path / "copy.parquet"), "--json"]) == 0
    import json

    assert "--base triad --new copy" in json.loads(capsys.readouterr().out)["hint"]
    # the same kernel in both runs: rows are compared, no hint
    assert main(["compare", str(tmp_path / "triad.parquet"), str(tmp_path / "triad.parquet")]) == 0
    assert "hint:" not in capsys.readouterr().out


# -- every value before any heavy set-up (issues 47.4 and 49.1) ------------------------------------------
from fixtures.early_checks import probe  # noqa: E402

BENCH = ["bench", "triad", "--device", "host", "--size", "64KiB", "--iterations", "20", "--no-progress"]


@pytest.mark.parametrize(
    "argv, env, says",
    [
        (["bench", "triad", "--device", "host", "--size", "nan"], {}, "size 'nan' is not a positive size"),
        (["bench", "triad", "--device", "host", "--size", "-4KiB"], {}, "size '-4KiB' is not a positive size"),
        (["bench", "triad", "--device", "host", "--flush", "none,l2-raed"], {}, "flush mode 'l2-raed' is unknown"),
        (
            ["bench", "triad", "--device", "host", "--rotating", "1,0"],
            {},
            "rotating must be a positive integer or 'auto'",
        ),
        (
            ["bench", "triad", "--device", "host", "--rotating", "8", "--iterations", "4"],
            {},
            "iterations (4) must be greater than or equal to the number of rotating buffer sets (8)",
        ),
        (
            ["bench", "triad", "--device", "bogus"],
            {},
            "device 'bogus' is unknown; expected one of auto, host, cuda, hip",
        ),
        (BENCH, {"HIPEXPLORE_LAUNCH_TIMEOUT": "abc"}, "HIPEXPLORE_LAUNCH_TIMEOUT='abc' is invalid"),
        (
            BENCH,
            {"HIPEXPLORE_LAUNCH_TIMEOUT": "1e-300"},
            "HIPEXPLORE_LAUNCH_TIMEOUT='1e-300' is invalid: expected a finite number of seconds from 0.1 to 1e6",
        ),
        (
            ["bench", "k", "--source", "k.cu", "--args", "inout:x:f32[n], n:u64=n", "--device", "host"],
            {},
            "kernel 'k' has no host C source (k.cu is GPU source), so it cannot run with compiler 'host': run it on a GPU",
        ),
    ],
    ids=[
        "size-nan",
        "size-negative",
        "flush-typo",
        "rotating-0",
        "iterations-below-sets",
        "device-bogus",
        "launch-timeout-abc",
        "launch-timeout-tiny",
        "cu-on-host",
    ],
)
def test_a_bad_value_is_one_line_before_any_device_compiler_or_worker_starts(tmp_path, argv, env, says):
    """One line, exit 2, and nothing started first: no process (compiler, worker, git), no library
    (a GPU runtime, a kernel), no device module (``fixtures.early_checks``: an audit hook in the
    child). An existing --out file keeps its bytes. Load-proof: what happened, not how long it took."""
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* x, unsigned long long n) { }\n')
    (tmp_path / "old.parquet").write_bytes(b"PAR1 an earlier run's bytes")
    res = probe(*argv, "--out", "old.parquet", cwd=tmp_path, env=env)
    line = res.one_line("bench")
    assert says in line, line
    res.nothing_heavy()
    assert (tmp_path / "old.parquet").read_bytes() == b"PAR1 an earlier run's bytes"


def test_a_size_in_decimal_units_is_said(tmp_path):
    """``1MB`` is 10**6 bytes (parse_size, as before), and now the command says so, with the binary
    spelling, before the sweep; the refusal after it is the iterations check, still before any device."""
    res = probe(
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "1MB,64KiB",
        "--rotating",
        "8",
        "--iterations",
        "4",
        cwd=tmp_path,
    )
    assert res.rc == 2 and len(res.lines) == 1, res.stderr
    from hipexplore.cli.inputs import decimal_sizes_line

    assert decimal_sizes_line(["1MB", "64KiB", "2GB"]) == (
        "--size: 1MB is 1,000,000 bytes (not 1MiB, 1,048,576); 2GB is 2,000,000,000 bytes (not 2GiB, 2,147,483,648): "
        "kB, MB, GB and TB are powers of 10, KiB, MiB, GiB and TiB powers of 2 (the table shows binary units)"
    )
    assert decimal_sizes_line(["1MiB", "4096", "1M"]) is None


def test_the_decimal_note_is_printed_with_a_run(capsys):
    rc = main(
        [
            "bench",
            "triad",
            "--device",
            "host",
            "--size",
            "64kB",
            "--iterations",
            "4",
            "--units",
            "1",
            "--no-progress",
            "--json",
        ]
    )
    assert rc == 0
    err = capsys.readouterr().err
    assert "hipexplore bench: --size: 64kB is 64,000 bytes (not 64KiB, 65,536)" in err, err


def test_a_gpu_that_is_not_there_names_the_devices_that_are(capsys):
    from hipexplore.devices import available

    here = available()
    assert here[-1] == "--device host (this CPU)"
    if any(d.startswith("--device cuda") for d in here):
        from conftest import NOT_REQUIRED, need

        need(
            "a machine without an NVIDIA GPU",
            "an NVIDIA GPU is present here: the absent-device error cannot be produced",
            flag=NOT_REQUIRED,
        )
    line = bad(capsys, "bench", "triad", "--device", "cuda", "--size", "4KiB", "--iterations", "4")
    assert line.startswith("hipexplore bench: error: CUDA: ") and line.endswith(f"; devices here: {', '.join(here)}"), (
        line
    )
