"""No test runs longer than its own bound (issue 50 item 2): a hang fails in seconds, naming the test.

Two kinds of hang, each mounted in a child pytest session that loads this suite's conftest:

* one in Python (a loop): pytest-timeout's signal ends the test at its bound, a failure naming it,
  and the session goes on to the next test;
* one in a C call that holds the GIL (a second ``pthread_mutex_lock`` of a held mutex through
  ``ctypes.PyDLL`` here: no CPU spent, and no signal ends it; 9**9**9 with the bound on
  ``**`` removed from kernels/geometry.py, in the suite): no signal handler and no Python thread can
  run, so conftest's faulthandler watchdog ends the process ``HARD_MARGIN_S`` after the bound, with
  the test's frame in the traceback it writes (under xdist the controller names the test its
  worker crashed in, and goes on).

And the suite's own settings: the default bound in pyproject.toml suits a loaded 2-core host, and
the tests of bounds carry tight ones of their own.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import conftest
from suite.test_hermetic_home import user_env

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent

HANGS = """\
import ctypes
import pytest

@pytest.mark.timeout(2)
def test_loops_in_python():
    while True:
        pass

def test_after_the_loop():
    pass

@pytest.mark.timeout(2)
def test_hangs_in_c_holding_the_gil():
    libc, mutex = ctypes.PyDLL(None), ctypes.create_string_buffer(64)  # zeroed: a default mutex
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)  # locked already: waits forever, the GIL held (PyDLL keeps it)

def test_never_reached():
    pass
"""


@pytest.mark.timeout(240)
def test_a_hang_in_python_fails_at_its_bound_and_one_in_c_ends_the_process_soon_after(tmp_path):
    test = tmp_path / "test_hangs.py"
    test.write_text(HANGS)
    (tmp_path / "home").mkdir()
    env = user_env(tmp_path / "home", PYTHONPATH=str(TESTS))
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-v",
            "-p",
            "no:cacheprovider",
            "-p",
            "conftest",
            "--rootdir",
            str(tmp_path),
            "-o",
            "timeout=600",
            str(test),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
    )
    spent = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    # the Python loop: a failure naming the test (pytest-timeout's, at 2 s), and the session went on
    assert "test_hangs.py::test_loops_in_python FAILED" in out and "test_hangs.py::test_after_the_loop PASSED" in out, (
        out[-4000:]
    )
    # the C call: the process ended, the traceback through the test's own frame
    assert proc.returncode != 0 and "Timeout (0:00:" in out, out[-4000:]
    assert f'File "{test}", line 16 in test_hangs_in_c_holding_the_gil' in out, out[-4000:]
    assert "test_never_reached" not in out
    # in seconds: the bound plus the margin, and the interpreter's start-up on a loaded host
    assert spent < 2 + 2 + conftest.HARD_MARGIN_S + 90, spent


@pytest.mark.timeout(30)
def test_the_default_bound_suits_a_loaded_host_and_each_test_reads_its_own():
    ini = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    # generous: the slowest fixture took 93 s at load ~4 (BENCHMARKS.md "Test suite"); at load 20 on
    # two cores several times that, and still a bound (CI's job would otherwise sit until killed)
    assert 300 <= int(ini["timeout"]) <= 900
    assert any(
        d.startswith("pytest-timeout")
        for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    )

    class Item:
        def __init__(self, mark, ini_value):
            self.mark = mark
            self.config = type("C", (), {"getini": staticmethod(lambda name: ini_value)})()

        def get_closest_marker(self, name):
            return self.mark

    assert conftest.bound_of(Item(pytest.mark.timeout(15).mark, "600")) == 15
    assert conftest.bound_of(Item(pytest.mark.timeout(timeout=7).mark, "600")) == 7
    assert conftest.bound_of(Item(None, "600")) == 600
    assert conftest.bound_of(Item(None, "")) == 0


#: tests of a bound the code keeps (on work, nesting, size): without the bound each would run for
#: minutes, so each carries a tight bound of its own (its mark, or its module's pytestmark)
BOUND_TESTS = {
    "tests/hostile/test_hostile_inputs.py": (
        "test_every_hostile_expression_is_refused_in_every_place_in_well_under_a_second",
        "test_hostile_expressions_through_the_cli_in_one_interpreter",
    ),
    "tests/security/test_security_report.py": (
        "test_a_yaml_alias_bomb_is_refused_at_once",
        "test_other_oversized_parameters_files_are_refused",
    ),
    "tests/kernels/test_geometry.py": ("test_bad_expressions_are_config_errors", "test_bad_values_are_config_errors"),
    "tests/test_untrusted.py": ("test_load_json_refuses_deep_nesting_in_linear_time_without_recursion",),
}


def _timeout_of(node: ast.expr) -> float | None:
    """N of a ``pytest.mark.timeout(N, ...)`` expression, else None."""
    if (
        isinstance(node, ast.Call)
        and getattr(node.func, "attr", "") == "timeout"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return float(node.args[0].value)
    return None


@pytest.mark.timeout(30)
def test_the_tests_of_bounds_carry_tight_bounds_of_their_own():
    """Each listed test's own ``@pytest.mark.timeout(N)`` (else its module's ``pytestmark``), N <= 90 s."""
    for path, names in BOUND_TESTS.items():
        tree = ast.parse((REPO / path).read_text())
        module_bound = next(
            (
                _timeout_of(n.value)
                for n in tree.body
                if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
            ),
            None,
        )
        for name in names:
            fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
            assert fn is not None, f"{path}::{name} is gone: update BOUND_TESTS"
            own = [b for b in map(_timeout_of, fn.decorator_list) if b is not None]
            bound = own[0] if own else module_bound
            assert bound is not None and 0 < bound <= 90, (path, name, bound)
