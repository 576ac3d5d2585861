"""A copy of this checkout as a user's fresh clone has it, for the tests that build, install or run
from one (tests/e2e/test_install.py, tests/browser/test_dashboard_in_lab.py).

Why not ``git clone``: a clone holds the last commit, and the tests must see the working tree being
tested (uncommitted edits included). So the files git would commit (tracked and untracked, less
the ignored ones and the deleted ones) are copied, symlinks as symlinks (``hipexplore/notebooks``),
and with ``commit=True`` committed into a new repository: ``git status`` there starts clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: who commits in the copy (no user configuration is read: HOME is the tests' temporary one)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "hipexplore tests",
    "GIT_AUTHOR_EMAIL": "tests@localhost",
    "GIT_COMMITTER_NAME": "hipexplore tests",
    "GIT_COMMITTER_EMAIL": "tests@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(*args: str, cwd: Path, timeout: float = 120) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **GIT_ENV}
    )
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd} failed: {out.stderr.strip()}")
    return out.stdout


def files(root: Path = ROOT) -> list[str]:
    """The files of the working tree that a commit would hold (tracked or not, never ignored)."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=root).split("\0")
    return sorted({f for f in listed if f and os.path.lexists(root / f)})


def copy_checkout(dest: Path, *, commit: bool = False, root: Path = ROOT) -> Path:
    """Copy the working tree's files into ``dest`` (created); with ``commit``, make it a repository
    whose one commit holds them all."""
    dest.mkdir(parents=True)
    for rel in files(root):
        src, dst = root / rel, dest / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)
    if commit:
        git("init", "-q", "-b", "main", cwd=dest)
        git("add", "-A", cwd=dest)
        git("commit", "-q", "-m", "the tree under test", cwd=dest)
    return dest


def status(repo: Path) -> str:
    """``git status --porcelain`` (untracked files included): empty for a clean tree."""
    return git("status", "--porcelain", "--untracked-files=all", cwd=repo)
