"""hipexplore.compile.link_inputs: the files a host compile reads besides its sources, read from
the real driver's ``-###`` plan (cc here): object files among the options, ``-l`` libraries found
as ld finds them (shared before static unless static), linker scripts followed, and the one kind
of script that cannot be followed refused by name."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import need_tool
from hipexplore.compile.link_inputs import commands, driver_inputs, stable_line


def layout(tmp_path: Path) -> dict[str, Path]:
    cc = need_tool("cc")
    paths = {k: tmp_path / k for k in ("build", "deps", "empty", "libs")}
    for p in paths.values():
        p.mkdir()
    (paths["build"] / "k.c").write_text("int k(void) { return 1; }\n")
    (paths["deps"] / "a.c").write_text("int a(void) { return 2; }\n")
    subprocess.run(
        [cc, "-c", "-fPIC", str(paths["deps"] / "a.c"), "-o", str(paths["deps"] / "a.o")], check=True, timeout=120
    )
    subprocess.run(
        [cc, "-shared", "-fPIC", str(paths["deps"] / "a.c"), "-o", str(paths["libs"] / "libzzz.so")],
        check=True,
        timeout=120,
    )
    subprocess.run(["ar", "rcs", str(paths["libs"] / "libzzz.a"), str(paths["deps"] / "a.o")], check=True, timeout=120)
    paths["cc"] = Path(cc)
    return paths


def plan_of(paths: dict[str, Path], *extra: str) -> tuple[str, list[str]]:
    build = paths["build"]
    argv = [str(paths["cc"])]
    cmd = [*argv, "-O3", "-shared", "-fPIC", "-o", str(build / "lib.so"), str(build / "k.c"), *extra, "-###"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=build, env=dict(os.environ, LC_ALL="C"))
    assert proc.returncode == 0, proc.stderr
    return proc.stderr, argv


@pytest.mark.timeout(30)
def test_stable_line_hides_the_drivers_temp_names_only():
    line = ' /usr/bin/as --64 -o /tmp/ccAbC123.o /tmp/ccXyZ789.s "-plugin-opt=-fresolution=/tmp/ccPY29J9.res"'
    assert stable_line(line) == ' /usr/bin/as --64 -o /tmp/TEMP.o /tmp/TEMP.s "-plugin-opt=-fresolution=/tmp/TEMP.res"'
    assert (
        stable_line("/tmp/ccshort.o /tmp/cc1234567.o /usr/lib/crtbeginS.o")
        == "/tmp/ccshort.o /tmp/cc1234567.o /usr/lib/crtbeginS.o"
    )


@pytest.mark.timeout(30)
def test_commands_are_the_indented_lines_shell_split():
    plan = (
        "Using built-in specs.\nCOLLECT_GCC=cc\n (a parenthesised note)\n # a comment\n"
        ' /usr/lib/cc1 -quiet "a b.c" -o x.s\n /usr/bin/as -o x.o x.s\n \'unbalanced\n \n'
    )
    assert commands(plan) == [["/usr/lib/cc1", "-quiet", "a b.c", "-o", "x.s"], ["/usr/bin/as", "-o", "x.o", "x.s"]]


@pytest.mark.timeout(300)
def test_objects_and_libraries_outside_the_build_folder_are_inputs(tmp_path):
    paths = layout(tmp_path)
    build, libs, empty = paths["build"], paths["libs"], paths["empty"]
    plan, argv = plan_of(paths, str(paths["deps"] / "a.o"), f"-L{empty}", f"-L{libs}", "-lzzz")
    assert any(os.path.basename(c[0]) in ("collect2", "ld") for c in commands(plan))
    files, watch, error = driver_inputs(plan, str(build), (str(build) + os.sep,), argv)
    assert error == ""
    assert str(paths["deps"] / "a.o") in files
    assert str(libs / "libzzz.so") in files and str(libs / "libzzz.a") not in files  # shared before static
    assert not any(f.startswith(str(build)) for f in files)  # the build folder's own files are the request's
    # where a same-named library in an earlier folder would win: watched
    assert str(empty / "libzzz.so") in watch and str(empty / "libzzz.a") in watch
    assert str(libs / "libzzz.so") not in watch
    # -lc is glibc's linker script (GROUP ( libc.so.6 ... )): followed to the files it names
    libc_script = [f for f in files if os.path.basename(f) == "libc.so"]
    if libc_script and b"GROUP" in Path(libc_script[0]).read_bytes():
        assert any(os.path.basename(f) == "libc.so.6" for f in files)
    assert files == list(dict.fromkeys(files)) and watch == list(dict.fromkeys(watch))  # no duplicates


@pytest.mark.timeout(300)
def test_static_linking_takes_the_archive(tmp_path):
    paths = layout(tmp_path)
    plan, argv = plan_of(paths, f"-L{paths['libs']}", "-Wl,-Bstatic", "-lzzz", "-Wl,-Bdynamic")
    files, _, error = driver_inputs(plan, str(paths["build"]), (str(paths["build"]) + os.sep,), argv)
    assert error == "" and str(paths["libs"] / "libzzz.a") in files and str(paths["libs"] / "libzzz.so") not in files


@pytest.mark.timeout(300)
def test_a_linker_script_is_followed_or_refused_when_it_cannot_be(tmp_path):
    paths = layout(tmp_path)
    (paths["libs"] / "libgrp.so").write_text("/* a GNU ld script */\nGROUP ( libzzz.a AS_NEEDED ( -lzzz ) )\n")
    plan, argv = plan_of(paths, f"-L{paths['libs']}", "-lgrp")
    files, _, error = driver_inputs(plan, str(paths["build"]), (str(paths["build"]) + os.sep,), argv)
    assert error == ""
    assert {str(paths["libs"] / n) for n in ("libgrp.so", "libzzz.a", "libzzz.so")} <= set(files)
    inc = paths["deps"] / "moves.ld"
    inc.write_text("SEARCH_DIR(/opt/elsewhere)\nINPUT ( libzzz.so )\n")
    plan, argv = plan_of(paths, str(inc))
    files, watch, error = driver_inputs(plan, str(paths["build"]), (str(paths["build"]) + os.sep,), argv)
    assert (files, watch) == ([], [])
    assert error == (
        f"{str(inc)!r} is a linker script that includes other scripts or changes the library search "
        f"(INCLUDE/SEARCH_DIR): the files it reads cannot be listed, so it is not cached"
    )
