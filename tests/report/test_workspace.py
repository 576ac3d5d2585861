"""hipexplore/report/workspace.py and ``hipexplore lab``'s choices: the user's workspace copies (made
from the scripts, never overwritten, never the shipped folder), the kernelspec of the running
environment, and ``--`` handing JupyterLab its own options. JupyterLab itself runs in
tests/e2e/test_first_run_cli.py, tests/browser/test_dashboard_in_lab.py (a clone, in chromium) and tests/e2e/test_install.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from hipexplore.errors import ConfigError
from hipexplore.report import workspace

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*argv: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hipexplore", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_workspace_gets_copies_and_keeps_the_users_own(tmp_path):
    ws = tmp_path / "ws"
    words = workspace.write_workspace(ws)
    assert words == [f"{f} (new)" for f in workspace.NOTEBOOKS.values()]
    for name, file in workspace.NOTEBOOKS.items():
        nb = nbformat.read(str(ws / file), as_version=4)
        assert nb.metadata["kernelspec"]["name"] == "hipexplore"
        # the language too: where no 'hipexplore' kernel is installed JupyterLab then starts the one Python
        # kernel instead of asking "Select Kernel" (it reads language_info, not the kernelspec's language)
        assert nb.metadata["language_info"]["name"] == "python"
    mine = ws / "dashboard.ipynb"
    nb = nbformat.read(str(mine), as_version=4)
    nb.cells[0].source += "\nmy own note"
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", text="my run\n")] if nb.cells[2].cell_type == "code" else []
    nbformat.write(nb, str(mine))
    text = mine.read_text()
    again = workspace.write_workspace(ws)
    assert mine.read_text() == text  # the user's copy, edits and outputs, is never replaced
    assert (
        "dashboard.ipynb (yours, kept as it is: its cells differ from the shipped ones, it holds outputs of an "
        "earlier run; move it away to get the shipped one)"
    ) in again
    assert "review.ipynb (kept)" in again


@pytest.mark.parametrize("where", ["shipped", "inside", "package"])
def test_workspace_is_never_the_shipped_notebooks_or_the_package(where, tmp_path):
    folder = {
        "shipped": workspace.notebooks_dir(),
        "inside": workspace.notebooks_dir() / "runs",
        "package": Path(workspace.__file__).resolve().parents[1] / "my-notebooks",
    }[where]
    with pytest.raises(ConfigError, match="must be a folder of your own"):
        workspace.write_workspace(folder)
    assert not (folder.exists() and where != "shipped")
    assert not list(workspace.notebooks_dir().glob("*.ipynb.tmp"))


def test_kernelspec_is_this_environment_first_on_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    env = workspace.kernel_environment({"JUPYTER_PATH": "/somewhere/else"})
    first, rest = env["JUPYTER_PATH"].split(os.pathsep)
    assert rest == "/somewhere/else" and Path(first).is_relative_to(tmp_path / "data" / "hipexplore")
    spec = json.loads((Path(first) / "kernels" / "hipexplore" / "kernel.json").read_text())
    assert spec["argv"][:4] == [sys.executable, "-P", "-m", "ipykernel_launcher"]
    assert spec["display_name"] == workspace.kernel_display_name()
    assert workspace.kernel_display_name(os.path.expanduser("~/venvs/hx")) == "Python (hipexplore: ~/venvs/hx)"
    assert workspace.kernel_display_name("/opt/hx") == "Python (hipexplore: /opt/hx)"
    other = workspace.kernel_environment({})["JUPYTER_PATH"]
    assert other == first  # the same folder for the same environment


def test_lab_passes_everything_after_the_double_dash_to_jupyterlab(tmp_path):
    """`hipexplore lab -- --version`: JupyterLab's own option (it prints its version and exits),
    not hipexplore's PATH; with no PATH the workspace copies are what would be opened."""
    res = run_cli("lab", "--", "--version", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip()[:1].isdigit(), res.stdout
    ws = Path(os.environ["XDG_DATA_HOME"]) / "hipexplore" / "workspace"
    assert f"copies in {ws}" in res.stderr and (ws / "dashboard.ipynb").is_file()
    assert "kernel 'hipexplore' is this Python" in res.stderr


def test_lab_names_a_hipexplore_kernel_whose_python_is_gone(tmp_path):
    """Issue 49: the per-user 'hipexplore' kernel that setup.sh installs (each clone's setup rewrites it)
    outlives a removed environment; a plain `jupyter lab` then says "Error Starting Kernel" and asks
    "Select Kernel". `hipexplore lab` puts its own first; it says so, and how to repair the other."""
    data = tmp_path / "jupyter-data"
    spec = data / "kernels" / "hipexplore" / "kernel.json"
    spec.parent.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_DATA_DIR": str(data)}
    env.pop("JUPYTER_PATH", None)
    lab = [sys.executable, "-m", "hipexplore", "lab", "--workspace", str(tmp_path / "ws"), "--", "--version"]
    notes = {}
    for python in ("/gone/venv/bin/python", sys.executable):
        spec.write_text(
            json.dumps(
                {
                    "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "Python (hipexplore)",
                    "language": "python",
                }
            )
        )
        res = subprocess.run(lab, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
        assert res.returncode == 0, res.stderr
        notes[python] = [line for line in res.stderr.splitlines() if line.startswith("hipexplore lab: note: ")]
    assert not notes[sys.executable]
    assert len(notes["/gone/venv/bin/python"]) == 1, notes
    assert (
        f"kernel 'hipexplore' of a plain `jupyter lab` ({spec.parent}) runs /gone/venv/bin/python, which no longer "
        f"exists"
    ) in notes["/gone/venv/bin/python"][0]


def test_lab_refuses_a_workspace_beside_a_path_of_ones_own_and_a_missing_path(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    both = run_cli("lab", str(mine), "--workspace", str(tmp_path / "ws"), cwd=tmp_path)
    assert both.returncode == 2 and "give one or the other" in both.stderr and len(both.stderr.splitlines()) == 1
    gone = run_cli("lab", "nope", cwd=tmp_path)
    assert gone.returncode == 2 and "path 'nope' does not exist" in gone.stderr
    assert not (tmp_path / "ws").exists()


def test_lab_on_the_shipped_folder_opens_the_workspace_copy():
    from hipexplore.cli.lab_cmd import target

    opened, line = target(str(workspace.notebooks_dir() / "dashboard.py"), None)
    assert opened == workspace.default_workspace() / "dashboard.ipynb" and "copies in" in line
    opened, _ = target(str(ROOT / "notebooks"), None)
    assert opened == workspace.default_workspace()


def test_notebooks_and_report_ask_for_the_hipexplore_kernel():
    import jupytext

    from hipexplore import report

    assert report.KERNEL_NAME == "hipexplore"
    for py in (ROOT / "notebooks").glob("*.py"):
        assert jupytext.read(py).metadata["kernelspec"]["name"] == "hipexplore", py


@pytest.mark.parametrize("forge", ["outputs", "kernelspec", "metadata"])
def test_a_copy_is_kept_only_when_the_whole_notebook_is_the_shipped_one(tmp_path, forge):
    """The cells alone used to decide "kept": a forged output (a figure saying the cache is verified)
    or another kernelspec passed without a word. Now only the whole notebook is "kept"; anything
    else is named, and the file is left as it is."""
    ws = tmp_path / "ws"
    workspace.write_workspace(ws)
    path = ws / "dashboard.ipynb"
    nb = json.loads(path.read_text())
    if forge == "outputs":
        code = next(c for c in nb["cells"] if c["cell_type"] == "code")
        code["outputs"] = [
            {"output_type": "stream", "name": "stdout", "text": "hipexplore: cache verified, all results OK\n"}
        ]
    elif forge == "kernelspec":
        nb["metadata"]["kernelspec"] = {"name": "evil", "display_name": "Python (hipexplore)", "language": "python"}
    else:
        nb["metadata"]["authors"] = [{"name": "someone else"}]
    path.write_text(json.dumps(nb))
    text = path.read_text()
    words = dict(w.split(" ", 1) for w in workspace.write_workspace(ws))
    assert path.read_text() == text
    said = {
        "outputs": "it holds outputs of an earlier run",
        "kernelspec": "its kernel is 'evil', not 'hipexplore'",
        "metadata": "its notebook metadata differ",
    }[forge]
    assert words["dashboard.ipynb"] == f"(yours, kept as it is: {said}; move it away to get the shipped one)"
    assert words["review.ipynb"] == "(kept)"


def test_a_link_or_a_folder_at_a_notebook_name_is_refused_before_anything_is_made(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o700)
    target = tmp_path / "mine.ipynb"
    target.write_text("my own notebook\n")
    (ws / "review.ipynb").symlink_to(target)
    with pytest.raises(
        ConfigError, match=r"review.ipynb there is a symbolic link; hipexplore neither opens nor replaces it"
    ):
        workspace.write_workspace(ws)
    assert sorted(p.name for p in ws.iterdir()) == ["review.ipynb"] and target.read_text() == "my own notebook\n"
    (ws / "review.ipynb").unlink()
    (ws / "review.ipynb").mkdir()
    with pytest.raises(ConfigError, match=r"review.ipynb there is not a regular file"):
        workspace.write_workspace(ws)


@pytest.mark.parametrize("mode", [0o777, 0o757, 0o1777])
def test_a_workspace_others_may_write_is_refused(tmp_path, mode):
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chmod(ws, mode)
    with pytest.raises(ConfigError, match=r"writable by every user .*refused .*chmod go-w"):
        workspace.write_workspace(ws)
    assert list(ws.iterdir()) == []


def test_a_workspace_in_a_folder_others_may_rename_it_in_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # not sticky: anyone may move ws away and put theirs in its place
    (shared / "ws").mkdir(mode=0o700)
    with pytest.raises(ConfigError, match=r"others could rename it and put theirs in its place"):
        workspace.write_workspace(shared / "ws")
    os.chmod(shared, 0o1777)  # sticky, like /tmp: only its owner may rename it
    assert workspace.write_workspace(shared / "ws")[0] == "compile_cache.ipynb (new)"


def test_a_new_workspace_is_private(tmp_path):
    workspace.write_workspace(tmp_path / "a" / "ws")
    assert (tmp_path / "a" / "ws").stat().st_mode & 0o777 == 0o700
