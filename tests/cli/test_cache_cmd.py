"""hipexplore.cli.cache_cmd: ``hipexplore cache stats`` as a table, and as data with ``--json``, on a
cache a real compile filled."""

from __future__ import annotations

import json

from hipexplore.cli import main


def test_cache_stats_is_a_table_and_json_is_data(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "c"))
    (tmp_path / "k.c").write_text("int f(void) { return 1; }\n")
    assert main(["compile", str(tmp_path / "k.c"), "--compiler", "host"]) == 0
    capsys.readouterr()
    assert main(["cache", "stats"]) == 0
    text = capsys.readouterr().out
    assert "{" not in text and "1 entries" in text
    assert any(line.split() == ["host", "1"] for line in text.splitlines())
    assert "compiler  entries" in text
    assert main(["cache", "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["by_compiler"] == {"host": 1}
