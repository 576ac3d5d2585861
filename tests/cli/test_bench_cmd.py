"""hipexplore.cli.bench_cmd: ``hipexplore bench`` run through the real command line (in-process
``main``) on the host device: the report of a finished sweep (JSON records, the table, exports, a
resume's line), refusals that come before anything starts, and the signal handling of the sweep
phase. The options' parsing: tests/cli/test_bench_options.py and test_bench_values.py; the start-up
banner's wording: tests/bench/test_stop_flags.py; a sweep killed and resumed in a subprocess:
tests/bench/test_resume_kills.py."""

from __future__ import annotations

import json
import os
import signal

import pytest

from hipexplore.cli import bench_cmd, main

BENCH = ["bench", "triad", "--device", "host", "--size", "4KiB", "--no-reference", "--in-process", "--no-progress"]


def _no_nan(text: str) -> object:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def test_a_finished_sweep_is_json_records_with_exports_and_the_same_command_resumes(tmp_path, capsys, need_host_cc):
    out, perf = tmp_path / "r.parquet", tmp_path / "perf.json"
    argv = [*BENCH, "--iterations", "5", "--out", str(out), "--export", "pyperf", str(perf), "--json"]
    assert main(argv) == 0
    got = capsys.readouterr()
    doc = _no_nan(got.out)  # NaN is null: strict JSON readers take it
    assert doc["out"] == str(out) and [r["kernel"] for r in doc["summary"]] == ["triad"], doc
    assert f"exported (pyperf): {perf}" in got.err and perf.is_file() and out.is_file()
    assert "adaptive sampling" not in got.err  # --iterations: no adaptive rule, no banner
    assert main(argv) == 0
    again = capsys.readouterr().err
    assert "resumed" in again and "kept 1 finished configuration(s) of your own results" in again, again
    assert "triad 4 KiB rot=1 flush=none" in again and "(--no-resume starts over)" in again


def test_an_adaptive_sweep_says_its_rules_and_prints_the_table(capsys, need_host_cc):
    argv = [
        *BENCH,
        "--min-samples",
        "5",
        "--min-time",
        "0",
        "--target-ci",
        "0.9",
        "--target-cv",
        "0.9",
        "--timeout",
        "5",
    ]
    assert main(argv) == 0
    got = capsys.readouterr()
    banner = [line for line in got.err.splitlines() if "adaptive sampling (no --iterations)" in line]
    assert len(banner) == 1 and "from 5 samples on" in banner[0], got.err
    assert "triad" in got.out and "samples:" not in got.out  # the table; no --out, no samples line


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--size", " , "], "--size ' , ' names no size; expected e.g. 4096, 64KiB, 1MiB"),
        (["--cluster", "local:1", "--llc-bytes", "32MiB"], "--llc-bytes applies to one device; with --cluster"),
        (
            ["--cluster", "local:1", "--source", "k.c", "--args", "out:a:f32[n],n:u64=n"],
            "--cluster sends catalog kernels",
        ),
        (["--cluster", "local:0"], "local:0"),
    ],
)
def test_a_bad_combination_is_one_line_before_anything_starts(tmp_path, capsys, extra, says):
    argv = [*BENCH, "--iterations", "5", *extra]
    if "--source" in extra:  # a kernel of its own name: a --source kernel named triad would replace the catalog's
        (tmp_path / "k.c").write_text("void cli_bench_cmd_k(float *a, unsigned long n) { a[0] = n; }\n")
        argv = [str(tmp_path / "k.c") if x == "k.c" else "cli_bench_cmd_k" if x == "triad" else x for x in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hipexplore bench: error:") and "\n" not in err and says in err, err


def test_sigterm_during_the_sweep_ends_it_as_ctrl_c_does_and_the_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    assert before == (signal.SIG_DFL, signal.default_int_handler)  # what the context takes over
    with pytest.raises(KeyboardInterrupt):
        with bench_cmd._terminate_as_interrupt() as got:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs between bytecodes
                pass
    assert got == {"signal": signal.SIGTERM}
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_an_interrupt_before_the_first_result_says_nothing_was_measured():
    assert (
        bench_cmd._kept(KeyboardInterrupt(), "r.parquet")
        == "hipexplore bench: interrupted before anything was measured"
    )
