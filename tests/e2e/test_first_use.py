"""What a newcomer trips on (issue 15), each with the real part: setup's Jupyter kernel in a
temporary HOME, `hipexplore lab` starting JupyterLab as root, progress on stderr beside JSON on
stdout, the sweep panel's hints, plot layout, units, provenance, `info` against the README.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from hipexplore import plots
from hipexplore.cli import main

REPO = Path(__file__).resolve().parents[2]


def run_cli(*argv: str, env: dict | None = None, timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipexplore", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


# -- set-up --------------------------------------------------------------------------------------
def test_setup_kernel_step_leaves_the_users_python3_kernel_alone(tmp_path):
    """setup.sh's kernel step (scripts/install_kernel.sh, run here in isolation: the whole setup.sh
    would pip-install a fresh venv) in a temporary HOME that already has a python3 kernelspec."""
    from conftest import hermetic_paths

    home = tmp_path / "home"
    mine = home / ".local" / "share" / "jupyter" / "kernels" / "python3"
    mine.mkdir(parents=True)
    own = json.dumps({"argv": ["/opt/other/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                      "display_name": "My own Python 3", "language": "python"})
    (mine / "kernel.json").write_text(own)
    # Every per-user location (HOME, XDG_*, JUPYTER_*) under tmp_path: the session's hermetic HOME sets
    # XDG_DATA_HOME/JUPYTER_DATA_DIR, which ipykernel follows before HOME.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "XDG_"))}
    env.update(hermetic_paths(tmp_path))
    res = subprocess.run([str(REPO / "scripts" / "install_kernel.sh"), sys.executable], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert (mine / "kernel.json").read_text() == own
    spec = json.loads((home / ".local" / "share" / "jupyter" / "kernels" / "hipexplore" / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable and spec["display_name"] == "Python (hipexplore)"
    setup = (REPO / "setup.sh").read_text()
    assert "scripts/install_kernel.sh" in setup and "--name python3" not in setup


def test_notebooks_and_report_ask_for_the_hipexplore_kernel():
    import jupytext

    from hipexplore import report

    assert report.KERNEL_NAME == "hipexplore"
    for py in (REPO / "notebooks").glob("*.py"):
        assert jupytext.read(py).metadata["kernelspec"]["name"] == "hipexplore", py


def test_lab_adds_allow_root_only_for_root():
    from hipexplore.cli.lab_cmd import lab_command

    assert "--allow-root" in lab_command("notebooks", 0)
    assert "--allow-root" not in lab_command("notebooks", 1000)
    assert lab_command("nb", 1000, ["--no-browser"])[-2:] == ["nb", "--no-browser"]


def test_hipexplore_lab_starts_jupyterlab_as_this_user(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "lab.log", "w")
    env = {**os.environ, "PYTHONPATH": str(REPO), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    proc = subprocess.Popen([sys.executable, "-m", "hipexplore", "lab", str(REPO / "notebooks"), "--", "--no-browser",
                             f"--port={port}", "--ip=127.0.0.1", "--ServerApp.token=t"], stdout=log, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while proc.poll() is None and time.monotonic() < deadline and f":{port}/" not in (tmp_path / "lab.log").read_text():
            time.sleep(0.5)
        text = (tmp_path / "lab.log").read_text()
        assert proc.poll() is None, text[-2000:]  # as root, plain `jupyter lab` exits here
        assert f":{port}/" in text and "Running as root is not recommended" not in text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


# -- long work -----------------------------------------------------------------------------------
def test_tune_replay_progress_on_stderr_json_alone_on_stdout(tmp_path):
    res = run_cli("tune-replay", "--compiler", "host", "--problems", "1", "--limit", "2", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "passes" in res.stderr and "memory" in res.stderr  # tqdm names the pass
    assert out["seconds_saved"] == pytest.approx(out["seconds_without_cache"] - out["seconds"])
    assert "quote" in out["seconds_saved_quote"] or "seconds_saved:" in out["seconds_saved_quote"]
    quiet = run_cli("tune-replay", "--compiler", "host", "--problems", "1", "--limit", "2", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert "saved:" in quiet.stdout


def test_negative_vs_ideal_is_explained():
    from hipexplore.cli.tune_cmd import replay_text

    out = {"compiler": "host", "target": "host", "jobs": 1, "cache": "memory", "isolated": True, "problems": ["qkv"],
           "candidates_per_problem": 2, "kernels": 4, "unique_kernels": 3, "by_role": {}, "seconds": 0.8,
           "seconds_ideal": 1.0, "seconds_without_cache": 2.0, "seconds_without_cache_source": "measured",
           "overhead_vs_ideal": -0.2, "speedup_vs_without_cache": 2.5, "failed": 0, "seconds_saved": 1.2,
           "seconds_saved_recorded": 0.9}
    cols = ["scenario", "jobs", "lookups", "compiles", "memory_hits", "disk_hits", "remote_hits", "joins", "failed", "seconds",
            "compile_seconds", "seconds_saved"]
    text = replay_text(out, pd.DataFrame([dict.fromkeys(cols, 0)]))
    assert "vs ideal: -20.0%" in text and "negative: this pass was faster than the ideal pass" in text
    assert "saved: 1.200 s of wall time" in text and "quote this one" in text
    assert "negative" not in replay_text({**out, "overhead_vs_ideal": 0.1}, pd.DataFrame([dict.fromkeys(cols, 0)]))


def test_adaptive_bench_says_what_it_does_and_resume_names_what_it_kept(tmp_path):
    out = tmp_path / "r.parquet"
    args = ["bench", "triad", "--device", "host", "--size", "4KiB", "--no-reference", "--timeout", "0.3", "--min-time", "0.001",
            "--out", str(out), "--no-progress"]
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert "adaptive sampling (no --iterations)" in first.stderr and "0.3 s" in first.stderr
    banner = next(ln for ln in first.stderr.splitlines() if "adaptive sampling" in ln)
    assert len(banner) <= 240 and all(f"('{w}')" in banner for w in ("ci", "cv", "noise", "TIMEOUT", "CAP")), banner
    second = run_cli(*args[:5], "4KiB,8KiB", *args[6:])
    assert second.returncode == 0, second.stderr
    assert "kept 1 finished configuration(s), not measured again: triad 4 KiB rot=1 flush=none" in second.stderr
    assert "8 KiB" in second.stdout and "4 KiB" in second.stdout  # human-readable sizes in the table


# -- sweep panel and plots -------------------------------------------------------------------------
def summary_rows(sizes=(1 << 16, 1 << 18), rotating=(1, 2, 342), flush=("none", "l2-read")) -> pd.DataFrame:
    rows = []
    for size in sizes:
        for f in flush:
            for i, r in enumerate(rotating):
                rows.append(dict(kernel="triad", size_bytes=size, rotating=r, rotating_requested="auto" if r > 100 else str(r),
                                 flush=f, median_s=1e-5 * (i + 1), iqr_rel=0.05 * (i + 1), bias=0.1 * i - 0.05,
                                 reference_median_s=1e-5, cv=0.02, n=400))
    return pd.DataFrame(rows)


def test_rotating_axis_says_auto_and_log2():
    fig = plots.plot_iqr_vs_rotating(summary_rows(sizes=(1 << 16,)), size_bytes=1 << 16)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "rotating buffer sets (log2 scale)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "auto (342)"]
    lin = plots.plot_bias(summary_rows(sizes=(1 << 16,), rotating=(1, 2, 4)), size_bytes=1 << 16).axes[0]
    assert lin.get_xlabel() == "rotating buffer sets"


def test_all_sizes_stay_on_the_live_plots():
    fig = plots.plot_iqr_vs_rotating(summary_rows(), size_bytes="all")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["l2-read, 64 KiB", "l2-read, 256 KiB", "none, 64 KiB", "none, 256 KiB"]


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def samples_frame(n_rot=6, flushes=("none", "l2-write"), outliers=3) -> pd.DataFrame:
    import numpy as np

    rng = np.random.default_rng(1)
    rows = []
    for f in flushes:
        for r in range(1, n_rot + 1):
            t = rng.normal(1e-5 * r, 1e-7, 60)
            rows += [dict(kernel="triad", size_bytes=1 << 20, rotating=r, flush=f, time_s=float(v), iteration=i) for i, v in enumerate(t)]
    for i in range(outliers):
        rows.append(dict(kernel="triad", size_bytes=1 << 20, rotating=1, flush="none", time_s=1e-2, iteration=100 + i))
    return pd.DataFrame(rows)


def test_ecdf_legend_does_not_cover_the_curves():
    fig = plots.plot_noise_ecdf(samples_frame())
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend()
    assert len(legend.get_texts()) == 12
    assert not _overlap(legend.get_window_extent(), ax.get_window_extent())


def test_violin_off_scale_note_is_not_under_the_legend():
    fig = plots.plot_noise_violins(samples_frame(n_rot=3))
    fig.canvas.draw()
    ax = fig.axes[0]
    note = next(t for t in ax.texts if "off scale" in t.get_text())
    assert not _overlap(note.get_window_extent(), ax.get_legend().get_window_extent())


def test_sweep_panel_hint_fix_and_images(tmp_path):
    from hipexplore.bench.rotating import auto_count
    from hipexplore.devices import get_device
    from hipexplore.widgets import SweepPanel

    panel = SweepPanel(device="host", kernel="triad", sizes="256KiB", rotating="1, auto", flush=("none",), iterations=6)
    dev = get_device("host")
    sets = auto_count(dev.llc_bytes, 3 * 256 * 1024)
    dev.close()
    assert f"auto = 256 KiB: {sets} buffer sets" in panel.sets_hint.value
    assert f"iterations (6) &lt; {sets} buffer sets" in panel.sets_hint.value
    assert panel.fix_button.layout.display == "" and panel.fix_button.description == f"set iterations to {sets}"
    assert panel.noise_image.layout.display == "none" and panel.detail_image.layout.display == "none"  # no broken icons
    panel.sizes.value = "64KiB, 128KiB"  # the hint follows the inputs
    assert "64 KiB: " in panel.sets_hint.value and "128 KiB: " in panel.sets_hint.value
    panel.fix_button.click()
    assert panel.iterations.value == auto_count(get_device("host").llc_bytes, 3 * 64 * 1024)
    assert panel.fix_button.layout.display == "none" and "&lt;" not in panel.sets_hint.value
    panel.rotating.value, panel.iterations.value = "1, 2", 8
    panel.run(blocking=True)
    assert sorted(panel.summary["size_bytes"].unique()) == [64 << 10, 128 << 10]
    assert panel.noise_image.layout.display == "" and panel.noise_image.value[:4] == b"\x89PNG"
    assert panel.placeholder.layout.display == "none"


# -- units -----------------------------------------------------------------------------------------
def test_summary_table_is_in_percent():
    from hipexplore.report import styled_summary, summary_table

    table = summary_table(summary_rows(sizes=(1 << 16,)).assign(bandwidth_gbs=1.0, n_outliers=0, warning="noisy: a long warning"),
                          size_bytes=1 << 16)
    assert {"iqr_rel_%", "cv_%", "bias_%"} <= set(table.columns) and "iqr_rel" not in table.columns
    assert table["cv_%"].iloc[0] == pytest.approx(2.0)
    html = styled_summary(table).to_html()
    assert "min-width: 16em" in html and "GB/s" in html


def test_cache_stats_is_a_table_and_json_is_data(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "c"))
    (tmp_path / "k.c").write_text("int f(void) { return 1; }\n")
    assert main(["compile", str(tmp_path / "k.c"), "--compiler", "host"]) == 0
    capsys.readouterr()
    assert main(["cache", "stats"]) == 0
    text = capsys.readouterr().out
    assert "{" not in text and "1 entries" in text
    assert any(line.split() == ["host", "1"] for line in text.splitlines())
    assert "compiler  entries" in text
    assert main(["cache", "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["by_compiler"] == {"host": 1}


# -- provenance --------------------------------------------------------------------------------------
def test_host_provenance_explains_driver_and_bandwidth():
    from hipexplore.devices import get_device
    from hipexplore.provenance import collect

    dev = get_device("host")
    try:
        info = collect(dev, command="x", compilers=False)
    finally:
        dev.close()
    assert info["device.driver"].startswith("none (host CPU")
    assert info["device.peak_bandwidth_gbs"].startswith("unknown") and "nan" not in info["device.peak_bandwidth_gbs"].lower()


def test_command_in_a_notebook_and_machine_hash():
    from hipexplore.provenance import default_command, machine_hash

    argv = ["/x/ipykernel_launcher.py", "-f", "/root/.local/share/jupyter/runtime/kernel-1.json"]
    assert default_command(argv, {"JPY_SESSION_NAME": "/w/notebooks/dashboard.ipynb"}) == "notebook /w/notebooks/dashboard.ipynb"
    assert "ipykernel_launcher" not in default_command(argv, {})
    assert default_command(["/usr/bin/hipexplore", "bench", "triad"], {}) == "hipexplore bench triad"
    a = machine_hash("3d1219c7", "vm", 0x1234)
    assert a != machine_hash("9f00aa11", "vm", 0x1234) and a != machine_hash("3d1219c7", "vm", 0x5678)
    assert len(a) == 12 and a == machine_hash("3d1219c7", "vm", 0x1234)


def test_recorded_data_from_another_revision_is_flagged():
    from hipexplore.report import provenance_table

    table = provenance_table({"git_revision": "13b4955aaaa"}, {"git_revision": "5365a97bbbb+dirty"})
    note = table.loc["recorded.revision", "recorded data"]
    assert "DIFFERENT REVISION" in note and "5365a97" in note and "13b4955" in note
    assert table.index[0] == "recorded.revision"
    same = provenance_table({"git_revision": "13b4955aaaa"}, {"git_revision": "13b4955aaaa+dirty"})
    assert "recorded.revision" not in same.index


def test_several_sweeps_note_is_one_readable_sentence(tmp_path):
    from hipexplore.bench import sweep
    from hipexplore.report import load_recorded

    for i in range(3):
        sweep("triad", ["4KiB"], [1] * 1 if i else [1, 2], ["none"], device="host", iterations=4, progress=False,
              reference=False, out=tmp_path / f"s{i}.parquet")
    rec = load_recorded(tmp_path)
    assert len(rec.notes) == 1 and "holds 3 sweeps; showing run" in rec.notes[0] and "(2 configurations, the most)" in rec.notes[0]
    assert rec.notes[0].count("configurations") == 1


def test_info_and_readme_name_the_crashing_targets(capsys):
    from conftest import require_compiler

    from hipexplore.compile.registry import get_compiler

    require_compiler("hiprtc")
    crashing = get_compiler("hiprtc").crashing_targets()
    assert crashing
    page = (REPO / "docs" / "guide" / "what-ran-where.md").read_text()  # moved there from the README
    sentence = page.split("ROCm 5.2's comgr does not know", 1)[1].split("and aborts", 1)[0]
    assert [t.strip() for t in sentence.split("(")[0].split(",")] == list(crashing)
    assert main(["info"]) == 0
    assert f"crashing targets: {', '.join(crashing)}" in capsys.readouterr().out


# -- the report's replay compiler on a GPU machine ----------------------------------------------------
@pytest.mark.parametrize("props, expected", [
    ({"kind": "cuda", "target": "sm_90"}, ("nvrtc", "sm_90")),
    ({"kind": "cuda", "target": "sm_100"}, ("nvrtc", "sm_100")),
    ({"kind": "hip", "target": "gfx942:sramecc+:xnack-"}, ("hiprtc", "gfx942")),
    ({"kind": "host", "target": "host"}, ("host", "host")),
    ({}, ("host", "host")),
])
def test_replay_compiler_follows_the_device(props, expected):
    from hipexplore.report.replay import replay_compiler_for, resolve_compiler

    assert replay_compiler_for(props) == expected
    assert resolve_compiler("auto", "auto", props) == expected
    assert resolve_compiler("host", "auto", props) == ("host", "host")
    assert resolve_compiler("nvrtc", "auto", {"kind": "host"}) == ("nvrtc", "sm_90")


def test_dashboard_defaults_to_auto_compiler():
    from hipexplore import report

    params = report.notebook_parameters("dashboard")
    assert params["compiler"].strip("'\"") == "auto" and params["target"].strip("'\"") == "auto"
