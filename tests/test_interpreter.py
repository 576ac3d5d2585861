"""hipexplore.interpreter: the path a child gets, and the command lines it builds, run for real.

The attack itself (planted modules against every launcher) is tests/security/test_security_interpreters.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hipexplore import interpreter
from hipexplore.interpreter import (
    safe_environ,
    child_path,
    implicit_cwd_entries,
    isolated_argv,
    kernel_argv,
    safe_path_argv,
)

REPO = Path(__file__).resolve().parents[1]
PY = "/usr/bin/python3"

#: What a child prints about itself.
REPORT = (
    "import json, sys\nprint(json.dumps({'path': sys.path, 'argv': sys.argv, 'isolated': sys.flags.isolated, "
    "'safe': sys.flags.safe_path, 'json': json.__file__}))\n"
)


# -- child_path ------------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["", ".", "./", "./.", "a/.."])
def test_every_spelling_of_here_is_left_out(spelling):
    path = [spelling, "/opt/lib", spelling, "/usr/lib/python3.11"]
    assert child_path(path, orig_argv=[PY, "-c", "x"], environ={}) == ["/opt/lib", "/usr/lib/python3.11"]


def test_order_kept_duplicates_and_non_strings_dropped():
    path = ["/b", "/a", b"/bytes", "/b", None, "/c", "__editable__.x.__path_hook__"]
    assert child_path(path, orig_argv=[PY, "-c", "x"], environ={}) == ["/b", "/a", "/c", "__editable__.x.__path_hook__"]


def test_python_m_working_directory_dropped_unless_pythonpath_names_it(tmp_path):
    here = str(tmp_path)
    path = [here, "/usr/lib/python3.11", "/venv/site-packages"]
    run_m = [PY, "-m", "hipexplore", "compile"]
    assert child_path(path, orig_argv=run_m, cwd=here, environ={}, safe_path=False) == path[1:]
    # PYTHONPATH=$PWD (a checkout): asked for, so kept
    assert child_path(path, orig_argv=run_m, cwd=here, environ={"PYTHONPATH": here}, safe_path=False) == path
    # -P / -I: Python put nothing there, so an entry equal to the directory was put there on purpose
    assert child_path(path, orig_argv=run_m, cwd=here, environ={}, safe_path=True) == path


def test_pythonpath_entries_and_a_scripts_folder_are_kept(tmp_path):
    extra, scripts = str(tmp_path / "extra"), str(tmp_path / "bin")
    path = [scripts, extra, "/usr/lib/python3.11"]
    got = child_path(
        path,
        orig_argv=[PY, f"{scripts}/hipexplore", "compile"],
        cwd=scripts,
        environ={"PYTHONPATH": extra},
        safe_path=False,
    )
    assert got == path  # a console script's own folder is the script's (here equal to the cwd: still kept)


@pytest.mark.parametrize(
    "argv,mode",
    [
        ([PY, "-m", "pkg"], "-m"),
        ([PY, "-mpkg"], "-m"),
        ([PY, "-Im", "pkg"], "-m"),
        ([PY, "-W", "error", "-m", "x"], "-m"),
        ([PY, "-Werror", "-c", "1"], "-c"),
        ([PY, "-X", "utf8", "-B", "-c", "1"], "-c"),
        ([PY, "-Xdev", "s.py"], "script"),
        ([PY, "--check-hash-based-pycs", "always", "-m", "x"], "-m"),
        ([PY, "-W", "-m", "s.py"], "script"),
        ([PY], ""),
        ([PY, "-"], ""),
        ([PY, "--", "s.py"], "script"),
        ([PY, "-E", "s.py", "-m"], "script"),
    ],
)
def test_run_mode_read_from_the_command_line(argv, mode):
    assert interpreter.run_mode(argv) == mode


def test_implicit_entries_for_this_process():
    """pytest runs as ``python -m pytest`` or a script: either way the answer matches how it started."""
    mode = interpreter.run_mode(sys.orig_argv)
    expected = (
        set()
        if (mode != "-m" or sys.flags.safe_path or sys.flags.isolated)
        else {os.getcwd(), os.path.realpath(os.getcwd())}
    )
    assert implicit_cwd_entries() == expected


# -- the command lines, run -------------------------------------------------------------------------
def _run(argv: list[str], cwd: Path, env: dict | None = None) -> dict:
    out = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_isolated_child_gets_this_path_and_its_arguments_and_nothing_from_the_folder(tmp_path):
    (tmp_path / "json.py").write_text("raise SystemExit('the folder json.py ran')\n")
    extra = tmp_path / "extra"
    extra.mkdir()
    got = _run(
        isolated_argv(REPORT, "a b", "2", path=["", str(extra), *sys.path]),
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # PYTHONPATH ignored
    assert got["argv"] == ["-c", "a b", "2"] and got["isolated"] == 1
    assert got["path"] == child_path(["", str(extra), *sys.path])
    assert got["path"][0] == str(extra) and "" not in got["path"] and str(tmp_path) not in got["path"]
    assert not got["json"].startswith(str(tmp_path))


def test_isolated_child_sees_this_processs_pythonpath(tmp_path):
    """The tests run with PYTHONPATH=<checkout>: the child (which ignores PYTHONPATH) imports the
    same hipexplore, through the path it was given."""
    code = "import hipexplore\nprint(hipexplore.__file__)\n"
    out = subprocess.run(
        isolated_argv(code),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert out.returncode == 0, out.stderr
    import hipexplore

    assert out.stdout.strip() == hipexplore.__file__


def test_isolated_child_keeps_no_bytecode_and_utf8_modes(tmp_path):
    code = "import sys\nprint(int(sys.flags.dont_write_bytecode), sys.flags.utf8_mode, sys.flags.isolated)\n"
    argv = isolated_argv(code)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUTF8": "1"}
    parent = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from hipexplore.interpreter import isolated_argv; import subprocess; "
            f"subprocess.run(isolated_argv({code!r}), check=True)",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert parent.returncode == 0, parent.stderr
    assert parent.stdout.split() == ["1", "1", "1"]
    assert argv[1] == "-I"


def test_safe_path_keeps_the_environment_but_not_the_folder(tmp_path):
    (tmp_path / "json.py").write_text("raise SystemExit('the folder json.py ran')\n")
    extra = tmp_path / "extra"
    extra.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(extra), os.environ.get("PYTHONPATH", "")])}
    got = _run(safe_path_argv("-c", REPORT), cwd=tmp_path, env=safe_environ(env))
    assert got["safe"] is True and got["isolated"] == 0
    assert got["path"][0] == str(extra) and "" not in got["path"] and str(tmp_path) not in got["path"]


@pytest.mark.parametrize("pythonpath", [":{extra}", "{extra}:", ".:{extra}", "{extra}::", "rel/dir:{extra}"])
def test_an_empty_or_relative_pythonpath_entry_is_not_the_working_directory_again(tmp_path, pythonpath):
    """``-P`` keeps Python from prepending the folder, but ``PYTHONPATH=$PYTHONPATH:/x`` with the
    variable unset names it again (an empty entry): ``safe_environ`` keeps only absolute entries."""
    (tmp_path / "json.py").write_text("raise SystemExit('the folder json.py ran')\n")
    (tmp_path / "rel" / "dir").mkdir(parents=True)
    (tmp_path / "rel" / "dir" / "json.py").write_text("raise SystemExit('the relative json.py ran')\n")
    extra = tmp_path / "extra"
    extra.mkdir()
    env = {**os.environ, "PYTHONPATH": pythonpath.format(extra=extra)}
    bare = subprocess.run(
        safe_path_argv("-c", REPORT), capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert bare.returncode != 0 and "ran" in bare.stderr  # the attack is real without safe_environ
    got = _run(safe_path_argv("-c", REPORT), cwd=tmp_path, env=safe_environ(env))
    assert got["path"][0] == str(extra) and str(tmp_path) not in got["path"]


def test_kernel_argv_is_ipykernel_with_a_safe_path():
    argv = kernel_argv("/x/python")
    assert argv == ["/x/python", "-P", "-m", "ipykernel_launcher", "-f", "{connection_file}"]


@pytest.mark.parametrize("user_site", [True, False], ids=["user-site", "no-user-site"])
def test_the_parents_user_site_hooks_run_in_the_child_only_when_the_parent_had_them(tmp_path, user_site):
    """A ``pip install --user -e`` finder is a ``.pth`` hook in the user site-packages: the parent
    (outside a venv, where the user site is on) ran it, so the child runs it too; a parent without a
    user site gives the child none. The user site here is a folder of this test (PYTHONUSERBASE)."""
    base = getattr(sys, "_base_executable", "") or sys.executable
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUSERBASE": str(tmp_path / "userbase")}
    env.pop("PYTHONNOUSERSITE", None)
    if not user_site:
        env["PYTHONNOUSERSITE"] = "1"
    find = subprocess.run(
        [base, "-c", "import site; print(site.USER_SITE)"], capture_output=True, text=True, env=env, timeout=60
    )
    site_dir = Path(find.stdout.strip())
    site_dir.mkdir(parents=True)
    (site_dir / "hx_hook.pth").write_text("import sys; sys.hx_user_hook = True\n")
    child = "import sys; print(getattr(sys, 'hx_user_hook', False), sys.flags.isolated)"
    parent = (
        f"import subprocess, sys\nfrom hipexplore.interpreter import isolated_argv\n"
        f"print(getattr(sys, 'hx_user_hook', False)); sys.stdout.flush()\n"
        f"subprocess.run(isolated_argv({child!r}), check=True)\n"
    )
    out = subprocess.run([base, "-P", "-c", parent], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(user_site), str(user_site), "1"]
