"""``hipexplore.compile.registry``: compilers by name (isolated by default where the backend says,
cached, with their timeout from the environment), an isolated compiler whose library is missing,
and the rows of ``compiler_info``."""

from __future__ import annotations


import pytest

from conftest import TRIAD_HIP
from hipexplore.compile.request import CompileRequest, Source
from hipexplore.errors import CompilerUnavailable, ConfigError


def test_registry_defaults_and_errors(monkeypatch):
    from hipexplore.compile import registry
    from hipexplore.compile.isolation import IsolatedCompiler

    with pytest.raises(ConfigError, match="'clang'.*hiprtc, nvrtc, host"):
        registry.get_compiler("clang")
    with pytest.raises(ConfigError, match="workers"):
        registry.get_compiler("host", isolated=True, workers=0)
    with pytest.raises(ConfigError, match="timeout"):
        registry.get_compiler("host", timeout=-1)
    hip = registry.get_compiler("hiprtc")
    assert isinstance(hip, IsolatedCompiler) and hip.kwargs == {"allow_unknown_targets": True}
    assert registry.get_compiler("hiprtc") is hip  # cached
    assert hip.timeout == registry.DEFAULT_TIMEOUT
    assert not isinstance(registry.get_compiler("nvrtc"), IsolatedCompiler)
    assert not isinstance(registry.get_compiler("host"), IsolatedCompiler)
    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "7.5")
    assert registry.get_compiler("hiprtc").timeout == 7.5
    assert registry.get_compiler("host").timeout == 7.5
    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="'soon'"):
        registry.get_compiler("hiprtc")
    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "30")
    monkeypatch.setenv("CC", "/nonexistent/hipexplore-cc")
    with pytest.raises(CompilerUnavailable, match="hipexplore-cc"):
        registry.get_compiler("host").compile(CompileRequest(Source("t.c", "int x;"), "host", "host"))


def test_registry_isolated_unavailable_hiprtc(monkeypatch):
    from hipexplore.compile import registry

    monkeypatch.setenv("HIPEXPLORE_HIPRTC_LIBRARY", "libhipexplore-no-such-hiprtc.so.0")
    c = registry.get_compiler("hiprtc", workers=1)
    try:
        assert not c.available() and "libhipexplore-no-such-hiprtc.so.0" in c.unavailable_reason()
        with pytest.raises(CompilerUnavailable, match="libhipexplore-no-such-hiprtc.so.0"):
            c.compile(CompileRequest(Source("t.hip", TRIAD_HIP), "hiprtc", "gfx90a"))  # raised in the worker
    finally:
        c.close()


def test_compiler_info_rows():
    from hipexplore.compile.registry import compiler_info

    rows = {r["name"]: r for r in compiler_info()}
    assert set(rows) == {"hiprtc", "nvrtc", "host", "triton"}
    for row in rows.values():
        assert {"name", "available", "reason", "version", "library", "targets"} <= set(row)
        if row["available"]:
            assert row["version"] and row["targets"] and row["reason"] == ""
        else:
            assert row["reason"]
    if rows["hiprtc"]["available"]:
        assert "gfx90a" in rows["hiprtc"]["targets"]
    if rows["nvrtc"]["available"]:
        assert "sm_90" in rows["nvrtc"]["targets"]
