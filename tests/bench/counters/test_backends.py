"""``hipexplore.bench.counters.backends``: the pieces every backend shares: the base name a
profiler reports for a kernel entry and the one pattern that finds it (never a flush kernel), the
host's backend (no counters, said in one line), and where a profiler's executable is found."""

from __future__ import annotations

import os

import pytest

from hipexplore.bench.counters.backends import (
    HOST_LINE,
    CountersUnavailable,
    HostBackend,
    base_name,
    find_tool,
    name_pattern,
    reports,
)
from hipexplore.errors import ConfigError


def test_a_reported_kernel_name_is_matched_by_its_entrys_base_name_only() -> None:
    for name in ("triad", "void triad(float*, float const*)", "transpose_tiled", "void transpose_tiled<32, 8>(float*)"):
        assert reports(name, "triad") or reports(name, "transpose_tiled<32, 8>"), name
    for name in ("hx_write_flush", "hx_read_flush", "triad_timed", "mytriad", "hx_spin"):
        assert not reports(name, "triad"), name
    assert base_name("void transpose_tiled<32, 8>(float*)") == "transpose_tiled"
    assert base_name('extern "C" triad') == "triad"
    with pytest.raises(ConfigError, match="no function name"):
        base_name("<lambda>")
    assert (
        name_pattern(["triad", "transpose_tiled<32, 8>", "triad"])
        == "(^|[^A-Za-z0-9_])(transpose_tiled|triad)([^A-Za-z0-9_]|$)"
    )  # each base name once, sorted
    with pytest.raises(ConfigError, match="no kernel to count"):
        name_pattern([])


def test_the_host_backend_counts_nothing_and_says_so_in_one_line(tmp_path) -> None:
    host = HostBackend()
    assert host.available(None) == HOST_LINE and "\n" not in HOST_LINE and host.groups(None) == []
    for call in (
        lambda: host.prefix(("x",), tmp_path, ["triad"]),
        lambda: host.parse(tmp_path),
        lambda: host.per_launch({}),
    ):
        with pytest.raises(CountersUnavailable, match="host: no hardware counters"):
            call()
    assert host.describe() == {"name": "host", "label": "host (no counters)"}


def test_a_profiler_is_found_as_given_on_path_or_in_the_newest_install(tmp_path, monkeypatch) -> None:
    def tool(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
        return str(path)

    given = tool(tmp_path / "given" / "ncu")
    older, newer = tool(tmp_path / "opt" / "v2024" / "ncu"), tool(tmp_path / "opt" / "v2025" / "ncu")
    (tmp_path / "opt" / "v2026").mkdir()
    (tmp_path / "opt" / "v2026" / "ncu").write_text("not executable")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    places = [str(tmp_path / "opt" / "*" / "ncu")]
    assert find_tool(given, "ncu", places) == given
    assert find_tool(str(tmp_path / "missing"), "ncu", places) is None  # an explicit path is never replaced
    assert find_tool(None, "ncu", places) == newer != older  # the newest executable one
    monkeypatch.setenv("PATH", os.path.dirname(given))
    assert find_tool(None, "ncu", places) == given  # PATH first
    assert find_tool(None, "no-such-profiler", []) is None
