"""hipexplore.cli.report_markdown: ``report --format markdown``'s refusals, each one line with exit
status 2 and nothing made (the folder is made only after the runs were read). The comment itself is
tested end to end in tests/browser/test_review_comment.py (rendered in chromium) and
tests/docs/test_ci_workflow.py (the CI workflow's step)."""

from __future__ import annotations

import pytest

from hipexplore.cli import main
from hipexplore.cli.report_markdown import COMMENT, check_out_folder
from hipexplore.errors import ConfigError


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "argv, said",
    [
        (
            ["--run", "missing.parquet", "--baseline", "A", "--candidate", "B", "--out", "rev"],
            "run 'missing.parquet' does not exist",
        ),
        (["--out", "rev"], "--format markdown writes the A/B review's comment"),
        (["--run", "x.parquet", "--baseline", "A", "--candidate", "B"], "--format markdown needs --out DIR"),
    ],
)
def test_refusals_are_one_line_and_make_nothing(tmp_path, monkeypatch, argv, said, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--format", "markdown", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0], err
    assert not (tmp_path / "rev").exists() and not list(tmp_path.iterdir())


def test_an_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("keep")
    with pytest.raises(ConfigError, match="exists and is not a folder"):
        check_out_folder(str(tmp_path / "f"))
    assert (tmp_path / "f").read_text() == "keep" and COMMENT == "comment.md"
