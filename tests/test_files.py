"""``hipexplore.files``: a write that fails or is killed half-way leaves the old file and no temp
file; a link at the final name is replaced, never followed; the mode is the umask's; the folders
``own_folder`` accepts are this user's own. (The attacks with a real second user are in
tests/security/test_security_writes.py.)"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hipexplore import files
from hipexplore.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def _old(tmp_path: Path) -> Path:
    p = tmp_path / "result.bin"
    p.write_bytes(b"the old result\n")
    return p


@pytest.fixture(params=["tmpfile", "named"])
def temp_kind(request, monkeypatch):
    """Both ways to the temp file: an unnamed O_TMPFILE inode, and the exclusive random name used
    where the file system has no O_TMPFILE."""
    if request.param == "named":
        monkeypatch.setattr(files, "_TMPFILE", 0)
    elif not files._TMPFILE:
        pytest.fail("O_TMPFILE expected on this Linux file system (tmp_path)")
    return request.param


def test_a_writer_that_raises_half_way_leaves_the_old_file_and_no_temp(tmp_path, temp_kind):
    old = _old(tmp_path)

    def half(fh):
        fh.write(b"x" * 100_000)
        raise RuntimeError("the writer failed half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        files.write_file(old, half)
    assert old.read_bytes() == b"the old result\n"
    assert sorted(os.listdir(tmp_path)) == ["result.bin"]


def test_a_failing_disk_write_is_one_line_and_keeps_the_old_file(tmp_path, temp_kind):
    old = _old(tmp_path)

    def full(fh):
        fh.write(b"partial")
        fh.flush()
        raise OSError(28, "No space left on device")

    with pytest.raises(ConfigError) as info:
        files.write_file(old, full, what="samples file")
    assert str(info.value) == (
        f"cannot write samples file {str(old)!r}: No space left on device; an existing file there was left as it was"
    )
    assert old.read_bytes() == b"the old result\n" and sorted(os.listdir(tmp_path)) == ["result.bin"]


#: As a child: write argv[1] in 1 MiB pieces, printing "writing" after the first, forever (until killed).
KILLED_WRITER = r"""
import sys, time
from hipexplore import files
if sys.argv[2] == "named":
    files._TMPFILE = 0
def slow(fh):
    fh.write(b"n" * (1 << 20)); fh.flush()
    print("writing", flush=True)
    while True:
        fh.write(b"n" * (1 << 20)); fh.flush(); time.sleep(0.05)
