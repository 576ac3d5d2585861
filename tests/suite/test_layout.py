"""Every module of hipexplore/ has tests a maintainer finds by its path (issue 39).

``tests/<package>/test_<module>.py`` mirrors ``hipexplore/<package>/<module>.py``. A module whose
tests live elsewhere (a suite over several modules, such as the compile cache's, or the counter
pass's one file) is listed in ``ELSEWHERE`` with the files that hold them; each of those must exist
and import the module by its dotted name (``hipexplore.compile.entry``) or ``from hipexplore.compile
import entry``. A new module with neither fails here, naming the file to add.

Why by path: "23 modules are imported by no test file" (issue 39) was found by grep, one module at
a time; this check makes the next one a failing test instead of a search. And at most a tenth of the
modules may be in ``ELSEWHERE`` (``MAX_ELSEWHERE_SHARE``): the exception stays one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "hipexplore"
TESTS = REPO / "tests"
#: not modules with tests of their own: the notebooks' jupytext scripts (tests/report/test_notebooks.py
#: runs them) and the Triton/C sources the tuning lists compile
SKIPPED = ("notebooks", "tuning/src")

#: module (path under hipexplore/) -> the test files where its tests live, when not at its mirror path.
#: Built from where the tests are (grep for the module's import); keep it short: a module tested on
#: its own gets a mirror-path file instead.
ELSEWHERE: dict[str, tuple[str, ...]] = {
    "bench/worker_main.py": ("tests/security/test_security_interpreters.py",),
    "cli/calibrate_cmd.py": ("tests/test_calibrate.py",),
    "interop/nvbench_files.py": ("tests/interop/test_sides.py",),
    "interop/pyperf_files.py": ("tests/interop/test_sides.py",),
    "cli/bench_table.py": (
        "tests/cli/test_messages.py",
        "tests/bench/test_stop_flags.py",
        "tests/bench/counters/test_counters.py",
    ),
    "compile/_common.py": ("tests/compile/test_backends.py", "tests/compile/test_hiprtc.py"),
    "compile/base.py": ("tests/compile/test_compiler_lifecycle.py", "tests/compile/test_request.py"),
    "compile/cache.py": (
        "tests/compile/test_cache_memory.py",
        "tests/compile/test_cache_contract.py",
        "tests/compile/test_cache_keys.py",
        "tests/compile/test_cache_locks.py",
        "tests/compile/test_cache_processes.py",
        "tests/compile/test_cache_setup.py",
    ),
    "compile/disk_files.py": ("tests/compile/test_disk_maint.py", "tests/security/test_security_leases.py"),
    "compile/entry.py": ("tests/security/test_security_disk.py", "tests/compile/test_disk_hostile.py"),
    "compile/triton_env.py": ("tests/compile/test_triton_keys.py",),
    "compile/triton_source.py": ("tests/compile/test_triton_keys.py", "tests/compile/test_triton.py"),
    "compile/tritonc.py": ("tests/compile/test_backends.py", "tests/security/test_security_interpreters.py"),
}


def modules() -> list[str]:
    """Every module under hipexplore/ (paths relative to it), packages' __init__ and SKIPPED left out."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if path.name == "__init__.py" or any(rel == s or rel.startswith(s + "/") for s in SKIPPED):
            continue
        out.append(rel)
    return out


def mirror(rel: str) -> Path:
    """``bench/stats.py`` -> tests/bench/test_stats.py; ``errors.py`` -> tests/test_errors.py."""
    parent, _, name = rel.rpartition("/")
    return TESTS / parent / f"test_{name}"


def dotted(rel: str) -> str:
    return "hipexplore." + rel[:-3].replace("/", ".")


def imports(text: str, module: str) -> bool:
    """Whether test source ``text`` imports ``module`` (dotted): ``hipexplore.a.b`` anywhere (import,
    from-import, a subprocess's ``-c`` text), or ``from hipexplore.a import b`` (parenthesised too)."""
    if re.search(rf"(?<![\w.]){re.escape(module)}(?![\w])", text):
        return True
    package, _, name = module.rpartition(".")
    for m in re.finditer(rf"from\s+{re.escape(package)}\s+import\s+(\([^)]*\)|[^\n]*)", text):
        if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", m.group(1)):
            return True
    return False


