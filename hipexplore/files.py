"""Writing a user-visible file so that nobody else's link, file or folder can redirect it.

Why one helper at the lowest floor: results, summaries, meta.json, list exports, compile and report
outputs and diagnostic dumps are often written into folders other people can write too (a team
results folder, mode 2770; /tmp; a shared ``HIPEXPLORE_DUMP_DIR``). A temp name that others can
guess (``.NAME.<pid>.tmp``) or a plain ``open(path, "w")`` follows a symlink planted there and
overwrites whatever file of the writer's it points at. Here, for every writer:

  * the content goes into a file that did not exist before and has no name others can predict: an
    unnamed ``O_TMPFILE`` inode of the target folder where the file system has them (a process
    killed half-way leaves nothing behind), else ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random
    hidden name;
  * it is fsync'ed (``durable``), given an ordinary mode (``0666`` less the umask, as ``open`` would)
    and renamed over the final name, all relative to ONE opened descriptor of the folder: a link at
    the final name is replaced, never followed, and a folder swapped on the path after the open
    does not move the write;
  * on any failure the temp file is removed and the existing file is left exactly as it was; an
    ``OSError`` becomes one ``ConfigError`` line naming the file and why.

``own_folder`` and ``write_below`` serve the diagnostic dumps: the folders hipexplore itself makes
inside a possibly shared folder must be this user's own, made by mkdir (a symlink, another user's
folder, or one others may write into is refused in one line), and are held by descriptor.

Standard library only (imported by ``schema`` and everything above it).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import threading
from pathlib import Path
from typing import BinaryIO, Callable, Union

from .errors import ConfigError

#: what a writer is given: the bytes, a text (UTF-8), or a function that writes into a binary file
Content = Union[bytes, bytearray, memoryview, str, Callable[[BinaryIO], object]]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: O_TMPFILE needs /proc/self/fd to give the inode its name (linkat with AT_SYMLINK_FOLLOW)
_TMPFILE = getattr(os, "O_TMPFILE", 0) if os.path.isdir("/proc/self/fd") else 0
_umask_lock = threading.Lock()


def write_file(
    path: str | os.PathLike,
    content: Content,
    *,
    what: str = "file",
    dir_fd: int | None = None,
    durable: bool = True,
    shown: str | None = None,
) -> Path:
    """Write ``content`` to ``path`` atomically and without following any link (module docstring).

    ``dir_fd``: an opened folder ``path`` (then a bare name) lives in, as ``own_folder`` returns;
    without it the folder is the one ``path`` names (followed like any path the caller chose).
    ``what`` and ``shown`` (default: ``path``) name the file in the error line; ``durable=False``
    skips the fsyncs (scratch data nobody keeps)."""
    name = os.fspath(path)
    shown = shown or name
    if dir_fd is not None:
        if not name or os.sep in name or name in (".", ".."):
            raise ConfigError(f"{what} name {shown!r} must be a plain file name inside its folder")
        _write_in(dir_fd, name, content, what, shown, durable)
        return Path(path)
    folder, name = os.path.split(name)
    if not name or name in (".", ".."):
        raise ConfigError(f"{what} {shown!r} is a folder name; expected a file name")
    dfd = _open_folder(folder or ".", what, shown)
    try:
        _write_in(dfd, name, content, what, shown, durable)
    finally:
        os.close(dfd)
    return Path(path)


def _open_folder(folder: str, what: str, shown: str) -> int:
    try:
        return os.open(folder, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"cannot write {what} {shown!r}: its folder {folder!r}: {exc.strerror or exc}") from None


def _write_in(dfd: int, name: str, content: Content, what: str, shown: str, durable: bool) -> None:
    fd, tmp = _new_temp(dfd, name, what, shown)
    try:
        with os.fdopen(fd, "wb", closefd=False) as fh:
            if callable(content):
                content(fh)
            else:
                fh.write(content.encode("utf-8") if isinstance(content, str) else content)
        if durable:
            os.fsync(fd)
        os.fchmod(fd, 0o666 & ~umask())  # an ordinary file, as open() makes it, not the temp's 0600
        if tmp is None:  # the unnamed inode gets a random name first: link() never replaces
            tmp = _link_tmpfile(dfd, fd, name)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)  # a link at ``name`` is replaced, not followed
        tmp = None
        if durable:
            os.fsync(dfd)
    except OSError as exc:
        raise ConfigError(_failure(dfd, name, what, shown, exc)) from None
    finally:
        os.close(fd)
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass


def _temp_name(name: str) -> str:
    return f".{name[:120]}.{secrets.token_hex(8)}.tmp"


def _new_temp(dfd: int, name: str, what: str, shown: str) -> tuple[int, str | None]:
    """(descriptor, temp name): an unnamed O_TMPFILE inode (name None), else a random hidden name
    made exclusively (no link followed, no existing file taken over)."""
    if _TMPFILE:
        try:
            return os.open(".", _TMPFILE | os.O_WRONLY | _CLOEXEC, 0o600, dir_fd=dfd), None
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                raise ConfigError(f"cannot write {what} {shown!r}: {exc.strerror or exc}") from None
    for _ in range(32):
        tmp = _temp_name(name)
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dfd), tmp
        except FileExistsError:
            continue
        except OSError as exc:
            raise ConfigError(f"cannot write {what} {shown!r}: {exc.strerror or exc}") from None
    raise ConfigError(f"cannot write {what} {shown!r}: no free temporary name beside it")


def _link_tmpfile(dfd: int, fd: int, name: str) -> str:
    for _ in range(32):
        tmp = _temp_name(name)
        try:
            os.link(f"/proc/self/fd/{fd}", tmp, dst_dir_fd=dfd, follow_symlinks=True)
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name beside it")


def _failure(dfd: int, name: str, what: str, shown: str, exc: OSError) -> str:
    """The one line for a failed write: who holds the name when that is why."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        return f"cannot write {what} {shown!r}: it is a folder; expected a file name (nothing was changed)"
    if st is not None and exc.errno in (errno.EPERM, errno.EACCES) and st.st_uid != os.geteuid():
        kind = "symbolic link" if stat.S_ISLNK(st.st_mode) else "file"
        return (
            f"cannot write {what} {shown!r}: that name is another user's (uid {st.st_uid}) {kind} in a folder where "
            f"only its owner may replace it; nothing was written and it was left as it was: choose another name"
        )
    return f"cannot write {what} {shown!r}: {exc.strerror or exc}; an existing file there was left as it was"


