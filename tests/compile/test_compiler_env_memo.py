"""The compiler-environment memo when a variable's *value* changes (``compile.inputs.env_identity``,
``HostCompiler.identity``, ``CompileCache``'s request -> key memo).

The identity of a compiler carries the values of the variables it reads (``inputs.HOST_ENV``), and
the host compiler asks its driver again what runs whenever any variable changes (a ``CC`` wrapper
may read any). Both are memoized so that a memory hit stays in the microseconds. Other tests set a
variable and unset it, or change one whose headers are keyed anyway; here the value alone changes
(a -> b -> a), inside the recheck window, and the identity, the key and the binary must follow it.
"""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from hipexplore.compile.base import CompilerIdentity
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.host import HostCompiler
from hipexplore.compile.inputs import HOST_ENV, env_identity
from hipexplore.compile.request import CompileRequest, Source

PLAIN = CompileRequest(Source("plain.c", "int answer(void) { return 7; }\n"), "host", "host")
VALUED = CompileRequest(Source("valued.c", "int answer(void) { return VALUE; }\n"), "host", "host")


def call(binary: bytes, tmp_path: Path) -> int:
    lib = tmp_path / f"lib{hashlib.sha256(binary).hexdigest()[:12]}.so"
    if not lib.exists():
        lib.write_bytes(binary)
    f = ctypes.CDLL(str(lib)).answer
    f.restype = ctypes.c_int
    return f()


@pytest.mark.timeout(60)
def test_the_identity_carries_the_value_and_follows_it_back_and_forth(monkeypatch) -> None:
    """One identity object, one variable: its value (not only its name) is in the identity, and
    a -> b -> a gives identity(a), identity(b), identity(a) again, call after call."""
    assert "COMPILER_PATH" in HOST_ENV
    for var in HOST_ENV:  # only the one variable set (LANG and the like are often set)
        monkeypatch.delenv(var, raising=False)
    ident = CompilerIdentity(name="host", version="cc 1", library="/usr/bin/cc", stamp="s", extra=(("command", "cc"),))
    seen = {}
    for value in ("/nonexistent/a", "/nonexistent/b", "/nonexistent/a", "/nonexistent/b"):
        monkeypatch.setenv("COMPILER_PATH", value)
        got = env_identity(ident)
        assert dict(got.extra)["env"] == repr((("COMPILER_PATH", value),))
        assert env_identity(ident) is got  # the memo: the same answer while nothing changed
        seen.setdefault(value, got)
        assert got == seen[value]
    assert seen["/nonexistent/a"] != seen["/nonexistent/b"]
    monkeypatch.delenv("COMPILER_PATH")
    assert env_identity(ident) == ident  # unset: nothing added
    other = replace(ident, version="cc 2")  # another identity with the same values: its own answer
    monkeypatch.setenv("COMPILER_PATH", "/nonexistent/a")
    assert env_identity(other).version == "cc 2" and env_identity(ident).version == "cc 1"


@pytest.mark.timeout(180)
def test_a_value_change_changes_the_key_inside_the_recheck_window(tmp_path, monkeypatch) -> None:
    """A real compiler and cache, the recheck window an hour long: changing COMPILER_PATH's value
    gives another key (a compile, not a memory hit); changing it back gives the first key again
    (a memory hit of the first binary)."""
    comp = HostCompiler()
    comp.identity_recheck_seconds = 3600.0
    cache = CompileCache(disk_dir=False)
    monkeypatch.setenv("COMPILER_PATH", "/nonexistent/a")
    a = cache.get_or_compile(PLAIN, comp)
    assert cache.get_or_compile(PLAIN, comp).outcome == "memory-hit"
    monkeypatch.setenv("COMPILER_PATH", "/nonexistent/b")
    b = cache.get_or_compile(PLAIN, comp)
    assert b.outcome == "compiled" and b.key != a.key
    monkeypatch.setenv("COMPILER_PATH", "/nonexistent/a")
    again = cache.get_or_compile(PLAIN, comp)
    assert again.outcome == "memory-hit" and again.key == a.key
    assert call(again.binary, tmp_path) == 7


WRAPPER = '#!/bin/sh\nexec cc $HX_WRAPPER_FLAGS "$@"\n'


@pytest.mark.timeout(180)
def test_a_cc_wrapper_reading_any_variable_is_asked_again_when_its_value_changes(tmp_path, monkeypatch) -> None:
    """``CC`` is a wrapper that adds flags from a variable no compiler list names: its value changes
    from -DVALUE=1 to -DVALUE=2 inside the recheck window, and the binary must change with it (the
    driver's plan, asked again, holds the new flag); back to -DVALUE=1 is the first key again."""
    wrapper = tmp_path / "bin" / "wrapcc"
    wrapper.parent.mkdir()
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    assert "HX_WRAPPER_FLAGS" not in HOST_ENV
    comp = HostCompiler(cc=str(wrapper))
    comp.identity_recheck_seconds = 3600.0
    cache = CompileCache(disk_dir=False)
    monkeypatch.setenv("HX_WRAPPER_FLAGS", "-DVALUE=1")
    one = cache.get_or_compile(VALUED, comp)
    assert call(one.binary, tmp_path) == 1
    monkeypatch.setenv("HX_WRAPPER_FLAGS", "-DVALUE=2")
    two = cache.get_or_compile(VALUED, comp)
    assert two.outcome == "compiled" and two.key != one.key and call(two.binary, tmp_path) == 2
    monkeypatch.setenv("HX_WRAPPER_FLAGS", "-DVALUE=1")
    back = cache.get_or_compile(VALUED, comp)
    assert back.outcome == "memory-hit" and back.key == one.key and call(back.binary, tmp_path) == 1
