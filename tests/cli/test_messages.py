"""Messages that say what to do (issue 36 item 6): each bad input is one line, exit status 2, and
gives the fix (a flag, a value or the list to choose from), built here through the real command
line on the host device (in-process ``main``; a subprocess only where the process's own warning
printing is what is tested). And the bench table of item 5: it reads at 120 columns.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_compiler
from hipexplore.cli import main

REPO = Path(__file__).resolve().parents[2]
BENCH = ["bench", "triad", "--device", "host", "--no-progress"]


def _fails(capsys, argv: list[str]) -> str:
    """The one stderr line of a command line that must exit 2 (argparse's refusals exit there)."""
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err, err
    return err


def test_an_unavailable_flush_mode_lists_the_modes_the_device_has(capsys) -> None:
    from hipexplore.bench.flush import supported_modes
    from hipexplore.devices import get_device

    err = _fails(capsys, [*BENCH, "--size", "16KiB", "--flush", "none,icache", "--iterations", "8"])
    has = ",".join(m.name for m in supported_modes(get_device("host")))
    assert "flush mode 'icache' is not available on host" in err and f"this device has --flush {has}" in err, err
    assert "icache" not in has.split(",")


def test_fewer_iterations_than_sets_offers_both_fixes(capsys) -> None:
    err = _fails(capsys, [*BENCH, "--size", "16KiB", "--rotating", "128", "--iterations", "60"])
    assert "iterations (60)" in err and "(128)" in err
    assert "give --iterations 128 or more, or --rotating 60 or fewer" in err, err


def test_a_missing_host_kernel_names_entry_and_the_functions_there(tmp_path, capsys) -> None:
    require_compiler("host")
    src = tmp_path / "k.c"
    src.write_text(
        "void triad(float *a, unsigned long n) { for (unsigned long i = 0; i < n; i++) a[i] = 1; }\n"
        "void other_one(float *a) { a[0] = 2; }\n"
    )
    argv = [
        "bench",
        "stencil",
        "--device",
        "host",
        "--source",
        str(src),
        "--args",
        "out:a:f32[n],n:u64=n",
        "--iterations",
        "8",
        "--no-reference",
        "--no-verify",
        "--no-progress",
    ]
    err = _fails(capsys, argv)
    assert "kernel 'stencil' is not in the loaded host module" in err
    assert "it exports other_one, triad: give --entry NAME with one of them" in err, err
    assert main([*argv, "--entry", "triad"]) == 0  # the fix it names works


def test_a_set_over_the_cap_says_sizes_in_binary_units_and_the_flags(capsys) -> None:
    from hipexplore.bench.spec_checks import parse_size

    err = _fails(capsys, [*BENCH, "--size", "64MiB", "--mem-fraction", "0.001", "--iterations", "8", "--no-reference"])
    m = re.search(
        r"one buffer set needs 192 MiB but the cap is ([\d.]+ \w+) \(0.1% of [\d.]+ \w+ free device memory\): "
        r"give --size ([\d.]+\w+) or less, or --mem-fraction ([\d.]+) or more \(at most 1\)",
        err,
    )
    assert m, err
    cap, size, fraction = parse_size(m.group(1).replace(" ", "")), parse_size(m.group(2)), float(m.group(3))
    assert 3 * size <= cap * 1.06 and size < 64 << 20  # triad's set is 3 arrays: the size named fits the cap
    assert 0.001 < fraction <= 1 and not re.search(r"\d{7,} B", err)  # no raw byte counts


def test_an_out_folder_that_refuses_files_says_so(capsys) -> None:
    err = _fails(capsys, [*BENCH, "--iterations", "8", "--out", "/proc/x.parquet"])
    assert "--out '/proc/x.parquet': cannot create a file in the folder '/proc'" in err
    assert "refuses new files" in err and "No such file or directory" not in err, err
    assert "give --out a path in a folder you can write" in err


def test_host_compiler_diagnostics_name_the_users_file(tmp_path, capsys, monkeypatch) -> None:
    require_compiler("host")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "broken.c").write_text("void broken(float *a) {\n  int x = ; a[0] = x; }\n")
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "bench",
                "broken",
                "--device",
                "host",
                "--source",
                "src/broken.c",
                "--args",
                "out:a:f32[n]",
                "--iterations",
                "8",
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    diagnostics = [line for line in err.splitlines()[1:] if not line.startswith("$ ")]
    assert any(line.startswith(f"{tmp_path / 'src' / 'broken.c'}:2:") for line in diagnostics), err
    assert not any("hipexplore-host-" in line for line in diagnostics), err
    # hipexplore compile: the file as it was given
    assert main(["compile", "--compiler", "host", "src/broken.c"]) == 2
    err = capsys.readouterr().err
    assert any(line.startswith("src/broken.c:2:") for line in err.splitlines()), err
    assert not any("hipexplore-host-" in line for line in err.splitlines() if not line.startswith("$ ")), err


def test_an_unusable_cache_dir_is_one_line_that_says_what_to_set(tmp_path) -> None:
    """In a library process (no CLI formatter): Python's own form named this library's cache.py
    and line and printed its source line."""
    require_compiler("host")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HIPEXPLORE_CACHE_DIR": str(blocker / "c")}
    code = (
        "import hipexplore as hx; hx.sweep('triad', ['16KiB'], [1], ['none'], device='host', iterations=4, "
        "progress=False, reference=False, verify=False, worker=False, units=1)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines == [
        f"hipexplore: HIPEXPLORE_CACHE_DIR={str(blocker / 'c')!r} is not usable (ENOTDIR: Not a directory): "
        f"the disk cache is off for this run (memory cache only); set it to a writable folder, or "
        f"HIPEXPLORE_CACHE_DISK=0 to silence this."
    ], res.stderr


