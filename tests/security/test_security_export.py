"""``bench --export FORMAT FILE`` and ``report --format markdown --out DIR`` into a folder of another
user (issue 46): refused in one line with exit status 2 before the sweep starts, and nothing is
written (no export, no ``--out`` result). Mounted by two real users (``twousers``): the attacker
makes a folder everyone may write in its own home; the victim's command names a file there."""

from __future__ import annotations

import os

import pytest

from twousers import ops, users  # noqa: F401  (users: the module's fixture)

CLI = "import sys; from hipexplore.cli import main; sys.exit(main(sys.argv[1:]))"
K_C = "void k(float* y, const float* x, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) y[i] += x[i]; }\n"


@pytest.fixture(scope="module")
def trap(users):
    """The attacker's folder (mode 0777) and the victim's kernel file and results folder."""
    folder = users.home("attacker") / "drop"
    ops(users, "attacker", ("mkdir", str(folder), 0o777))
    work = users.home("victim") / "work"
    work.mkdir()
    (work / "k.c").write_text(K_C)
    os.chown(work, users.uid["victim"], users.gid["victim"])
    os.chown(work / "k.c", users.uid["victim"], users.gid["victim"])
    return folder, work


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fmt", ["nvbench", "pyperf", "bencher"])
def test_an_export_into_another_users_folder_is_one_line_exit_2_nothing_written(users, trap, fmt):
    folder, work = trap
    target = folder / f"r.{fmt}.json"
    got = users.run(
        "victim",
        CLI,
        "bench",
        "k",
        "--source",
        str(work / "k.c"),
        "--args",
        "inout:y:f32[n], in:x:f32[n], n:u64=n",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "8",
        "--units",
        "1",
        "--no-progress",
        "--out",
        str(work / f"r-{fmt}.parquet"),
        "--export",
        fmt,
        str(target),
    )
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 2 and len(lines) == 1, got.stderr
    assert "belongs to another user" in lines[0] and str(folder) in lines[0]
    assert not target.exists() and not os.listdir(folder)
    assert not (work / f"r-{fmt}.parquet").exists() and not (work / f"r-{fmt}.meta.json").exists()


@pytest.mark.timeout(300)
def test_the_review_comment_into_another_users_folder_is_refused(users, trap):
    folder, work = trap
    got = users.run(
        "victim",
        CLI,
        "report",
        "--format",
        "markdown",
        "--run",
        str(work / "none.parquet"),
        "--baseline",
        "A",
        "--candidate",
        "B",
        "--out",
        str(folder / "review"),
    )
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 2 and len(lines) == 1, got.stderr
    assert "belongs to another user" in lines[0], lines
    assert not os.listdir(folder)
