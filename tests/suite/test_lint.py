"""``ruff check`` over the code base, with the settings in pyproject.toml ([tool.ruff], [tool.ruff.lint]):
an unused import, an undefined name or a left-over ``breakpoint()`` fails the suite, naming each finding.

Why a test: CI runs the suite (``.ci/run``), so a check the suite runs is one CI runs; ruff comes with
the dev extra (its version pinned there). ``ruff format --check`` runs beside it ([tool.ruff.format]):
the code base was reformatted once, at 120 columns (2026-12-07), and a file the formatter would change
fails the suite, naming it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PATHS = ("hipexplore", "tests", "benchmarks", "scripts")

pytestmark = pytest.mark.timeout(180)


def ruff() -> str:
    path = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if path is None:
        from conftest import missing

        missing("tool ruff", "the dev extra installs it (./setup.sh --dev)")
    return path


def check(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [ruff(), "check", "--no-cache", "--output-format", "concise", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=150,
    )


def test_the_code_base_passes_ruff_check():
    got = check(*PATHS)
    assert got.returncode == 0, f"ruff check {' '.join(PATHS)} found:\n{got.stdout}{got.stderr}"


def test_the_check_runs_with_the_projects_settings_and_fails_on_a_finding(tmp_path):
    """The check is live and reads pyproject.toml: a file with an unused import and an undefined name
    beside a copy of the settings fails, naming both; the 120-column setting is the one in force."""
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import os\n\n\ndef f():\n    return undefined_name\n")
    got = check("bad.py", cwd=tmp_path)
    assert got.returncode == 1 and "F401" in got.stdout and "F821" in got.stdout, got.stdout + got.stderr
    shown = subprocess.run(
        [ruff(), "check", "--show-settings", "bad.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert "line_length = 120" in shown.stdout, shown.stdout[-2000:]


def fmt(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [ruff(), "format", "--no-cache", "--check", *args], cwd=cwd, capture_output=True, text=True, timeout=150
    )


def test_the_code_base_is_ruff_formatted():
    got = fmt(*PATHS)
    assert got.returncode == 0, (
        f"ruff format --check {' '.join(PATHS)}: run `ruff format` on:\n{got.stdout}{got.stderr}"
    )


def test_the_format_check_fails_on_a_file_the_formatter_would_change(tmp_path):
    """The format check is live and reads the project's settings: single quotes and a cramped call
    fail it, naming the file; the same code as the formatter writes it passes."""
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("x = {'a':1}\nprint( x )\n")
    got = fmt("bad.py", cwd=tmp_path)
    assert got.returncode == 1 and "bad.py" in got.stdout, got.stdout + got.stderr
    (tmp_path / "bad.py").write_text('x = {"a": 1}\nprint(x)\n')
    assert fmt("bad.py", cwd=tmp_path).returncode == 0