def problems() -> list[str]:
    found = []
    known = modules()
    for rel in known:
        place = mirror(rel).relative_to(REPO).as_posix()
        if mirror(rel).is_file():
            if rel in ELSEWHERE:
                found.append(f"hipexplore/{rel} has its mirror file {place}: remove it from ELSEWHERE in {__name__}")
            continue
        listed = ELSEWHERE.get(rel)
        if not listed:
            found.append(
                f"hipexplore/{rel} has no tests a maintainer finds by its path: add {place} (tests of what "
                f"{dotted(rel)} promises), or list the files that test it in ELSEWHERE in tests/suite/test_layout.py"
            )
            continue
        for test in listed:
            path = REPO / test
            if not path.is_file():
                found.append(f"hipexplore/{rel}: ELSEWHERE lists {test}, which does not exist")
            elif not imports(path.read_text(encoding="utf-8"), dotted(rel)):
                found.append(f"hipexplore/{rel}: ELSEWHERE lists {test}, which does not import {dotted(rel)}")
    for rel in sorted(set(ELSEWHERE) - set(known)):
        found.append(f"ELSEWHERE lists hipexplore/{rel}, which is not a module of hipexplore/ (renamed or removed?)")
    return found


@pytest.mark.timeout(60)
def test_every_module_has_a_mirror_test_file_or_listed_ones_that_import_it():
    found = problems()
    assert not found, f"{len(found)} module(s) without tests found by path:\n" + "\n".join(found)


#: at most this share of hipexplore's modules may have their tests elsewhere (``ELSEWHERE``) instead
#: of at their mirror path (issue 50: 50 of 136 modules had no file there)
MAX_ELSEWHERE_SHARE = 0.10


@pytest.mark.timeout(60)
def test_at_most_a_tenth_of_the_modules_have_their_tests_elsewhere():
    """The mirror path is the rule, ``ELSEWHERE`` the exception: a module tested only through others
    gets a file at its path (the tests of it moved or split there, or new ones), not a new entry."""
    known = modules()
    elsewhere = sorted(rel for rel in known if not mirror(rel).is_file())
    share = len(elsewhere) / len(known)
    assert share <= MAX_ELSEWHERE_SHARE, (
        f"{len(elsewhere)} of {len(known)} modules ({share:.1%}) have no test file at their path; at most "
        f"{MAX_ELSEWHERE_SHARE:.0%} may: add {mirror(elsewhere[0]).relative_to(REPO)} (tests of what it promises) or "
        f"move its tests there. Without one: {', '.join(elsewhere)}"
    )


@pytest.mark.timeout(60)
def test_the_check_sees_a_module_import_and_a_missing_file():
    """The check itself: what counts as importing, and that a module with neither is named."""
    assert imports("from hipexplore.compile.entry import decode_entry", "hipexplore.compile.entry")
    assert imports("from hipexplore.compile import (\n    cache,\n    entry as e,\n)", "hipexplore.compile.entry")
    assert imports("import hipexplore.bench.io as io", "hipexplore.bench.io")
    assert not imports("from hipexplore.bench.io_extra import x", "hipexplore.bench.io")
    assert not imports("from hipexplore.compile import entry_points", "hipexplore.compile.entry")
    assert not imports("from hipexplore.compile.cache import entry", "hipexplore.compile.entry")
    assert (
        mirror("bench/stats.py") == TESTS / "bench" / "test_stats.py"
        and mirror("readable.py") == TESTS / "test_readable.py"
    )
    assert dotted("bench/counters/ncu.py") == "hipexplore.bench.counters.ncu"
    assert "bench/stats.py" in modules() and not any(m.startswith(("notebooks/", "tuning/src/")) for m in modules())
    assert "__init__.py" not in {m.rpartition("/")[2] for m in modules()}
