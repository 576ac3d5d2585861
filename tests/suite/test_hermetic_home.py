"""The suite's own hygiene (issue 26.7 and 26.8): every test runs in a temporary HOME and leaves the
user's HOME as it found it; a missing requirement skips, or fails by name under the CI flags, and
only through conftest's one helper (``need``).

The HOME tests run real parts of the suite in a subprocess whose HOME is a fake one seeded with a
user's state (a hipexplore cache entry, IPython and Jupyter folders, npm logs, a chromium profile),
and compare that fake HOME before and after: names, sizes and modification times.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from conftest import COMPILERS, GPU, HOME_TREE, hermetic_paths, need_module

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent

#: Parts of the suite that wrote to the user's HOME before issue 26.7 (each named by what it wrote):
#: ~/.cache/hipexplore (a host sweep through the default compile cache), ~/.npm/_logs and the
#: Jupyter folders (`hipexplore lab` starts JupyterLab, which runs `npm prefix`), ~/.ipython and the
#: kernel's runtime files (a report notebook run by papermill), ~/.config/chromium and ~/.cache/dconf
#: (chromium started by Playwright, as every browser test starts it).
REPRESENTATIVE = (
    "tests/bench/test_floor.py::test_a_host_sweep_leaves_the_floor_out_by_default_and_passes_merge_it",
    "tests/e2e/test_first_run_cli.py::test_hipexplore_lab_starts_jupyterlab_as_this_user",
    "tests/report/test_dashboard.py::test_a_failing_notebook_names_the_error_and_keeps_the_notebook",
    "tests/browser/test_dashboard_in_lab.py::test_chromium_starts_with_the_suites_options_and_renders_a_page",
)


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """This environment as a user's shell would have it, with ``home`` as HOME: without the
    temporary tree this session put in place (its HOME, XDG, IPython, Jupyter, npm, cache variables)."""
    ours = set(hermetic_paths(HOME_TREE)) | {conftest.REAL_HOME_VAR, conftest.TREE_VAR}
    env = {k: v for k, v in os.environ.items() if k not in ours}
    env.update(HOME=str(home), **extra)
    return env


def seed_home(home: Path) -> None:
    """A user's HOME with the state the suite used to read and rewrite."""
    files = {
        ".cache/hipexplore/v1/ab/entry-of-the-user.hxc": b"HXC1 the user's own compiled kernel",
        ".ipython/profile_default/ipython_config.py": b"# the user's IPython settings\n",
        ".jupyter/jupyter_server_config.json": b"{}\n",
        ".local/share/jupyter/kernels/hipexplore/kernel.json": json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python (hipexplore)",
                "language": "python",
            }
        ).encode(),
        ".npm/_logs/2026-01-01T00_00_00_000Z-debug-0.log": b"0 verbose cli an old log\n",
        ".npmrc": b"fund=false\n",
        ".config/chromium/Default/Preferences": b"{}",
        ".cache/dconf/user": b"\0",
    }
    for rel, data in files.items():
        p = home / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.utime(p, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))  # long ago: any rewrite shows


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under ``root``: (mode, size, mtime in ns); folders too (a file added or removed
    changes its folder's mtime)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_size if not os.path.isdir(p) else 0, st.st_mtime_ns)
    st = os.lstat(root)
    out["."] = (st.st_mode, 0, st.st_mtime_ns)
    return out


def differences(before: dict, after: dict) -> list[str]:
    return (
        [f"added {p}" for p in sorted(set(after) - set(before))]
        + [f"removed {p}" for p in sorted(set(before) - set(after))]
        + [f"changed {p}: {before[p]} -> {after[p]}" for p in sorted(set(before) & set(after)) if before[p] != after[p]]
    )


def run_pytest(
    args: list[str], env: dict[str, str], cwd: Path = REPO, timeout: int = 540
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- 26.7: a temporary HOME -----------------------------------------------------------------------------
def test_every_per_user_location_of_this_session_and_its_children_is_in_the_temporary_tree():
    """What the libraries the suite uses resolve "the user's folder" to, here and in a process the
    tests start (which inherits the environment): all inside the session's temporary tree."""
    probe = r"""
import json, os, sys
out = {"home": os.path.expanduser("~")}
import platformdirs
out["platformdirs cache"] = platformdirs.user_cache_dir("hipexplore")
out["platformdirs config"] = platformdirs.user_config_dir("x")
from hipexplore.compile.cache import default_cache_dir
out["hipexplore cache"] = str(default_cache_dir())
from jupyter_core import paths
out["jupyter data"] = paths.jupyter_data_dir()
out["jupyter config"] = paths.jupyter_config_dir()
out["jupyter runtime"] = paths.jupyter_runtime_dir()
from IPython.paths import get_ipython_dir
out["ipython"] = get_ipython_dir()
import matplotlib
out["matplotlib config"] = matplotlib.get_configdir()
out["matplotlib cache"] = matplotlib.get_cachedir()
print(json.dumps(out))
"""
    child = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert child.returncode == 0, child.stderr[-2000:]
    where = json.loads(child.stdout)
    tree = os.path.realpath(HOME_TREE)
    outside = {k: v for k, v in where.items() if not os.path.realpath(v).startswith(tree + os.sep)}
    assert not outside, f"outside the temporary tree {tree}: {outside}"
    assert os.path.realpath(os.path.expanduser("~")) == os.path.join(tree, "home")
    assert conftest.REAL_HOME != Path(os.environ["HOME"])
    for name in os.environ:  # the user's own hipexplore preferences are dropped (a team server, a shared cache...)
        if name.startswith("HIPEXPLORE_") and not name.startswith("HIPEXPLORE_TEST_"):
            assert (
                name in conftest.KEPT_SETTINGS or name in hermetic_paths(HOME_TREE) or name in conftest.suite_settings()
            ), name


def test_a_representative_run_leaves_a_users_home_as_it_found_it(tmp_path):
    """The parts of the suite that wrote to ~/.cache/hipexplore, ~/.npm/_logs, ~/.config/chromium,
    ~/.cache/dconf, ~/.ipython and the Jupyter folders, run in a subprocess whose HOME is a fake,
    seeded one: not a name, size or time under it changes (and the subprocess's own end-of-session
    check of its HOME passes)."""
    home = tmp_path / "home"
    seed_home(home)
    before = snapshot(home)
    proc = run_pytest(list(REPRESENTATIVE), user_env(home))
    after = snapshot(home)
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, out
    assert "skipped" not in proc.stdout.splitlines()[-1] or not conftest.required(), out  # under the CI flag all ran
    changed = differences(before, after)
    assert not changed, "\n".join(changed[:40])


def test_the_end_of_session_check_fails_a_session_that_writes_to_home(tmp_path):
    """The guard of the whole suite (conftest.pytest_sessionfinish): a test that writes to the HOME
    the session found fails the session under CI (CI set, or the README's HIPEXPLORE_REQUIRE_COMPILERS=1),
    naming the path and why it matters, although every test passed; for a person (neither set) or
    with HIPEXPLORE_TEST_HOME_CHECK=warn it only says so."""
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    test = tmp_path / "test_writes_home.py"
    test.write_text(
        "import os\n"
        "from pathlib import Path\n"
        "def test_writes():\n"
        "    Path(os.environ['HIPEXPLORE_TEST_REAL_HOME'], '.cache', 'written-by-a-test').write_text('x')\n"
    )
    args = ["-p", "conftest", "--rootdir", str(tmp_path), str(test)]
    person = {
        k: v
        for k, v in user_env(home, PYTHONPATH=str(TESTS)).items()
        if k not in ("CI", "HIPEXPLORE_REQUIRE_COMPILERS", "HIPEXPLORE_TEST_HOME_CHECK")
    }
    for env in (
        {**person, "CI": "true"},
        {**person, "HIPEXPLORE_REQUIRE_COMPILERS": "1"},
        {**person, "HIPEXPLORE_TEST_HOME_CHECK": "fail"},
    ):  # CI: the session fails although every test passed
        failed = run_pytest(args, env, cwd=tmp_path)
        assert failed.returncode == 1 and "1 passed" in failed.stdout, failed.stdout[-3000:]
        assert "changed during the test session" in failed.stdout and ".cache/written-by-a-test" in failed.stdout
        assert "Why it matters" in failed.stdout and "this fails the session under CI" in failed.stdout
        (home / ".cache" / "written-by-a-test").unlink()
    for env in (person, {**person, "CI": "true", "HIPEXPLORE_TEST_HOME_CHECK": "warn"}):  # a person: said, not failed
        warned = run_pytest(args, env, cwd=tmp_path)
        assert warned.returncode == 0 and ".cache/written-by-a-test" in warned.stdout, warned.stdout[-3000:]
        assert "a warning only (no CI)" in warned.stdout and "HIPEXPLORE_TEST_HOME_EXCLUDE" in warned.stdout
        (home / ".cache" / "written-by-a-test").unlink()


def test_the_end_of_session_check_holds_when_the_tests_run_in_parallel(tmp_path):
    """Under pytest-xdist (the README's ``-n auto``) each worker loads conftest with the controller's
    temporary HOME as the one it found; the controller, which found the real one, checks it over
    the whole run: a worker's test that writes there still fails the session under CI."""
    need_module("xdist", hint="pytest-xdist: setup.sh --dev installs it (the dev extra)")
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    test = tmp_path / "test_writes_home_in_a_worker.py"
    test.write_text(
        "import os\n"
        "from pathlib import Path\n"
        "def test_in_a_worker():\n"
        "    assert os.environ.get('PYTEST_XDIST_WORKER')\n"
        "    Path(os.environ['HX_TEST_FAKE_REAL_HOME'], '.cache', 'written-by-a-worker').write_text('x')\n"
        "def test_another():\n"
        "    pass\n"
    )
    args = ["-p", "conftest", "-n", "2", "--dist", "loadgroup", "--rootdir", str(tmp_path), str(test)]
    person = {
        k: v
        for k, v in user_env(
            home,
            PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])),
            HX_TEST_FAKE_REAL_HOME=str(home),
        ).items()
        if k not in ("CI", "HIPEXPLORE_REQUIRE_COMPILERS", "HIPEXPLORE_TEST_HOME_CHECK", "PYTEST_XDIST_WORKER")
    }
    failed = run_pytest(args, {**person, "CI": "true"}, cwd=tmp_path)
    assert failed.returncode == 1 and "2 passed" in failed.stdout, failed.stdout[-3000:]
    assert "changed during the test session" in failed.stdout and ".cache/written-by-a-worker" in failed.stdout
    (home / ".cache" / "written-by-a-worker").unlink()
    clean = tmp_path / "test_clean.py"
    clean.write_text("def test_a():\n    pass\ndef test_b():\n    pass\n")
    passed = run_pytest(args[:-1] + [str(clean)], {**person, "CI": "true"}, cwd=tmp_path)
    assert passed.returncode == 0 and "2 passed" in passed.stdout, passed.stdout[-3000:]


