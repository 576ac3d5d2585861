"""One cache entry's bytes: encoding, verification, header validation, and a bounded safe read.

Why a module of its own: the disk tier, the Redis tier and ``hipexplore cache stats/verify`` all
read entries that someone else may have written, so they share one reader that treats every byte
as hostile. An entry is::

    magic (8 bytes) | header length (u32 LE) | binary length (u64 LE) | header (UTF-8 JSON) |
    binary | tag (32 bytes)

The tag is the SHA-256 of everything before it, or, in team mode (a shared cache with a secret),
HMAC-SHA-256 keyed by the team secret: a plain checksum anyone can recompute after editing the
source and binary, an HMAC only someone holding the secret can. A reader with a secret accepts
only HMAC tags; a reader without one only checksums, so an entry never crosses between the two.

Reading a file (``read_entry_file``): opened with ``O_NOFOLLOW | O_NONBLOCK`` relative to an
already opened folder (a FIFO does not block, a symlink is refused), ``fstat`` must say regular
file and pass the caller's ``check`` on that same opened file (``disk.py``: in a private cache,
this user's and writable by no one else), and no more than the smaller of the declared total
and ``limit`` bytes is ever read (a 6 GiB sparse file or ``/dev/zero`` costs one ``fstat``).
Every header field has its type checked (``validate_header``), so a well-formed entry with
``compile_seconds: "x"`` is corrupt, not a crash.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import stat
import struct
import time
from typing import Any, Callable

from .base import ObjectCode
from .request import CacheKey

MAGIC = b"HXCACHE\x01"
PREFIX = struct.Struct("<8sIQ")  # magic, header length, binary length
TAG_BYTES = 32
#: File format version inside the header (the key schema versions the directory).
FORMAT_VERSION = 1
#: No entry larger than this is read or written, whatever the byte cap (bounded memory per read).
MAX_ENTRY_BYTES = 512 * 1024**2
#: A header is JSON of the key (sources + headers) and a log; more than this is not an entry.
MAX_HEADER_BYTES = 64 * 1024**2

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class Corrupt(Exception):
    """An entry that is not one: wrong magic, lengths, tag, header types, or not a regular file."""


class Unauthenticated(Corrupt):
    """A team entry whose HMAC does not verify under this secret: tampered, or written under
    another secret (a member's typo). A miss like any corrupt entry, but ``verify`` leaves it in
    place: it cannot tell a teammate's entry from a forged one, and removing would lose the former."""


def _tag(body: bytes | memoryview, secret: bytes | None) -> bytes:
    if secret:
        return hmac.new(secret, body, hashlib.sha256).digest()
    return hashlib.sha256(body).digest()


def encode_entry(key: CacheKey, code: ObjectCode, created: float | None = None, secret: bytes | None = None) -> bytes:
    """Serialize one entry (header + binary + tag; the tag is an HMAC when ``secret`` is given)."""
    header = {
        "format": FORMAT_VERSION,
        "key": key.canonical.decode("utf-8"),
        "digest": key.digest,
        "compiler": code.compiler,
        "target": code.target,
        "mode": code.mode,
        "compile_seconds": float(code.compile_seconds),
        "created": time.time() if created is None else float(created),
        "lowered_names": dict(code.lowered_names),
        "metadata": dict(code.metadata),  # launch facts (Triton); {} for the others
        "log": code.log,
        "sizes": {"binary": len(code.binary), "key": len(key.canonical)},
        "auth": "hmac-sha256" if secret else "sha256",
    }
    head = json.dumps(header, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    body = b"".join((PREFIX.pack(MAGIC, len(head), len(code.binary)), head, bytes(code.binary)))
    return body + _tag(body, secret)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def validate_header(header: Any, binary_len: int | None = None) -> dict:
    """``header`` if every field has the type a writer gives it; else ``Corrupt`` naming the field."""
    if not isinstance(header, dict):
        raise Corrupt(f"header is a {type(header).__name__}, not an object")
    for name in ("key", "digest", "compiler", "target", "mode", "log"):
        if not isinstance(header.get(name), str):
            raise Corrupt(f"header field {name!r} is {header.get(name)!r}, expected a string")
    if header.get("format") != FORMAT_VERSION or isinstance(header.get("format"), bool):
        raise Corrupt(f"header format {header.get('format')!r}, expected {FORMAT_VERSION}")
    for name in ("compile_seconds", "created"):
        v = header.get(name)
        if not _is_number(v) or v < 0:
            raise Corrupt(f"header field {name!r} is {v!r}, expected a non-negative number")
    names = header.get("lowered_names")
    if not isinstance(names, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
        raise Corrupt(f"header field 'lowered_names' is {names!r:.80}, expected an object of strings")
    if not isinstance(header.get("metadata", {}), dict):
        raise Corrupt(f"header field 'metadata' is {header.get('metadata')!r:.80}, expected an object")
    sizes = header.get("sizes")
    if not isinstance(sizes, dict) or not all(
        isinstance(sizes.get(k), int) and not isinstance(sizes.get(k), bool) for k in ("binary", "key")
    ):
        raise Corrupt(f"header field 'sizes' is {sizes!r:.80}, expected {{'binary': int, 'key': int}}")
    if binary_len is not None and sizes["binary"] != binary_len:
        raise Corrupt(f"header says {sizes['binary']} binary bytes, the entry holds {binary_len}")
    if sizes["key"] != len(header["key"].encode("utf-8")):
        raise Corrupt("header key length does not match its key")
    return header


def decode_entry(data: bytes, secret: bytes | None = None) -> tuple[dict, bytes]:
    """Verify lengths, tag and header types, then split into (header, binary). Raises ``Corrupt``."""
    if len(data) < PREFIX.size + TAG_BYTES:
        raise Corrupt(f"truncated: {len(data)} bytes")
    magic, head_len, bin_len = PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise Corrupt(f"bad magic {magic!r}")
    if PREFIX.size + head_len + bin_len + TAG_BYTES != len(data):
        raise Corrupt(f"length mismatch: header {head_len} + binary {bin_len} vs {len(data)} bytes")
    view = memoryview(data)
    if not hmac.compare_digest(_tag(view[:-TAG_BYTES], secret), bytes(view[-TAG_BYTES:])):
        if secret or b'"auth":"hmac-sha256"' in bytes(view[PREFIX.size : PREFIX.size + head_len]):
            raise Unauthenticated("HMAC does not verify under this team secret (another secret, or tampered)")
        raise Corrupt("checksum mismatch")
    try:
        header = json.loads(bytes(view[PREFIX.size : PREFIX.size + head_len]))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise Corrupt(f"bad header: {exc}") from None
    header = validate_header(header, bin_len)
    binary = bytes(view[PREFIX.size + head_len : len(data) - TAG_BYTES])
    return header, binary


def object_code(header: dict, binary: bytes) -> ObjectCode:
    """The ObjectCode a validated header and its binary describe."""
    return ObjectCode(
        binary=binary,
        compiler=header["compiler"],
        target=header["target"],
        mode=header["mode"],
        log=header["log"],
        lowered_names=dict(header["lowered_names"]),
        compile_seconds=float(header["compile_seconds"]),
        metadata=dict(header.get("metadata") or {}),
    )


def _read_exactly(fd: int, n: int) -> bytes:
    chunks = []
    while n > 0:
        chunk = os.read(fd, min(n, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


#: ``check(stat)`` raises when an opened file may not be read (``disk.py``: owned by another user
#: or writable by others in a private cache); it runs on the fstat of the opened file, before any read.
FileCheck = Callable[[os.stat_result], None]


def open_regular(name: str, dir_fd: int | None = None, check: FileCheck | None = None) -> tuple[int, os.stat_result]:
    """An fd of the regular file ``name`` (no symlink followed, a FIFO never blocks) and its fstat;
    ``Corrupt`` for anything that is not a regular file; whatever ``check`` raises. OSError
    (ENOENT, ELOOP, EACCES) passes."""
    fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Corrupt(f"not a regular file (mode {stat.filemode(st.st_mode)})")
        if check is not None:
            check(st)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_entry_file(
    name: str, dir_fd: int | None = None, limit: int = MAX_ENTRY_BYTES, check: FileCheck | None = None
) -> tuple[bytes, os.stat_result]:
    """The bytes of one entry file, read safely (see the module docstring). Raises ``Corrupt`` for
    a file that cannot be an entry of at most ``limit`` bytes, OSError for I/O trouble, and
    whatever ``check`` raises for the opened file (before a byte is read)."""
    fd, st = open_regular(name, dir_fd, check)
    try:
        limit = min(limit, MAX_ENTRY_BYTES)
        if st.st_size > limit:
            raise Corrupt(f"{st.st_size} bytes, more than the {limit} an entry may have")
        prefix = _read_exactly(fd, PREFIX.size)
        if len(prefix) < PREFIX.size:
            raise Corrupt(f"truncated: {len(prefix)} bytes")
        magic, head_len, bin_len = PREFIX.unpack(prefix)
        total = PREFIX.size + head_len + bin_len + TAG_BYTES
        if magic != MAGIC or total != st.st_size:
            raise Corrupt(f"magic {magic!r}, declared {total} bytes, file {st.st_size}")
        return prefix + _read_exactly(fd, total - PREFIX.size), st
    finally:
        os.close(fd)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def read_entry_path(path: str | os.PathLike) -> tuple[bytes, os.stat_result]:
    """``read_entry_file`` of a listed path, its folder opened without following a link (the disk
    tier itself reads through the folder descriptors it checked, not through paths)."""
    path = os.fspath(path)
    fd = os.open(os.path.dirname(path) or ".", _DIR_FLAGS)
    try:
        return read_entry_file(os.path.basename(path), fd)
    finally:
        os.close(fd)


def read_header(path: str | os.PathLike) -> dict:
    """The validated JSON header of an entry file, read without verifying the tag (listings; the
    file and its folder are opened without following a link). Bounded like ``read_entry_file``;
    raises ``Corrupt`` (or OSError)."""
    path = os.fspath(path)
    dfd = os.open(os.path.dirname(path) or ".", _DIR_FLAGS)
    try:
        fd, st = open_regular(os.path.basename(path), dfd)
    finally:
        os.close(dfd)
    try:
        prefix = _read_exactly(fd, PREFIX.size)
        if len(prefix) < PREFIX.size:
            raise Corrupt(f"truncated ({len(prefix)} bytes)")
        magic, head_len, bin_len = PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise Corrupt(f"not a hipexplore cache entry (magic {magic!r})")
        if head_len > MAX_HEADER_BYTES or PREFIX.size + head_len + bin_len + TAG_BYTES != st.st_size:
            raise Corrupt(f"declared lengths do not match the file's {st.st_size} bytes")
        try:
            header = json.loads(_read_exactly(fd, head_len))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise Corrupt(f"unreadable header: {exc}") from None
        return validate_header(header, bin_len)
    finally:
        os.close(fd)
