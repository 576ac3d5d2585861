"""The victim's own files overwritten through names another user can guess (security review, item 3).

Every attack is MOUNTED by a real second user (``twousers``): the victim runs a hipexplore command
that writes into a folder the attacker can write too (a 1777 folder like /tmp, and a team results
folder, root-owned, group ``team``, mode 2770), and the attacker plants symlinks to the victim's
``precious`` files (in the victim's own home, outside the folder) at every name the writer used:

  * the temp names the writers built from the pid (``.run.parquet.<pid>.tmp``, ``.l.jsonl.tmp<pid>``):
    the victim's command starts through ``WRAPPER``, which prints its pid and waits on stdin before
    ``os.execv`` (same pid), so the links are in place before the victim writes anything;
  * the final names (``run.parquet``, ``l.jsonl``, ``k.so``, ``r.html``, ``r.ipynb``);
  * the dump stem folder of ``compile --diagnostic dump-source`` (the stem is predictable: the
    attacker makes it first, with links inside, or makes it a link to a folder of the victim's).

Each run must leave every precious file (and everything else in the victim's home) exactly as it
was, and either write the victim's own regular file or refuse in ONE line with exit status 2. On the
code before ``hipexplore.files`` (pid temp names, ``write_text`` into ``exist_ok`` stem folders,
papermill writing ``--notebook-out`` itself) the precious files became parquet, JSON, a list, a
dumped source and a notebook, and in the team folder the bench run even exited 0.
"""

from __future__ import annotations

import hashlib
import os
import select
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from twousers import ops, use_python_by_name, users  # noqa: F401  (users: the module's fixture)

#: Prints this process's pid, waits for a line on stdin (the attacker plants meanwhile), then
#: becomes ``python -m hipexplore ARGS`` with the same pid.
WRAPPER = r"""
import os, sys
print(os.getpid(), flush=True)
sys.stdin.readline()
os.execv(sys.executable, [sys.executable, "-m", "hipexplore", *sys.argv[1:]])
"""

#: ``hipexplore ARGS`` in this process (for the runs nobody attacks)
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
]
TUNE = ["tune-replay", "--compiler", "host", "--problems", "1", "--limit", "1", "--dry-run", "--quiet"]
KERNEL_C = "void k(float* x) { x[0] = 1.0f; }\n"
KINDS = ("sticky", "team")


@pytest.fixture(scope="module")
def keep(users):
    """The victim's precious folder (0700, in its own home, outside every shared folder)."""
    d = users.home("victim") / "keep"
    d.mkdir()
    os.chown(d, users.uid["victim"], users.gid["victim"])
    os.chmod(d, 0o700)
    src = users.home("victim") / "k.c"
    src.write_text(KERNEL_C)
    os.chown(src, users.uid["victim"], users.gid["victim"])
    return d


def precious(users, keep: Path, name: str) -> Path:
    """A victim file the attacker cannot read but can point a link at."""
    p = keep / name
    p.write_text(f"precious {name}: the victim's own data\n")
    os.chown(p, users.uid["victim"], users.gid["victim"])
    os.chmod(p, 0o600)
    return p