# -- 26.8: skips go through conftest.need, which the CI flags turn into failures ------------------------
REQUIREMENTS = """\
import sys
from conftest import NOT_REQUIRED, need, need_module, need_tool

def test_tool():
    need_tool("hx-no-such-tool-26")

def test_module():
    need_module("hx_no_such_module_26")

def test_torch():
    sys.modules["torch"] = None  # import torch -> ImportError, wherever torch is installed
    need_module("torch")

def test_cuobjdump(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent-26")
    need_tool("cuobjdump")

def test_not_applicable():
    need("a machine without a GPU", "a GPU is here", flag=NOT_REQUIRED)
"""


def _outcomes(xml: Path) -> dict[str, tuple[str, str]]:
    """Per test of a junit XML report: (passed / failed / skipped / error, its message)."""
    import xml.etree.ElementTree as ET

    got = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "skipped", "error"):
                outcome, message = {"failure": "failed"}.get(child.tag, child.tag), child.get("message", "")
        got[case.get("name")] = (outcome, message)
    return got


@pytest.mark.parametrize(
    "flags, failing",
    [
        ({}, set()),
        ({COMPILERS: "1"}, {"test_tool", "test_module"}),
        ({GPU: "1"}, {"test_torch", "test_cuobjdump"}),
        ({COMPILERS: "1", GPU: "1"}, {"test_tool", "test_module", "test_torch", "test_cuobjdump"}),
    ],
)
def test_the_ci_flags_turn_a_missing_requirement_into_a_failure_naming_it(tmp_path, flags, failing):
    """A nonexistent tool and module skip without a flag and fail by name under
    HIPEXPLORE_REQUIRE_COMPILERS=1; torch and cuobjdump (the GPU job's, conftest.GPU_ONLY) fail under
    HIPEXPLORE_REQUIRE_GPU=1 only; a condition no machine can be asked for skips under every flag."""
    test = tmp_path / "test_requirements.py"
    test.write_text(REQUIREMENTS)
    env = user_env(tmp_path / "home", PYTHONPATH=str(TESTS))
    for flag in (COMPILERS, GPU):
        env.pop(flag, None)
    env.update(flags)
    (tmp_path / "home").mkdir()
    xml = tmp_path / "report.xml"
    proc = run_pytest(["-p", "conftest", "--rootdir", str(tmp_path), f"--junitxml={xml}", str(test)], env, cwd=tmp_path)
    got = _outcomes(xml)
    assert set(got) == {"test_tool", "test_module", "test_torch", "test_cuobjdump", "test_not_applicable"}, proc.stdout[
        -3000:
    ]
    assert {n for n, (o, _) in got.items() if o == "failed"} == failing, got
    assert {n for n, (o, _) in got.items() if o == "skipped"} == set(got) - failing, got
    assert proc.returncode == (1 if failing else 0), proc.stdout[-3000:]
    named = {
        "test_tool": "tool hx-no-such-tool-26",
        "test_module": "module hx_no_such_module_26",
        "test_torch": "module torch",
        "test_cuobjdump": "tool cuobjdump",
    }
    for name, what in named.items():
        flag = GPU if name in ("test_torch", "test_cuobjdump") else COMPILERS
        want = f"{what} required ({flag}=1) but unavailable" if name in failing else f"{what} unavailable: "
        assert want in got[name][1], (name, got[name])
    assert (
        "a machine without a GPU unavailable (no CI flag can require it): a GPU is here"
        in got["test_not_applicable"][1]
    )


