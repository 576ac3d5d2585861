"""data/: recorded runs in folders named by the question they answer, each with its manifest, and every
``data/...`` path the documents name exists.

Why: folders named by when they were taken (``session3``, ``wave2/1``, ``issue37``) told a reader nothing
of what is inside, and a renamed folder left the pages that cite it pointing nowhere. data/README.md
states the rules; this checks them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"
#: the folders whose every subfolder is one question with a MANIFEST.md
QUESTION_ROOTS = ("h200", "h100", "host", "tuning/scale")
FIELDS = ("revision", "date", "device", "command")
#: a folder named by when it was taken
WHEN = re.compile(r"(^|[-_])(wave|session|issue|phase)[-_]?\d|^earlier$|(^|-)s\d+$")
#: the pages that cite recorded data
PAGES = (
    "README.md",
    "BENCHMARKS.md",
    "benchmarks/README.md",
    "docs",
    "benchmarks/figures.py",
    "scripts/gen_docs.py",
    "data",
)
CITED = re.compile(r"(?<![\w/.-])data/[\w.-]+(?:/[\w.-]+)*")
#: what may follow a cited path when it names several files: a glob, a brace list, a placeholder
PATTERN = ("*", "{", "<")

pytestmark = pytest.mark.timeout(60)


def manifest_problems(folder: Path) -> list[str]:
    """What a question folder's MANIFEST.md lacks (nothing when it is complete)."""
    path = folder / "MANIFEST.md"
    name = folder.relative_to(REPO).as_posix()
    if not path.is_file():
        return [f"{name}/ has no MANIFEST.md (the question, then revision, date, device, command: data/README.md)"]
    lines = path.read_text(encoding="utf-8").splitlines()
    found = (
        []
        if lines and lines[0].startswith("# ") and len(lines[0]) > 3
        else [f"{name}/MANIFEST.md: no question as its title ('# ...')"]
    )
    for field in FIELDS:
        if not any(re.match(rf"- {field}: \S", line) for line in lines):
            found.append(f"{name}/MANIFEST.md: no '- {field}: ...' line")
    return found


def question_folders() -> list[Path]:
    return sorted(p for root in QUESTION_ROOTS for p in (DATA / root).iterdir() if p.is_dir())


def test_every_question_folder_has_a_manifest():
    folders = question_folders()
    assert len(folders) >= 30, [f.name for f in folders]
    found = [problem for folder in folders for problem in manifest_problems(folder)]
    assert not found, "\n".join(found)


def test_no_folder_is_named_by_when_it_was_taken():
    named = sorted(p.relative_to(REPO).as_posix() for p in DATA.rglob("*") if p.is_dir() and WHEN.search(p.name))
    assert not named, f"folders named by when they were taken (name them by their question, data/README.md): {named}"


def cited_paths() -> dict[str, set[str]]:
    """``data/...`` paths each page names, page by page; one that names several files (``call*_x.log``,
    ``call{1,2}_x``, ``tune-replay-<compiler>.json``) up to the pattern, with a ``*`` after it."""
    out: dict[str, set[str]] = {}
    for page in PAGES:
        base = REPO / page
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.suffix in (".md", ".py"))
        for f in files:
            text = f.read_text(encoding="utf-8")
            for m in CITED.finditer(text):
                path = m.group(0) + "*" if text[m.end() : m.end() + 1] in PATTERN else m.group(0).rstrip(".")
                out.setdefault(path, set()).add(f.relative_to(REPO).as_posix())
    return out


def exists(path: str) -> bool:
    return any(REPO.glob(path)) if path.endswith("*") else (REPO / path).exists()


def test_every_cited_data_path_exists():
    missing = {path: sorted(pages) for path, pages in cited_paths().items() if not exists(path)}
    assert not missing, "\n".join(f"{p} (named in {', '.join(pages)})" for p, pages in sorted(missing.items()))


def test_the_checks_see_a_missing_field_a_dated_name_and_a_dangling_path(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "h200" / "session3"
    folder.mkdir(parents=True)
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    (folder / "MANIFEST.md").write_text("# Does it?\n\n- revision: abc1234\n- date: 2026-12-01\n- command: `x`\n")
    assert manifest_problems(folder) == ["data/h200/session3/MANIFEST.md: no '- device: ...' line"]
    assert [
        n
        for n in ("session3", "wave2", "issue37", "earlier", "h200-wave3-s5", "h200-llama3-8b-wave3-s4")
        if not WHEN.search(n)
    ] == []
    assert [
        n
        for n in (
            "gpu-tests",
            "verdict-truth",
            "run4_reference_in_own_chunks",
            "group-0",
            "h100-cupti",
            "tuning-scale-j16",
            "resnet50-j16",
        )
        if WHEN.search(n)
    ] == []
    assert [m.group(0) for m in CITED.finditer("see `data/h200/truth/` and data/h100/x.json, not mydata/y")] == [
        "data/h200/truth",
        "data/h100/x.json",
    ]
    (tmp_path / "data" / "h200" / "call1_x.log").write_text("")
    assert exists("data/h200/call*") and exists("data/h200/session3/") and not exists("data/h200/call2_x.log")
