"""hipexplore.cli.info: ``hipexplore info``, what this machine can compile and run and where the
cache lives. ``gather`` on this machine's real compilers and devices; ``info_text`` and ``strict_json``
on the edges the machine does not show (an unavailable compiler, a long target list, NaN)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hipexplore.cli import main
from hipexplore.cli.info import gather, info_text, strict_json

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_gather_lists_every_compiler_every_device_kind_and_the_cache(tmp_path, monkeypatch):
    import hipexplore

    info = gather()
    assert info["hipexplore"] == hipexplore.__version__
    assert [c["name"] for c in info["compilers"]] == ["hiprtc", "nvrtc", "host", "triton"]
    assert [d["kind"] for d in info["devices"]] == ["hip", "cuda", "host"]
    host = info["devices"][2]
    assert host["available"] is True and host["llc_bytes"] > 0
    for d in info["devices"]:
        assert d["available"] or d["reason"]  # an absent device says why
    cache = info["cache"]
    assert set(cache) >= {
        "disk_dir",
        "max_entries",
        "max_bytes",
        "disk_max_bytes",
        "disk_entries",
        "disk_bytes",
        "remote",
    }


@pytest.mark.timeout(300)
def test_json_is_strict_and_the_text_names_every_part(capsys):
    assert main(["info", "--json"]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    out = json.loads(text)
    assert {"hipexplore", "compilers", "devices", "cache"} <= set(out)
    assert main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"hipexplore {out['hipexplore']}" and "compilers:" in lines and "devices:" in lines
    assert "compile cache:" in lines and any(line.startswith("  host ") for line in lines)


@pytest.mark.timeout(30)
def test_strict_turns_non_finite_numbers_into_null_at_any_depth():
    got = strict_json({"a": math.nan, "b": [1.5, math.inf, (-math.inf, 2)], "c": {"d": math.nan, "e": "x"}, "f": 3})
    assert got == {"a": None, "b": [1.5, None, [None, 2]], "c": {"d": None, "e": "x"}, "f": 3}
    json.dumps(got, allow_nan=False)


INFO = {
    "hipexplore": "9.9",
    "compilers": [
        {
            "name": "hiprtc",
            "available": True,
            "version": "5.2",
            "library": "/opt/rocm/libhiprtc.so",
            "targets": [f"gfx9{i:02d}" for i in range(30)],
            "crashing_targets": ["gfx1100"],
            "notes": ["a note"],
        },
        {"name": "nvrtc", "available": False, "reason": "libnvrtc.so not found"},
    ],
    "devices": [
        {"kind": "cuda", "available": False, "reason": "no CUDA driver"},
        {
            "kind": "host",
            "available": True,
            "name": "cpu",
            "target": "x86_64",
            "llc_bytes": 32 << 20,
            "llc_source": "sysfs",
        },
    ],
    "cache": {
        "disk_dir": "",
        "max_entries": 100,
        "max_bytes": 1 << 20,
        "disk_max_bytes": 1 << 30,
        "disk_entries": 3,
        "disk_bytes": 4096,
        "shared": "group",
        "remote": "",
    },
}


@pytest.mark.timeout(30)
def test_text_wraps_every_target_and_says_what_is_absent():
    text = info_text(INFO)
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert "targets (30):" in text and all(f"gfx9{i:02d}" in text for i in range(30))  # none cut off
    assert "          crashing targets: gfx1100" in lines and "          note: a note" in lines
    assert "  nvrtc   unavailable: libnvrtc.so not found" in lines
    assert "  cuda  absent: no CUDA driver" in lines
    assert "  host  cpu  target=x86_64  LLC=32.0 MiB (sysfs)" in lines
    assert "  disk dir: (disk tier off)" in lines and "  remote (Redis team tier): off" in lines
    assert any(
        line.startswith("  disk: 3 entries, 4096 bytes (") and line.endswith("[team directory]") for line in lines
    )


def test_info_and_readme_name_the_crashing_targets(capsys):
    from conftest import require_compiler

    from hipexplore.compile.registry import get_compiler

    require_compiler("hiprtc")
    crashing = get_compiler("hiprtc").crashing_targets()
    assert crashing
    page = (REPO / "docs" / "guide" / "what-ran-where.md").read_text()  # moved there from the README
    sentence = page.split("ROCm 5.2's comgr does not know", 1)[1].split("and aborts", 1)[0]
    assert [t.strip() for t in sentence.split("(")[0].split(",")] == list(crashing)
    assert main(["info"]) == 0
    assert f"crashing targets: {', '.join(crashing)}" in capsys.readouterr().out