#: The calls that skip a test without asking conftest.need (which no CI flag would reach).
_BARE = {("pytest", "skip"), ("pytest", "importorskip"), ("pytest", "xfail"), ("skip", None), ("importorskip", None)}
_BARE_MARKS = {"skip", "skipif", "xfail"}


def bare_skips(path: Path) -> list[str]:
    """``file:line: code`` of each bare skip in ``path``: pytest.skip / importorskip / xfail calls and
    skip / skipif / xfail marks (``pytest.skip.Exception`` in an ``except`` is not a skip)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            key = (
                (f.value.id, f.attr)
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                else (f.id, None)
                if isinstance(f, ast.Name)
                else None
            )
            if key in _BARE:
                found.append(node)
        if (
            isinstance(node, ast.Attribute)
            and node.attr in _BARE_MARKS
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark"
        ):
            found.append(node)
    lines = path.read_text().splitlines()
    return [f"{path.name}:{n.lineno}: {lines[n.lineno - 1].strip()}" for n in sorted(found, key=lambda n: n.lineno)]


def test_no_test_skips_past_the_ci_flags():
    """Every skip in tests/ goes through conftest.need (need_tool, need_module, require_compiler, the
    cuda fixture...): a bare ``pytest.skip``, ``importorskip`` or skip mark would skip under the CI
    flags too (issue 26.8: test_compilers' GPU test did, and its SASS check silently needed cuobjdump)."""
    bare = [b for p in sorted(TESTS.rglob("*.py")) if p.name != "conftest.py" for b in bare_skips(p)]
    assert not bare, "skips that no CI flag reaches; use conftest.need (see REQUIREMENT_RULES):\n" + "\n".join(bare)


def test_the_bare_skip_finder_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import pytest\nfrom pytest import skip\n"
        "mod = pytest.importorskip('x')\n"
        "@pytest.mark.skipif(True, reason='r')\ndef test_a():\n    pytest.skip('no')\n"
        "def test_b():\n    skip('no')\n"
        "def test_c():\n    try:\n        pass\n    except pytest.skip.Exception:\n        pass\n"
    )
    assert [b.split(":")[1] for b in bare_skips(sample)] == ["3", "4", "6", "8"]
