"""The stale-key runner (issue 45, item 4: benchmarks/compile/stale_keys.py) on this host: both caches
asked in new processes, NVRTC reading the header itself; its verdict rule; the docs table it renders."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from conftest import require_compiler

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "compile" / "stale_keys.py"


def _module():
    spec = importlib.util.spec_from_file_location("stale_keys", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verdicts():
    sk = _module()
    a, b, c = ({"sha256": x} for x in "abc")
    assert (
        sk.verdict(a, a, b) == "stale" and sk.verdict(a, b, b) == "correct" and sk.verdict(a, a, a) == "not observable"
    )
    assert sk.verdict(a, c, b) == "wrong" and sk.verdict(a, {"sha256": ""}, b) == "error"
    assert sk.verdict(a, a, c, clock=True) == "stale" and sk.verdict(a, b, c, clock=True) == "correct"


def test_runner_on_this_host(tmp_path):
    require_compiler("nvrtc")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path / "run"), "--cases", "header-shadowed,clock-macro"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "run" / "stale_keys.json").read_text())
    rows = {(r["case"], r["cache"]): r for r in data["rows"]}
    assert set(rows) == {(c, k) for c in ("header-shadowed", "clock-macro") for k in ("nvrtc-own", "hipexplore")}
    for case in ("header-shadowed", "clock-macro"):
        hx = rows[(case, "hipexplore")]
        assert hx["verdict"] == "correct" and hx["second"]["outcome"] == "compiled"
        assert hx["second"]["compiler_cache"].startswith("off: HIPEXPLORE_COMPILER_CACHE=off")  # each cache alone
        nv = rows[(case, "nvrtc-own")]
        assert nv["first"]["status"] == nv["second"]["status"] == 0 and nv["verdict"] in ("correct", "stale")
    if not data["live"]:  # no driver here: NVRTC's cache cannot serve anything, and the table says so
        assert all(r["verdict"] == "correct" for r in data["rows"])
    table = _module().markdown_table(tmp_path, tmp_path)
    assert "| a new header earlier on the include path | correct" in table and "hipexplore's cache" in table
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path / "x"), "--cases", "nothing"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "unknown case 'nothing'" in bad.stderr


def test_the_docs_show_a_recorded_run():
    text = (REPO / "docs" / "guide" / "cache.md").read_text()
    found = _module().recorded(REPO / "data" / "compile" / "stale-keys")
    assert found is not None, "no recorded run under data/compile/stale-keys"
    assert str(found[0].relative_to(REPO)) in text


def test_the_table_names_the_script_as_the_repository_does_wherever_it_was_recorded(tmp_path):
    """The recorded command carries the recording host's checkout (the device's copy sat at another
    path than this clone): the table names ``benchmarks/...`` relative, so the generated page is the
    same from every clone (a CI clone's ``gen_docs.py --check`` found it stale)."""
    import json

    found = _module().recorded(REPO / "data" / "compile" / "stale-keys")
    assert found is not None
    data = json.loads(found[0].read_text())
    data["provenance"]["command"] = (
        "/opt/py/bin/python3 /elsewhere/checkout/benchmarks/compile/stale_keys.py --out /tmp/x"
    )
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / found[0].name).write_text(json.dumps(data))
    first = _module().markdown_table(tmp_path, tmp_path).splitlines()[0]
    assert first.startswith("Recorded by `python3 benchmarks/compile/stale_keys.py --out /tmp/x` on "), first