@pytest.fixture(scope="module")
def run_file(tmp_path_factory) -> str:
    import hipexplore as hx

    out = tmp_path_factory.mktemp("run") / "a.parquet"
    hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device="host",
        iterations=16,
        progress=False,
        reference=False,
        verify=False,
        worker=False,
        units=2,
        out=str(out),
    )
    return str(out)


@pytest.mark.parametrize("given", ["2%", "0.02", " 2 % "])
def test_a_threshold_is_a_fraction_or_a_percentage(run_file, given, capsys) -> None:
    assert main(["compare", run_file, run_file, "--threshold", given, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["threshold"] == pytest.approx(0.02)


def test_a_threshold_out_of_range_names_both_forms(run_file, capsys) -> None:
    err = _fails(capsys, ["compare", run_file, run_file, "--threshold", "2"])
    assert "threshold must be a fraction in (0, 1), got '2'" in err and "for 2% give --threshold 2% or 0.02" in err, err
    err = _fails(capsys, ["report", "--baseline", "a.parquet", "--candidate", "b.parquet", "--threshold", "two"])
    assert "expected a fraction such as 0.02 or a percentage such as 2%, got 'two'" in err, err


def test_the_bench_table_reads_at_120_columns_with_one_stop_word_and_each_note_once(capsys) -> None:
    """The issue's sweep (sizes x rotating x flush, 3 units) with a timeout so short that every
    timed row stops by it: the rows that made 250-character lines."""
    assert (
        main(
            [
                *BENCH,
                "--size",
                "16KiB,64KiB",
                "--rotating",
                "1,2",
                "--flush",
                "none,l2-write",
                "--units",
                "3",
                "--timeout",
                "0.15",
                "--min-samples",
                "5",
                "--reference-samples",
                "6",
                "--warmup-s",
                "0",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)
    head = lines[0].split()
    assert head[:4] == ["kernel", "size", "rot", "flush"] and head[-2:] == ["stop", "notes"], lines[0]
    rows = lines[1 : lines.index("")]
    assert len(rows) == 2 * 2 * 2 + 2  # 8 configurations and a cold reference per size
    stop_at = lines[0].index("stop")
    stops = [row[stop_at:].split()[0] for row in rows]
    assert all(s in ("TIMEOUT", "CAP", "noise", "cv", "ci", "fixed") for s in stops), stops
    assert "TIMEOUT" in stops and "|" not in out
    notes = lines[lines.index("") + 2 :]
    numbered = [line for line in notes if re.match(r"\s*\d+  ", line)]
    texts = [re.sub(r"^\s*\d+  ", "", line) for line in numbered]
    assert len(texts) == len(set(texts)) and any(
        t.startswith("timeout 0.05 s reached before convergence") for t in texts
    ), notes
    assert "stopped by its timeout" not in out  # the same timeout said twice, once
    used = {int(n) for row in rows for n in row[lines[0].index("notes") :].split(",") if n.strip()}
    assert used == set(range(1, len(numbered) + 1))  # every note is referenced, every reference has its note


def test_the_widest_table_still_fits_120_columns_by_leaving_columns_out_and_saying_so() -> None:
    """Every optional column at once (a timer other than events, the launch floor, counted states) and
    a kernel named as C++ templates get named: columns are left out in a stated order and said so,
    the name is cut; --json keeps everything."""
    import hipexplore as hx
    from hipexplore.cli.bench_table import DROPPABLE, KERNEL_CHARS, table

    res = hx.sweep(
        "triad",
        ["16KiB", "1MiB"],
        [1, 2],
        ["none", "l2-write"],
        device="host",
        iterations=8,
        units=1,
        reference=True,
        reference_samples=4,
        warmup_s=0.0,
        progress=False,
    )
    wide = res.summary.assign(
        kernel="transpose_tiled_shared_memory_kernel<float, 32, 8>",
        timer="in-kernel",
        floor_s=res.summary["median_s"] * 0.4,
        cache_state="partial",
        cold_fraction=0.4321,
        median_s=res.summary["median_s"] * 1234.5,
        ci_low_s=res.summary["ci_low_s"] * 1234.5,
        ci_high_s=res.summary["ci_high_s"] * 1234.5,
    )
    text = table(wide)
    lines = text.splitlines()
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)
    said = next(line for line in lines if line.startswith("(left out to fit 120 columns:"))
    gone = said.split(": ", 1)[1].split(";")[0].split(", ")
    assert gone == list(DROPPABLE[: len(gone)]) and "every column: --json" in said
    head = lines[0].split()
    assert not set(gone) & set(head) and {"timer", "floor_us", "state", "stop"} - set(gone) <= set(head) | {"floor_us"}
    assert (
        lines[1].startswith("transpose_tiled_shared_memory_kernel"[: KERNEL_CHARS - 1] + "…")
        and "partial 0.43" in lines[1]
    )
    assert table(res.summary).count("left out") == 0  # a table that fits keeps every column
