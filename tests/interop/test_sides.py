"""hipexplore.interop.sides (with nvbench_files and pyperf_files): ``hipexplore compare`` on other
tools' files, read by their own readers, and what each lacks said; bad input one line, exit 2.

Real files: a pyperf result written by ``python -m pyperf timeit`` here, and the nvbench results the
cuda-bench wheel ships (``cuda/bench/scripts/test_ref.json``/``test_cmp.json``, written by nvbench on a
Quadro GV100); a copy of one with per-sample data in nvbench's --jsonbin layout (NAME-bin/N.bin)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hipexplore.cli import main
from hipexplore.interop import nvbench_files, pyperf_files


def nvbench_examples() -> tuple[Path, Path]:
    try:
        import cuda.bench.scripts as scripts
    except ImportError:
        from conftest import missing

        missing("package cuda-bench", "the 'interop' extra installs it (./setup.sh --dev)")
    folder = Path(scripts.__file__).parent
    return folder / "test_ref.json", folder / "test_cmp.json"


def one_line_exit_2(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.fixture(scope="module")
def pyperf_results(tmp_path_factory):
    """Two real pyperf results of one benchmark (4 worker processes each) and one of another."""
    folder = tmp_path_factory.mktemp("pyperf")
    for name, stmt, bench in (
        ("a", "sum(range(200))", "sum200"),
        ("b", "sum(range(200))", "sum200"),
        ("other", "sorted(range(50))", "sort50"),
    ):
        got = subprocess.run(
            [
                sys.executable,
                "-m",
                "pyperf",
                "timeit",
                "-q",
                "-p",
                "4",
                "-n",
                "5",
                "-w",
                "1",
                "-l",
                "200",
                "--name",
                bench,
                "-o",
                str(folder / f"{name}.json"),
                stmt,
            ],
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert got.returncode == 0, got.stderr
    return folder


@pytest.mark.timeout(600)
def test_compare_gives_verdicts_on_real_pyperf_files(pyperf_results, capsys):
    a, b = pyperf_results / "a.json", pyperf_results / "b.json"
    assert main(["compare", str(a), str(b), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    (row,) = got["rows"]
    assert row["kernel"] == "sum200" and row["base_units"] == 4 and row["new_units"] == 4  # a run per process
    assert row["verdict"] in ("faster", "slower", "same", "undecided") and row["ratio_ci_low"] is not None
    assert got["source"] == pyperf_files.LACKS
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert max(map(len, text.splitlines())) <= 120 and "sum200" in text


@pytest.mark.timeout(600)
def test_a_pyperf_file_of_another_benchmark_is_refused(pyperf_results, capsys):
    line = one_line_exit_2(["compare", str(pyperf_results / "a.json"), str(pyperf_results / "other.json")], capsys)
    assert "share no benchmark" in line and "sum200" in line and "sort50" in line


@pytest.mark.timeout(300)
def test_compare_reads_real_nvbench_summaries_with_a_weaker_interval_named(capsys):
    ref, cmp = nvbench_examples()
    assert main(["compare", str(ref), str(cmp), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["source"] == nvbench_files.LACKS_SUMMARIES and "weaker" in got["source"]
    rows = [r for r in got["rows"] if r["present"] == "both"]
    assert len(rows) > 20
    assert all("weaker" in r["interval"] for r in rows)
    assert all(r["verdict"] in ("faster", "slower", "same", "undecided") for r in rows)
    # axes in the name, and the device where a benchmark ran on two (the GV100s of nvbench's example)
    assert any(r["kernel"].startswith("copy_sweep_grid_shape[Device=0 BlockSize=") for r in rows)


def _with_samples(src: Path, folder: Path, scale: float) -> Path:
    """A copy of an nvbench result whose states carry per-sample data as --jsonbin writes it."""
    import numpy as np

    doc = json.loads(src.read_text())
    rng = np.random.default_rng(1)
    (folder / f"{src.stem}-bin").mkdir(exist_ok=True)
    k = 0
    for bench in doc["benchmarks"][:1]:
        for state in bench["states"]:
            values = (1e-5 * scale * (1 + rng.normal(0, 0.01, 400))).astype("<f4")
            name = f"{src.stem}-bin/{k}.bin"
            values.tofile(folder / name)
            state["summaries"].append(
                {
                    "tag": "nv/json/bin:nv/cold/sample_times",
                    "name": "Samples Times File",
                    "hint": "file/sample_times",
                    "data": [
                        {"name": "filename", "type": "string", "value": name},
                        {"name": "size", "type": "int64", "value": str(len(values))},
                    ],
                }
            )
            k += 1
    doc["benchmarks"] = doc["benchmarks"][:1]
    out = folder / src.name
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.timeout(300)
def test_nvbench_per_sample_data_gets_the_within_process_interval(tmp_path, capsys):
    ref, _ = nvbench_examples()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = _with_samples(ref, tmp_path / "a", 1.0), _with_samples(ref, tmp_path / "b", 1.10)
    assert main(["compare", str(a), str(b), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [r["kernel"] for r in got["rows"]] == ["simple[Device=0]", "simple[Device=1]"]
    for row in got["rows"]:
        assert row["base_n"] == 400 and "within one process" in row["interval"]
        assert row["verdict"] == "slower" and 1.08 < row["ratio"] < 1.12  # +10% per sample, 1% noise
    # the same JSON without its -bin folder: summaries only, nothing looked up elsewhere
    import shutil

    shutil.rmtree(tmp_path / "b" / "test_ref-bin")
    (tmp_path / "test_ref-bin").mkdir()  # where cuda-bench's own reader would look next (the folder above)
    assert main(["compare", str(a), str(b), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["source"].count("nvbench") == 2 and all("weaker" in r["interval"] for r in got["rows"])
    # the sample side reduced to its mean: test_ref's own GPU means (b) against 1e-5 s samples (a)
    assert all(r["base_n"] == 400 and r["ratio_ci_low"] is not None for r in got["rows"])


@pytest.mark.timeout(120)
def test_bad_nvbench_files_are_one_line_exit_2(tmp_path, capsys):
    ref, cmp = nvbench_examples()
    cut = tmp_path / "cut.json"
    cut.write_text(ref.read_text()[:5000])
    line = one_line_exit_2(["compare", str(cut), str(cmp)], capsys)
    assert "nvbench file" in line and "not JSON" in line and str(cut) in line
    # a sample file named outside the JSON's folder is never opened
    doc = json.loads(ref.read_text())
    doc["benchmarks"][0]["states"][0]["summaries"].append(
        {
            "tag": "nv/json/bin:nv/cold/sample_times",
            "data": [
                {"name": "filename", "type": "string", "value": "/etc/passwd"},
                {"name": "size", "type": "int64", "value": "4"},
            ],
        }
    )
    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps(doc))
    line = one_line_exit_2(["compare", str(evil), str(cmp)], capsys)
    assert "is not a plain relative name" in line and "/etc/passwd" in line
    # two formats at once
    other = tmp_path / "p.json"
    other.write_text(json.dumps({"version": "1.0", "benchmarks": []}))
    line = one_line_exit_2(["compare", str(ref), str(other)], capsys)
    assert "pyperf" in line