files.write_file(sys.argv[1], slow)
"""


def test_a_process_killed_mid_write_leaves_the_old_file_and_no_temp(tmp_path):
    old = _old(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(old), "tmpfile"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout.readline().strip() == "writing"
        time.sleep(0.2)  # a few MiB more under way
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert old.read_bytes() == b"the old result\n"
    assert sorted(os.listdir(tmp_path)) == ["result.bin"]  # the unnamed inode went with the process


def test_a_process_killed_mid_write_without_o_tmpfile_leaves_the_old_file(tmp_path):
    """Without O_TMPFILE a killed writer leaves its hidden random temp (nothing can remove it in a
    SIGKILLed process), never a changed result."""
    old = _old(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(old), "named"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout.readline().strip() == "writing"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert old.read_bytes() == b"the old result\n"
    left = sorted(set(os.listdir(tmp_path)) - {"result.bin"})
    assert len(left) == 1 and left[0].startswith(".result.bin.") and left[0].endswith(".tmp")


def test_a_link_at_the_final_name_is_replaced_never_followed(tmp_path, temp_kind):
    precious = tmp_path / "precious"
    precious.write_text("keep")
    out = tmp_path / "out.txt"
    out.symlink_to(precious)
    files.write_file(out, "new")
    assert precious.read_text() == "keep"
    assert not out.is_symlink() and out.read_text() == "new"


def test_the_mode_is_the_umask_s_and_the_content_every_kind(tmp_path, temp_kind):
    old = os.umask(0o027)
    try:
        files.write_file(tmp_path / "t.txt", "grüße")
        files.write_file(tmp_path / "b.bin", b"\x00\x01")
        files.write_file(tmp_path / "f.bin", lambda fh: fh.write(b"from a writer"))
    finally:
        os.umask(old)
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "grüße"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01" and (tmp_path / "f.bin").read_bytes() == b"from a writer"
    assert {stat.S_IMODE((tmp_path / n).stat().st_mode) for n in ("t.txt", "b.bin", "f.bin")} == {0o640}
    assert files.umask() == old and os.umask(old) == old  # read from /proc, without changing it


def test_a_folder_at_the_name_and_a_missing_folder_are_one_line(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(ConfigError, match=r"cannot write file '.*/d': it is a folder; expected a file name"):
        files.write_file(tmp_path / "d", "x")
    with pytest.raises(
        ConfigError, match=r"cannot write list '.*/missing/l.jsonl': its folder '.*/missing': No such file"
    ):
        files.write_file(tmp_path / "missing" / "l.jsonl", "x", what="list")


def test_own_folder_makes_or_accepts_only_this_users_private_folder(tmp_path):
    parent = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = files.own_folder(parent, "stem", what="dump", shown="stem")
        os.close(fd)
        assert not (tmp_path / "stem").stat().st_mode & 0o022
        os.close(files.own_folder(parent, "stem", what="dump", shown="stem"))  # an earlier one of ours: fine
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(ConfigError, match="symbolic link or not a folder; refused"):
            files.own_folder(parent, "link", what="dump", shown="link")
        (tmp_path / "open").mkdir()
        os.chmod(tmp_path / "open", 0o777)
        with pytest.raises(ConfigError, match=r"is writable by others \(mode 0777, not sticky\); refused"):
            files.own_folder(parent, "open", what="dump", shown="open")
        os.chmod(tmp_path / "open", 0o1777)
        os.close(
            files.own_folder(parent, "open", what="dump", shown="open")
        )  # ours and sticky: others cannot replace our files
        if os.geteuid() == 0:  # another owner: the real second user's case is in tests/security
            (tmp_path / "theirs").mkdir()
            os.chown(tmp_path / "theirs", 65534, 65534)
            with pytest.raises(ConfigError, match=r"belongs to another user \(uid 65534\)"):
                files.own_folder(parent, "theirs", what="dump", shown="theirs")
        with pytest.raises(ConfigError, match="must be a relative path"):
            files.write_below(parent, "a/../../x", "x", what="dump", shown_dir=str(tmp_path))
        assert (
            files.write_below(parent, "stem/include/h.h", "h", what="dump", shown_dir=str(tmp_path))
            == tmp_path / "stem/include/h.h"
        )
        assert (tmp_path / "stem/include/h.h").read_text() == "h"
    finally:
        os.close(parent)


def test_check_replace_refuses_a_foreign_file_reads_no_link_and_waits_on_no_fifo(tmp_path):
    """``check_replace``: a regular file that is not what the command writes is refused in one line
    and left as it was; its own kind, an empty file, ``force`` and a missing name pass; a link at
    the name is not read through (``write_file`` replaces the link, never what it points at), and
    a FIFO planted at the name neither blocks nor is refused (the write replaces it)."""
    ours = lambda head: head.startswith(b"OURS")  # noqa: E731
    mine = tmp_path / "notes.txt"
    mine.write_bytes(b"my notes\n")
    with pytest.raises(ConfigError) as err:
        files.check_replace(mine, "--out", "a thing hipexplore writes", ours)
    assert str(err.value) == (
        f"--out {str(mine)!r} exists and is not a thing hipexplore writes; it was left as it is: "
        f"choose another file, or pass --force to replace it"
    )
    assert mine.read_bytes() == b"my notes\n"
    files.check_replace(mine, "--out", "x", ours, force=True)
    (tmp_path / "own").write_bytes(b"OURS v1")
    files.check_replace(tmp_path / "own", "--out", "x", ours)
    (tmp_path / "empty").write_bytes(b"")
    files.check_replace(tmp_path / "empty", "--out", "x", ours)
    files.check_replace(tmp_path / "missing", "--out", "x", ours)
    link = tmp_path / "link"
    link.symlink_to(mine)
    files.check_replace(link, "--out", "x", ours)  # not read through: the write will replace the link itself
    files.write_file(link, b"OURS v2")
    assert mine.read_bytes() == b"my notes\n" and not link.is_symlink() and link.read_bytes() == b"OURS v2"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    files.check_replace(fifo, "--out", "x", ours)
    assert time.monotonic() - started < 5


def test_bounded_name_keeps_short_names_and_bounds_the_rest(tmp_path):
    """A kernel name becomes a file name (issue 47.4): short names are kept as they were (their
    compile keys do not move); a 300-character one, a slash or a leading dot becomes a bounded,
    hashed name that the file system takes, distinct names staying distinct."""
    from hipexplore.files import NAME_MAX_BYTES, bounded_name

    assert bounded_name("saxpy", ".c") == "saxpy.c"
    assert bounded_name("k" * 95, ".cu") == "k" * 95 + ".cu"
    long = [
        bounded_name("k" * 300, ".c"),
        bounded_name("k" * 299 + "j", ".c"),
        bounded_name("ü" * 200, ".hip"),
        bounded_name("../../etc/passwd", ".c"),
        bounded_name(".hidden", ".c"),
        bounded_name("a\0b", ".c"),
    ]
    assert len(set(long)) == len(long)
    for name in long:
        assert (
            len(name.encode()) <= NAME_MAX_BYTES and "/" not in name and "\0" not in name and not name.startswith(".")
        )
        (tmp_path / name).write_text("x")  # the file system takes it
    assert long[0].startswith("k" * 40 + "-") and long[0].endswith(".c")