def shared_folder(users, kind: str, name: str) -> Path:
    """A fresh folder both users write into: ``sticky`` (1777, root's, like /tmp) or ``team``
    (root's, group team, 2770: a team results folder, no sticky bit)."""
    d = users.base / f"{kind}-{name}"
    d.mkdir()
    if kind == "sticky":
        os.chmod(d, 0o1777)
    else:
        os.chown(d, 0, users.team_gid)
        os.chmod(d, 0o2770)
    return d


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: kind, owner, mode and content digest (links by their target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath, name)
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[str(p)] = ("link", st.st_uid, os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                out[str(p)] = ("file", st.st_uid, stat.S_IMODE(st.st_mode), hashlib.sha256(p.read_bytes()).hexdigest())
            else:
                out[str(p)] = ("dir", st.st_uid, stat.S_IMODE(st.st_mode))
    return out


def victim_home_snapshot(users) -> dict[str, tuple]:
    """The victim's data: everything in its home but ``tmp`` and the dot folders hipexplore, Jupyter
    and the compile cache keep there."""
    home = users.home("victim")
    return {
        k: v
        for k, v in snapshot(home).items()
        if not (Path(k).relative_to(home).parts[0].startswith(".") or Path(k).relative_to(home).parts[0] == "tmp")
    }


@pytest.fixture(scope="module", autouse=True)
def python_by_name(users) -> str:
    """This module's users start hipexplore's children by name (``twousers.python_by_name``)."""
    return use_python_by_name(users)


def run_victim(
    users, args: list[str], plant=None, env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """The victim's ``hipexplore ARGS`` through ``WRAPPER``: ``plant(pid)`` runs (as the attacker)
    once the pid is known and before the command starts."""
    proc = users.start("victim", WRAPPER, *args, env=env)
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready, "the victim's wrapper did not print its pid within 60 s"
    pid = int(proc.stdout.readline())
    if plant is not None:
        plant(pid)
    out, err = proc.communicate("\n", timeout=timeout)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def wrote_or_refused(res: subprocess.CompletedProcess, command: str, own: list[Path], uid: int) -> str:
    """The run wrote each of ``own`` as the victim's regular file (exit 0), or refused in one line
    (exit 2). Returns which."""
    assert "Traceback" not in res.stderr, res.stderr
    if res.returncode == 0:
        for p in own:
            st = p.lstat()
            assert stat.S_ISREG(st.st_mode) and st.st_uid == uid, f"{p} is not the victim's own file: {st}"
        return "wrote"
    errors = [line for line in res.stderr.splitlines() if ": error:" in line]
    assert res.returncode == 2 and len(errors) == 1 and errors[0].startswith(f"hipexplore {command}: error:"), (
        res.returncode,
        res.stderr,
    )
    return "refused"


def attack(
    users,
    keep,
    kind: str,
    name: str,
    links: list[str],
    args: list[str],
    own: list[str],
    command: str,
    env: dict | None = None,
) -> tuple[str, str]:
    """Plant ``links`` (names in a fresh shared folder, ``{pid}`` filled in) to precious files of the
    victim's (made here) as the attacker, run the victim's command, check nothing of the victim's
    changed, and return its outcome (``wrote_or_refused``) and stderr. ``args``/``own``: ``{d}`` is the folder."""
    d = shared_folder(users, kind, name)
    targets = {link: precious(users, keep, f"{kind}-{name}-{i}") for i, link in enumerate(links)}
    before = victim_home_snapshot(users)

    def plant(pid: int) -> None:
        ops(users, "attacker", *[("symlink", str(t), str(d / link.format(pid=pid))) for link, t in targets.items()])

    res = run_victim(users, [a.format(d=d) for a in args], plant, env=env)
    after = victim_home_snapshot(users)
    assert after == before, f"victim files changed: {set(after.items()) ^ set(before.items())}\n{res.stderr}"
    for t in targets.values():
        assert t.read_text() == f"precious {t.name}: the victim's own data\n"
    return wrote_or_refused(res, command, [Path(o.format(d=d)) for o in own], users.uid["victim"]), res.stderr


# -- bench --out: samples, summary, meta.json --------------------------------------------------------
BENCH_TEMPS = [".run.parquet.{pid}.tmp", ".run.summary.parquet.{pid}.tmp", ".run.meta.json.{pid}.tmp"]
BENCH_FINALS = ["run.parquet", "run.summary.parquet", "run.meta.json"]


@pytest.mark.parametrize("kind", KINDS)
def test_bench_out_never_writes_through_planted_temp_names(users, keep, kind):
    outcome, err = attack(
        users,
        keep,
        kind,
        "bench-temp",
        BENCH_TEMPS,
        [*BENCH, "--out", "{d}/run.parquet"],
        [f"{{d}}/{n}" for n in BENCH_FINALS],
        "bench",
    )
    assert outcome == "wrote", err  # the guessed names are not used: the run writes its own files, undisturbed


@pytest.mark.parametrize("kind", KINDS)
def test_bench_out_never_writes_through_links_at_the_final_names(users, keep, kind):
    outcome, err = attack(
        users,
        keep,
        kind,
        "bench-final",
        [*BENCH_TEMPS, *BENCH_FINALS],
        [*BENCH, "--no-resume", "--out", "{d}/run.parquet"],
        [f"{{d}}/{n}" for n in BENCH_FINALS],
        "bench",
    )
    # the team folder lets the victim replace the attacker's links; in a sticky one only their owner may
    assert outcome == ("wrote" if kind == "team" else "refused"), err


# -- tune-replay --export-list -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_export_list_never_writes_through_planted_names(users, keep, kind):
    outcome, err = attack(
        users,
        keep,
        kind,
        "list-temp",
        [".l.jsonl.tmp{pid}"],
        [*TUNE, "--export-list", "{d}/l.jsonl"],
        ["{d}/l.jsonl"],
        "tune-replay",
    )
    assert outcome == "wrote", err
    outcome, err = attack(
        users,
        keep,
        kind,
        "list-final",
        [".l.jsonl.tmp{pid}", "l.jsonl"],
        [*TUNE, "--export-list", "{d}/l.jsonl"],
        ["{d}/l.jsonl"],
        "tune-replay",
    )
    assert outcome == ("wrote" if kind == "team" else "refused"), err


# -- compile --out (mkstemp before; kept) ------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_compile_out_replaces_a_link_at_its_name_never_follows_it(users, keep, kind):
    src = str(users.home("victim") / "k.c")
    outcome, err = attack(
        users,
        keep,
        kind,
        "compile-out",
        ["k.so"],
        ["compile", src, "--compiler", "host", "--out", "{d}/k.so"],
        ["{d}/k.so"],
        "compile",
    )
    assert outcome == ("wrote" if kind == "team" else "refused"), err


# -- compile --diagnostic dump-source into a shared HIPEXPLORE_DUMP_DIR ------------------------------
def dump_stem(users) -> str:
    """The stem the victim's request dumps under (predictable: anyone with the same source computes it)."""
    private = users.home("victim") / "tmp" / "stem-probe"
    res = users.run(
        "victim",
        CLI,
        "compile",
        str(users.home("victim") / "k.c"),
        "--compiler",
        "host",
        "--diagnostic",
        "dump-source",
        "--json",
        env=users.env("victim", HIPEXPLORE_DUMP_DIR=str(private)),
    )
    assert res.returncode == 0, res.stderr
    (stem,) = os.listdir(private)
    return stem


@pytest.mark.parametrize("kind", KINDS)
def test_dump_source_never_writes_into_a_stem_folder_the_attacker_made(users, keep, kind):
    stem = dump_stem(users)
    d = shared_folder(users, kind, "dump-folder")
    targets = {n: precious(users, keep, f"dump-{kind}-{n}") for n in ("k.c", "options.txt")}
    ops(
        users,
        "attacker",
        ("mkdir", str(d / stem), 0o777),
        *[("symlink", str(t), str(d / stem / n)) for n, t in targets.items()],
    )
    before = victim_home_snapshot(users)
    args = ["compile", str(users.home("victim") / "k.c"), "--compiler", "host", "--diagnostic", "dump-source"]
    res = run_victim(users, args, env=users.env("victim", HIPEXPLORE_DUMP_DIR=str(d)))
    assert victim_home_snapshot(users) == before, res.stderr
    assert wrote_or_refused(res, "compile", [], users.uid["victim"]) == "refused"
    assert "belongs to another user" in res.stderr
    assert all(os.readlink(d / stem / n) == str(t) for n, t in targets.items())  # the attacker's links, untouched


@pytest.mark.parametrize("kind", KINDS)
def test_dump_source_never_follows_a_stem_link_to_a_victim_folder(users, keep, kind):
    stem = dump_stem(users)
    d = shared_folder(users, kind, "dump-link")
    project = users.home("victim") / f"project-{kind}"  # a folder of the victim's holding its own options.txt
    project.mkdir()
    (project / "options.txt").write_text("the victim's own options\n")
    for p in (project, project / "options.txt"):
        os.chown(p, users.uid["victim"], users.gid["victim"])
    ops(users, "attacker", ("symlink", str(project), str(d / stem)))
    before = victim_home_snapshot(users)
    args = ["compile", str(users.home("victim") / "k.c"), "--compiler", "host", "--diagnostic", "dump-source"]
    res = run_victim(users, args, env=users.env("victim", HIPEXPLORE_DUMP_DIR=str(d)))
    assert victim_home_snapshot(users) == before, res.stderr
    assert wrote_or_refused(res, "compile", [], users.uid["victim"]) == "refused"
    assert "symbolic link" in res.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_dump_source_in_a_shared_folder_writes_the_victims_own_stem(users, keep, kind):
    """The control: with no attack, the dump lands in a stem folder of the victim's, writable by it alone."""
    d = shared_folder(users, kind, "dump-clean")
    args = ["compile", str(users.home("victim") / "k.c"), "--compiler", "host", "--diagnostic", "dump-source"]
    res = run_victim(users, args, env=users.env("victim", HIPEXPLORE_DUMP_DIR=str(d)))
    assert res.returncode == 0, res.stderr
    (stem,) = os.listdir(d)
    st = (d / stem).lstat()
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == users.uid["victim"] and not st.st_mode & 0o022
    assert (d / stem / "k.c").read_text() == KERNEL_C and not (d / stem / "k.c").is_symlink()


# -- the executed notebook (report --notebook-out, execute_notebook(output=...)) ----------------------
#: As the victim: run a notebook, keeping the executed copy at argv[1] (``report --notebook-out``'s path).
RUN_NOTEBOOK = r"""
import sys
from hipexplore.errors import HipexploreError
from hipexplore.report.notebooks import execute_notebook
try:
    execute_notebook("compile_cache", {"problems": 1, "candidates": 1}, output=sys.argv[1], timeout=300)
except HipexploreError as exc:
    print(f"hipexplore report: error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


def test_executed_notebook_never_written_through_a_link_at_its_name(users, keep):
    """papermill opened the output path itself (following a link there) and wrote the executed
    notebook into the precious file. One run, in the team folder (a notebook takes about a minute
    here). The HTML export after it, ``report --out``, cannot run as the test users on this machine
    (nbconvert's CSS selectors fail on the system's Python 3.11.2); that output was written through
    a temp file and a rename before, and now goes through the same helper."""
    kind = "team"
    d = shared_folder(users, kind, "notebook")
    target = precious(users, keep, f"{kind}-notebook")
    ops(users, "attacker", ("symlink", str(target), str(d / "r.ipynb")))
    before = victim_home_snapshot(users)
    res = users.run("victim", RUN_NOTEBOOK, str(d / "r.ipynb"), env=users.env("victim"), timeout=400)
    assert victim_home_snapshot(users) == before, res.stderr
    outcome = wrote_or_refused(res, "report", [d / "r.ipynb"], users.uid["victim"])
    assert outcome == "wrote", res.stderr  # the victim may replace the attacker's link in a team folder
    assert '"cell_type"' in (d / "r.ipynb").read_text()


def test_the_attack_reaches_the_precious_files_when_written_naively(users, keep):
    """The control for every test here: the planted link works (a plain ``open(path, "w")`` by the
    victim writes through it into the precious file), so a pass above is hipexplore refusing to."""
    d = shared_folder(users, "team", "control")
    target = precious(users, keep, "control")
    ops(users, "attacker", ("symlink", str(target), str(d / "out.txt")))
    res = users.run("victim", "import sys; open(sys.argv[1], 'w').write('clobbered')", str(d / "out.txt"))
    assert res.returncode == 0, res.stderr
    assert target.read_text() == "clobbered"
    shutil.rmtree(d)
