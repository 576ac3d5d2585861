"""Another user's files in a team folder (issue 47, items 2 and 3), mounted by two real users.

Results: a team results folder (root's, group ``team``, mode 2770 with the setgid bit, as teams set
them up) where the attacker ran ``bench --out TEAM/run.parquet`` first. The victim's same command
resumed from those files before: exit 0, the attacker's numbers became rows of the victim's run, in
files the victim then owned, and the resume line said only that configurations were kept. Now it
is refused in one line that names the file's owner and ``--resume-from-others``, the attacker's
files are left exactly as they were, and with the flag the run resumes and says whose rows it kept.

Workspace: ``hipexplore lab --workspace DIR`` accepted a folder the attacker made (0777, or its own)
and presented the notebooks planted there as the victim's. Now both are refused before JupyterLab
starts; and a link at a notebook's name in the victim's own workspace is never opened (the link
points at a FIFO: opening it would block the command until the test's timeout).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from twousers import ops, use_python_by_name, users  # noqa: F401  (users: the module's fixture)

CLI = "import sys; from hipexplore.cli import main; sys.exit(main(sys.argv[1:]))"
BENCH = [
    "bench",
    "triad",
    "--device",
    "host",
    "--size",
    "64KiB",
    "--rotating",
    "1",
    "--flush",
    "none",
    "--iterations",
    "20",
    "--units",
    "1",
    "--no-progress",
    "--in-process",
]
NAMES = ("run.parquet", "run.summary.parquet", "run.meta.json")


@pytest.fixture(scope="module", autouse=True)
def python_by_name(users) -> str:
    return use_python_by_name(users)


@pytest.fixture(scope="module")
def team(users) -> Path:
    """The team folder (root's, group team, 2770) holding the attacker's finished run.parquet."""
    d = users.base / "team-results"
    d.mkdir()
    os.chown(d, 0, users.team_gid)
    os.chmod(d, 0o2770)
    res = users.run("attacker", CLI, *BENCH, "--out", str(d / "run.parquet"), timeout=600)
    assert res.returncode == 0, res.stderr
    for name in NAMES:
        st = (d / name).lstat()
        assert st.st_uid == users.uid["attacker"] and st.st_gid == users.team_gid, (name, st)
    return d


def digests(folder: Path) -> dict[str, tuple[int, str]]:
    return {
        p.name: (p.lstat().st_uid, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def one_error(stderr: str, command: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if ": error:" in line]
    assert len(errors) == 1 and errors[0].startswith(f"hipexplore {command}: error:"), stderr
    return errors[0]


def test_the_victim_does_not_resume_from_the_attackers_results(users, team):
    before = digests(team)
    res = users.run("victim", CLI, *BENCH, "--out", str(team / "run.parquet"), timeout=600)
    assert res.returncode == 2, (res.returncode, res.stderr)
    line = one_error(res.stderr, "bench")
    assert users.names["attacker"] in line and f"uid {users.uid['attacker']}" in line, line
    assert "--resume-from-others" in line and "run.parquet" in line, line
    assert digests(team) == before  # the attacker's files, untouched (and not taken over)


def test_no_resume_does_not_replace_another_users_results_without_force(users, team):
    before = digests(team)
    res = users.run("victim", CLI, *BENCH, "--no-resume", "--out", str(team / "run.parquet"), timeout=600)
    assert res.returncode == 2, res.stderr
    line = one_error(res.stderr, "bench")
    assert users.names["attacker"] in line and "--force" in line, line
    assert digests(team) == before


def test_with_the_flag_it_resumes_and_says_whose_rows_it_kept(users, team):
    """The control, and the flag: the victim asked for the attacker's rows, and the line says so."""
    res = users.run("victim", CLI, *BENCH, "--resume-from-others", "--out", str(team / "run.parquet"), timeout=600)
    assert res.returncode == 0, res.stderr
    kept = [line for line in res.stderr.splitlines() if "resumed" in line]
    assert len(kept) == 1, res.stderr
    assert f"of {users.names['attacker']} (uid {users.uid['attacker']})'s results (--resume-from-others)" in kept[0], (
        kept
    )
    assert "not measured again: triad 64 KiB" in kept[0], kept
    for name in NAMES:  # now the victim's files, holding the rows it chose to keep
        assert (team / name).lstat().st_uid == users.uid["victim"]


def test_a_link_the_attacker_planted_at_the_out_name_is_not_resumed(users):
    """A link at run.summary.parquet to the victim's OWN earlier results elsewhere: judged by the
    link's owner, never read through."""
    d = users.base / "team-links"
    d.mkdir()
    os.chown(d, 0, users.team_gid)
    os.chmod(d, 0o2770)
    mine = users.home("victim") / "earlier"
    mine.mkdir()
    os.chown(mine, users.uid["victim"], users.gid["victim"])
    res = users.run("victim", CLI, *BENCH, "--out", str(mine / "run.parquet"), timeout=600)
    assert res.returncode == 0, res.stderr
    ops(users, "attacker", *[("symlink", str(mine / n), str(d / n)) for n in NAMES])
    before = digests(mine)
    res = users.run("victim", CLI, *BENCH, "--out", str(d / "run.parquet"), timeout=600)
    assert res.returncode == 2, res.stderr
    assert users.names["attacker"] in one_error(res.stderr, "bench")
    assert digests(mine) == before and all((d / n).is_symlink() for n in NAMES)


# -- hipexplore lab --workspace -----------------------------------------------------------------------
LAB = ["lab", "--workspace"]


@pytest.mark.parametrize("mode", [0o777, 0o755])
def test_lab_refuses_a_workspace_the_attacker_made(users, mode):
    """0777: anyone may plant there; 0755: the attacker's own folder (the victim cannot even write
    it, and whatever is in it is the attacker's)."""
    shared = users.base / f"tmp-{mode:o}"  # a folder like /tmp (1777): where the attacker can make it first
    shared.mkdir()
    os.chmod(shared, 0o1777)
    d = shared / "ws"
    ops(users, "attacker", ("mkdir", str(d), 0o777))
    ops(users, "attacker", ("mkdir", str(d / "inner"), 0o777), ("chmod", str(d), mode))
    before = sorted(p.name for p in d.iterdir())
    res = users.run("victim", CLI, *LAB, str(d), "--", "--version", timeout=300)
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    line = one_error(res.stderr, "lab")
    assert "belongs to another user" in line and f"uid {users.uid['attacker']}" in line, line
    assert sorted(p.name for p in d.iterdir()) == before  # no notebook made there
    assert not res.stdout.strip()  # JupyterLab never started (it would print its version)


@pytest.mark.parametrize("how", ["everyone", "team"])
def test_lab_refuses_an_own_workspace_others_may_write(users, how):
    """The victim's own folder, but 0777, or 2770 with the team group (the attacker is a member):
    the attacker could plant notebooks or links in it. A group-writable folder whose group is the
    victim's own (a user-private group) is the control: nobody else is in it."""
    d = users.home("victim") / f"ws-open-{how}"
    d.mkdir()
    os.chown(d, users.uid["victim"], users.team_gid if how == "team" else users.gid["victim"])
    os.chmod(d, 0o777 if how == "everyone" else 0o2770)
    res = users.run("victim", CLI, *LAB, str(d), "--", "--version", timeout=300)
    assert res.returncode == 2, res.stderr
    line = one_error(res.stderr, "lab")
    said = (
        "writable by every user (mode 0777)"
        if how == "everyone"
        else f"writable by its group, gid {users.team_gid}, which has other members (mode 2770)"
    )
    assert said in line, line
    assert list(d.iterdir()) == []
    os.chown(d, users.uid["victim"], users.gid["victim"])  # the victim's private group: the victim alone
    os.chmod(d, 0o770)
    res = users.run("victim", CLI, *LAB, str(d), "--", "--version", timeout=300)
    assert res.returncode == 0 and "dashboard.ipynb (new)" in res.stderr, res.stderr


def test_a_link_in_an_own_workspace_is_never_opened(users):
    """dashboard.ipynb in the victim's own 0700 workspace is a link to a FIFO: hipexplore must
    neither read it (the command would block) nor write through it; one line, exit 2."""
    d = users.home("victim") / "ws-link"
    d.mkdir()
    fifo = users.home("victim") / "trap.fifo"
    os.mkfifo(fifo)
    for p in (d, fifo):
        os.chown(p, users.uid["victim"], users.gid["victim"])
    os.chmod(d, 0o700)
    os.symlink(fifo, d / "dashboard.ipynb")
    os.lchown(d / "dashboard.ipynb", users.uid["victim"], users.gid["victim"])
    res = users.run("victim", CLI, *LAB, str(d), "--", "--version", timeout=120)
    assert res.returncode == 2, res.stderr
    line = one_error(res.stderr, "lab")
    assert "dashboard.ipynb there is a symbolic link" in line, line
    assert sorted(p.name for p in d.iterdir()) == ["dashboard.ipynb"]  # nothing made beside it, the link left
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_the_victims_own_workspace_opens(users):
    """The control: a folder of the victim's own (0700) gets its copies and JupyterLab starts."""
    d = users.home("victim") / "ws-own"
    res = users.run("victim", CLI, *LAB, str(d), "--", "--version", timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip()[:1].isdigit(), res.stdout
    st = d.lstat()
    assert st.st_uid == users.uid["victim"] and stat.S_IMODE(st.st_mode) == 0o700
    assert "dashboard.ipynb (new)" in res.stderr
