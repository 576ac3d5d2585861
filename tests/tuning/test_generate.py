"""``hipexplore.tuning.generate``: the shipped lists (data/tuning/lists) are exactly what the
generator writes, and ``--check`` fails on an edited one."""

from __future__ import annotations

import pytest

from hipexplore.tuning import generate, listfile
from hipexplore.tuning.models import MODELS

pytestmark = pytest.mark.timeout(120)

SHIPPED = sorted(MODELS)


def test_shipped_lists_are_exactly_the_generator_output():
    texts = generate.texts()
    assert sorted(texts) == [f"{n}.jsonl" for n in SHIPPED]
    for fname, text in texts.items():
        path = listfile.LISTS_DIR / fname
        assert path.is_file(), f"{path} missing: run python -m hipexplore.tuning.generate"
        assert path.read_text(encoding="utf-8") == text, (
            f"{path} differs from the generator: run python -m hipexplore.tuning.generate"
        )
    assert generate.main(["--check"]) == 0


def test_generate_check_fails_on_an_edited_list(tmp_path, capsys):
    for fname, text in generate.texts().items():
        (tmp_path / fname).write_text(text)
    edited = tmp_path / "resnet50.jsonl"
    edited.write_text(edited.read_text().replace('"v1:32,32,32,2,2,4,1,32"', '"v1:32,32,32,2,2,4,1,16"', 1))
    assert generate.main(["--check", "--out", str(tmp_path)]) == 1
    assert "resnet50.jsonl: differs" in capsys.readouterr().out
