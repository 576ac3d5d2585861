"""``python -m hipexplore`` (hipexplore/__main__.py): the command line as a module, its exit status
the process's. Real processes: the interpreter running the package as installed here."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hipexplore


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipexplore", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.timeout(150)
def test_version_and_help_exit_0():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"hipexplore {hipexplore.__version__}"
    proc = run("--help")
    assert proc.returncode == 0
    for command in ("bench", "compile", "compare", "info", "report"):
        assert command in proc.stdout


@pytest.mark.timeout(150)
def test_a_refused_command_line_exits_2_with_one_line():
    proc = run()
    assert proc.returncode == 2 and "the following arguments are required: COMMAND" in proc.stderr
    proc = run("compare", "a.parquet", "b.parquet", "c.parquet")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "hipexplore compare: error: compare takes one or two runs; got 3: ['a.parquet', 'b.parquet', 'c.parquet']"
    ]


@pytest.mark.timeout(150)
def test_the_main_module_is_this_checkout():
    proc = subprocess.run(
        [sys.executable, "-c", "import hipexplore.__main__"], capture_output=True, text=True, timeout=120
    )
    # importing it runs main() with no command: the usage error, exit 2 (sys.exit of main's status)
    assert proc.returncode == 2 and "required: COMMAND" in proc.stderr
