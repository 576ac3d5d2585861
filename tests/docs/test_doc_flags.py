"""Every ``--flag`` the documentation names exists where it is named (issue 49.5).

``docs/guide/harness.md`` told readers to pass ``--keep-throttled``; the flag is
``--no-drop-throttled``, and nothing noticed: the examples run (tests/docs/test_doc_examples.py), but
prose and inline code do not. Here every code span and code-block line of README.md and docs/**/*.md
is read as shell: a ``hipexplore SUBCOMMAND`` command line's flags must be options of that
subcommand's real parser (``hipexplore.cli.build_parser``: exactly, no abbreviation), a flag of one of
the project's own scripts (``benchmarks/*.py``, ``scripts/*.py``, ``setup.sh``) must be in that file,
and a flag named alone (`` `--no-drop-throttled` ``) must be one of hipexplore's. Other programs'
command lines (ncu, pip, pytest, dask, JupyterLab after ``--``) name their own flags and are left
to them; a lone flag that is another program's is listed in ``FOREIGN`` with its program.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from hipexplore.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FLAG = re.compile(r"^--[a-z][a-z0-9-]*")
#: flags that appear in a code span with no program before them, and the program that has them
FOREIGN = {
    "--replay-mode": "ncu",
    "--cache-control": "ncu",
    "--clock-control": "ncu",
    "--metrics": "ncu",
    "--profile-from-start": "ncu",
    "--pmc": "rocprofv3",
    "--include-path": "nvrtc",
    "--include-directory": "hiprtc",
    "--dev": "setup.sh",
    "--jsonbin": "nvbench (cuda-bench)",
}
#: a word before which a flag belongs to another program (the segment's program is that one)
SHELL_SPLIT = re.compile(r"\s(?:\||&&|\|\||;)\s|\$\(|:\s")


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    top = build_parser(None)
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return top, dict(sub.choices)


def code_regions(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every code-block line (a line ending in ``\\`` joined with the next)
    and every inline code span (tables too)."""
    out, fence, carried = [], None, None
    for no, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            fence = None if fence and m.group(1).startswith(fence[:3]) else (m.group(1) if fence is None else fence)
            continue
        if fence:
            if carried is not None:
                no, line = carried[0], carried[1] + " " + line
            carried = (no, line.rstrip()[:-1]) if line.rstrip().endswith("\\") else None
            if carried is None:
                out.append((no, line))
        else:
            out += [(no, span) for span in re.findall(r"``?([^`]+)``?", line)]
    return out


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=True)
    except ValueError:  # an unbalanced quote in prose-like code: plain words
        return segment.split()


def flag_problems(page: Path, top: argparse.ArgumentParser, subs: dict[str, argparse.ArgumentParser]) -> list[str]:
    """Each flag of ``page`` that is not where it is named, as ``page:line: why``."""
    union = set(top._option_string_actions).union(*(set(p._option_string_actions) for p in subs.values()))
    problems = []
    for no, region in code_regions(page.read_text(encoding="utf-8")):
        for segment in SHELL_SPLIT.split(region):
            problems += [f"{page.relative_to(REPO)}:{no}: {why}" for why in _segment(_words(segment), top, subs, union)]
    return problems


def _segment(
    words: list[str], top: argparse.ArgumentParser, subs: dict[str, argparse.ArgumentParser], union: set[str]
) -> list[str]:
    i = 0
    while i < len(words) and re.match(r"^[A-Z_][A-Z0-9_]*=", words[i]):  # VAR=value before the program
        i += 1
    if i >= len(words):
        return []
    program, rest = words[i], words[i + 1 :]
    name = program.rsplit("/", 1)[-1]
    if name == "hipexplore" or (name.startswith("python") and rest[:2] == ["-m", "hipexplore"]):
        rest = rest[2:] if name != "hipexplore" else rest
        return _hipexplore(rest, top, subs)
    script = next(
        (w for w in ([program] if name.endswith((".py", ".sh")) else rest[:1]) if w.endswith((".py", ".sh"))), None
    )
    if (
        script
        and (REPO / script.lstrip("./")).is_file()
        and name in (script.rsplit("/", 1)[-1], "python", "python3", "bash")
    ):
        text = (REPO / script.lstrip("./")).read_text(encoding="utf-8")
        return [
            f"{flag} is not an option of {script}"
            for flag in _flags(rest)
            if f'"{flag}"' not in text and f"'{flag}'" not in text and f"{flag})" not in text and f"{flag}|" not in text
        ]
    if FLAG.match(program):  # a flag named alone, or a flag list: hipexplore's, or a known program's
        return [
            f"{flag} is no option of hipexplore"
            for flag in _flags(words[i:])
            if flag not in union and flag not in FOREIGN
        ]
    return []  # another program's command line: its flags are its own


def _flags(words: list[str]) -> list[str]:
    out = []
    for w in words:
        if w == "--":
            break  # what follows goes to another program (hipexplore lab -- JUPYTERLAB OPTIONS)
        m = FLAG.match(w)
        if m:
            out.append(m.group(0))
    return out


def _hipexplore(words: list[str], top: argparse.ArgumentParser, subs: dict[str, argparse.ArgumentParser]) -> list[str]:
    command = next((w for w in words if not w.startswith("-")), None)
    if command is None:
        return [f"{f} is no option of hipexplore" for f in _flags(words) if f not in top._option_string_actions]
    if command not in subs:
        return [] if not re.fullmatch(r"[a-z][a-z-]*", command) else [f"hipexplore has no subcommand {command!r}"]
    known = subs[command]._option_string_actions
    return [f"{flag} is not an option of hipexplore {command}" for flag in _flags(words) if flag not in known]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_flag_the_docs_name_is_a_real_option(page):
    top, subs = _parsers()
    assert flag_problems(page, top, subs) == []


def test_the_check_finds_a_flag_that_does_not_exist(tmp_path):
    """The check itself fails on what it is for: the flag harness.md named, alone, on a command
    line of its subcommand, of another subcommand, and one of a script's."""
    top, subs = _parsers()
    page = REPO / "docs" / "_flag_probe.md"
    cases = {
        "`--keep-throttled` keeps them": "--keep-throttled is no option of hipexplore",
        "`hipexplore bench triad --keep-throttled`": "--keep-throttled is not an option of hipexplore bench",
        "`hipexplore compare a.parquet b.parquet --no-drop-throttled`": "--no-drop-throttled is not an option of hipexplore compare",
        "`python3 scripts/gen_docs.py --no-such-flag`": "--no-such-flag is not an option of scripts/gen_docs.py",
    }
    try:
        for text, why in cases.items():
            page.write_text(f"Some prose, then {text}.\n", encoding="utf-8")
            assert flag_problems(page, top, subs) == [f"docs/_flag_probe.md:1: {why}"], text
        page.write_text(
            "`--no-drop-throttled` keeps them; `hipexplore lab -- --no-browser --port 8890`; "
            "`hipexplore bench triad --resume-from-others`; `python3 scripts/gen_docs.py --check`\n",
            encoding="utf-8",
        )
        assert flag_problems(page, top, subs) == []
    finally:
        page.unlink(missing_ok=True)