def umask() -> int:
    """This process's umask (from /proc, which does not change it; else set and restored under a lock)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


# -- folders hipexplore makes inside a possibly shared folder ---------------------------------------
def own_folder(parent_fd: int, name: str, *, what: str, shown: str) -> int:
    """A descriptor of subfolder ``name`` of ``parent_fd``: made here (mode 0755 less the umask) or
    an earlier one that is this user's own, a real folder and writable by nobody else (a sticky one
    excepted). Anything else (a symlink, another user's folder, one others may write into) is
    refused in one line: files written through it could land wherever that folder's owner wants."""
    if not name or os.sep in name or name in (".", ".."):
        raise ConfigError(f"{what} folder name {name!r} in {shown!r} must be a plain relative name")
    try:
        os.mkdir(name, 0o755, dir_fd=parent_fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ConfigError(f"cannot make {what} folder {shown!r}: {exc.strerror or exc}") from None
    try:
        fd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ConfigError(
                f"{what} folder {shown!r} exists and is a symbolic link or not a folder; refused (hipexplore "
                f"writes only into folders it made itself): remove it or choose another folder"
            ) from None
        raise ConfigError(f"cannot open {what} folder {shown!r}: {exc.strerror or exc}") from None
    st = os.fstat(fd)
    problem = None
    if st.st_uid != os.geteuid():
        problem = f"belongs to another user (uid {st.st_uid})"
    elif st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        problem = f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o}, not sticky)"
    if problem:
        os.close(fd)
        raise ConfigError(
            f"{what} folder {shown!r} {problem}; refused (others could plant links in it): remove it or "
            f"choose another folder"
        )
    return fd


def write_below(
    dir_fd: int, relname: str, content: Content, *, what: str, shown_dir: str, durable: bool = True
) -> Path:
    """Write ``content`` to ``relname`` (``a/b/c.h``) under the opened folder ``dir_fd``: each
    folder on the way is ``own_folder``'s, the file ``write_file``'s. Returns the shown path."""
    parts = relname.split("/")
    if relname.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ConfigError(
            f"{what} name {relname!r} must be a relative path inside {shown_dir!r} (no '..', no empty part)"
        )
    fds: list[int] = []
    try:
        here, shown = dir_fd, shown_dir
        for part in parts[:-1]:
            shown = os.path.join(shown, part)
            here = own_folder(here, part, what=what, shown=shown)
            fds.append(here)
        write_file(parts[-1], content, what=what, dir_fd=here, durable=durable, shown=os.path.join(shown_dir, relname))
        return Path(shown_dir, relname)
    finally:
        for fd in fds:
            os.close(fd)


#: the longest name (bytes, suffix included) ``bounded_name`` keeps as it is; file systems allow 255
NAME_MAX_BYTES = 100


def bounded_name(name: str, suffix: str = "") -> str:
    """``name + suffix`` as ONE file name a file system takes: unchanged when it is short (at most
    ``NAME_MAX_BYTES`` bytes of UTF-8) and holds no ``/``, NUL or leading dot; otherwise the name's
    first safe characters, a dash and 16 hex digits of its SHA-256 (distinct names stay distinct).

    Why: a kernel name becomes a file name (``NAME.c`` in the compiler's build folder, the dumped
    source); a 300-character ``--source`` kernel name ended the sweep 30 s in with ``OSError: File
    name too long``. Short names keep their file name, so their compile keys do not change."""
    import hashlib
    import re

    whole = f"{name}{suffix}"
    if (
        len(whole.encode("utf-8", "surrogatepass")) <= NAME_MAX_BYTES
        and "/" not in whole
        and "\0" not in whole
        and not whole.startswith(".")
    ):
        return whole
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    head = re.sub(r"[^A-Za-z0-9_+-]+", "_", name)[:40].strip("_") or "kernel"
    return f"{head}-{digest}{suffix}"


def why_no_new_file(exc: OSError, folder: str | os.PathLike) -> str:
    """Why creating a file in ``folder`` (a folder that exists) failed, in words: the errno text
    alone misleads there (``/proc`` answers "No such file or directory" for a folder it lists)."""
    code = exc.errno
    if code == errno.ENOENT and Path(folder).is_dir():
        return "the folder exists but refuses new files: a special filesystem such as /proc or /sys"
    if code in (errno.EACCES, errno.EPERM):
        return "the folder is not writable by this user"
    if code == errno.EROFS:
        return "the folder is on a read-only filesystem"
    if code in (errno.ENOSPC, errno.EDQUOT):
        return "no space (or quota) left there"
    return exc.strerror or str(exc)


#: how much of an existing file ``check_replace`` reads to recognise it
RECOGNISE_BYTES = 1 << 16


def check_replace(
    path: str | os.PathLike, flag: str, kind: str, ours: Callable[[bytes], bool], force: bool = False
) -> None:
    """Before any work: refuse (one ``ConfigError`` line) to replace an existing, non-empty file at
    ``path`` that ``ours`` (given its first ``RECOGNISE_BYTES``) does not recognise as ``kind``, a
    file hipexplore wrote; ``force`` replaces it anyway. A file hipexplore wrote is replaced as
    before (a report rebuilt, a binary compiled again): nothing else is ever overwritten silently.
    Only a regular file at the name itself is read: a link there is left to ``write_file`` (which
    replaces the link and never writes through it) and a FIFO is not waited on."""
    name = os.fspath(path)
    if force:
        return
    # never followed, never blocking: a link planted at the name (``write_file`` replaces the link, not
    # what it points at) or a FIFO put there must neither be read through nor hang this process
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return  # nothing there, a link, or nothing this process may look at: the write itself decides
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return
        head = os.read(fd, RECOGNISE_BYTES)
    except OSError:
        return
    finally:
        os.close(fd)
    if not ours(head):
        raise ConfigError(
            f"{flag} {name!r} exists and is not {kind}; it was left as it is: choose another file, or pass "
            f"--force to replace it"
        )


__all__ = [
    "Content",
    "NAME_MAX_BYTES",
    "RECOGNISE_BYTES",
    "bounded_name",
    "check_replace",
    "own_folder",
    "umask",
    "why_no_new_file",
    "write_below",
    "write_file",
]
