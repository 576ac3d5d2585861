"""Private mode's trust of the compile cache's folders and entry files (``compile.disk``), by owner
and mode on real files.

Private mode (the default) promises: the root is this user's and writable by no one else (or a
sticky folder of this user or of root); the version and shard folders are this user's and
writable by no one else, with no sticky exception; an entry file is this user's and writable by no
one else. Anything else is not used: a miss (``untrusted`` counted), no write, one warning naming
it. As root these tests hand folders and files to another uid (65534, ``nobody``) with chown; as
another user they are skipped (only root can give a file away).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import warnings
from pathlib import Path

import pytest
from conftest import COMPILERS, need

from hipexplore.compile.base import ObjectCode
from hipexplore.compile.disk import DiskCache
from hipexplore.compile.request import CacheKey

OTHER = 65534


@pytest.fixture(autouse=True)
def _root():
    """Giving a folder to another uid needs root (chown): CI runs as root; elsewhere skipped, through
    ``conftest.need`` so that a CI run without root fails instead of skipping (REQUIREMENT_RULES)."""
    if os.geteuid() != 0:
        need("root", "giving a folder to another uid (chown) needs root", flag=COMPILERS)


def key(i: int) -> CacheKey:
    canonical = json.dumps({"trust": i}, sort_keys=True).encode()
    return CacheKey(canonical, hashlib.sha256(canonical).hexdigest())


def code(i: int) -> ObjectCode:
    return ObjectCode(binary=bytes([i]) * 1024, compiler="host", target="host", mode="shared-library")


def stored(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    root = tmp_path / "cache"
    cache = DiskCache(root)
    assert cache.put(key(1), code(1))
    entry = cache.path_for(key(1).digest)
    return root, {"root": root, "version": entry.parent.parent, "shard": entry.parent, "entry": entry}


def refused(root: Path, what: Path, why: str, *, folder: bool = True) -> DiskCache:
    """A fresh cache over ``root``: the entry is a miss counted untrusted, the warning names ``what``
    (each test's own path: warned the first time) and ``why``; below an untrusted ``folder`` a write
    into the same shard is refused too."""
    cache = DiskCache(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.get(key(1)) is None
        if folder:
            other = next(i for i in range(2, 10_000) if key(i).digest[:2] == key(1).digest[:2])
            assert cache.put(key(other), code(2)) is False
    assert cache.counters["untrusted"] == (2 if folder else 1) and cache.counters["hits"] == 0
    msgs = [str(w.message) for w in caught]
    assert any(repr(str(what)) in m and why in m for m in msgs), msgs
    return cache


@pytest.mark.timeout(60)
@pytest.mark.parametrize("level", ["root", "version", "shard"])
def test_a_folder_owned_by_another_user_is_not_trusted(tmp_path, level) -> None:
    root, p = stored(tmp_path)
    os.chown(p[level], OTHER, OTHER)  # its mode stays 0755: only the owner differs
    assert stat.S_IMODE(p[level].stat().st_mode) & 0o022 == 0
    refused(root, p[level], f"owned by uid {OTHER}, not by this user")
    os.chown(p[level], os.geteuid(), os.getegid())
    assert DiskCache(root).get(key(1)).binary == code(1).binary  # the control: it was the owner


@pytest.mark.timeout(60)
@pytest.mark.parametrize("level", ["version", "shard"])
def test_a_sticky_folder_of_another_user_below_the_root_is_not_trusted(tmp_path, level) -> None:
    """The sticky exception is the root's alone: a version or shard folder of another user is
    refused though sticky (1755: others could not even add names to it)."""
    root, p = stored(tmp_path)
    os.chown(p[level], OTHER, OTHER)
    os.chmod(p[level], 0o1755)
    refused(root, p[level], f"owned by uid {OTHER}")


@pytest.mark.timeout(60)
def test_a_sticky_root_of_another_user_is_not_trusted(tmp_path) -> None:
    """Sticky roots are trusted when this user's or root's (``/tmp``); another user's is theirs."""
    root, p = stored(tmp_path)
    os.chmod(root, 0o1777)
    assert DiskCache(root).get(key(1)) is not None  # this user's sticky root: fine
    os.chown(root, OTHER, OTHER)
    refused(root, root, f"owned by uid {OTHER}")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "level,mode,why",
    [
        ("version", 0o775, "group-writable"),
        ("shard", 0o775, "group-writable"),
        ("shard", 0o757, "world-writable"),
        ("root", 0o775, "group-writable"),
        ("version", 0o1777, "world-writable"),
        ("shard", 0o1777, "world-writable"),
    ],
)
def test_a_folder_of_this_user_that_others_can_write_is_not_trusted(tmp_path, level, mode, why) -> None:
    """Group- or world-writable, this user's own: refused; sticky helps only the root (1777 below it is refused)."""
    root, p = stored(tmp_path)
    os.chmod(p[level], mode)
    refused(root, p[level], why)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", [0o664, 0o646, 0o666, 0o620])
def test_an_entry_file_others_can_write_is_not_read(tmp_path, mode) -> None:
    """This user's own entry in this user's folders, but group- or world-writable (a file made
    under umask 000, or chmod'ed): someone else could have rewritten it; it is not read."""
    root, p = stored(tmp_path)
    os.chmod(p["entry"], mode)
    refused(root, p["entry"], "writable by other users", folder=False)
    os.chmod(p["entry"], 0o644)
    assert DiskCache(root).get(key(1)).binary == code(1).binary


@pytest.mark.timeout(60)
def test_an_entry_file_owned_by_another_user_is_not_read(tmp_path) -> None:
    """Mode 0644, in this user's private folders, but another user's file (a copied tree, an
    admin's mv): not read, counted untrusted."""
    root, p = stored(tmp_path)
    os.chown(p["entry"], OTHER, OTHER)
    refused(root, p["entry"], f"owned by uid {OTHER}, not by this user", folder=False)
    os.chown(p["entry"], os.geteuid(), os.getegid())
    assert DiskCache(root).get(key(1)) is not None


@pytest.mark.timeout(60)
def test_a_team_cache_trusts_the_secret_not_the_modes(tmp_path) -> None:
    """The contrast: in team mode (``shared="group"``) a group-writable entry of another user in
    group-writable folders is read when its HMAC verifies under the team's secret."""
    root = tmp_path / "team"
    team = DiskCache(root, shared="group", secret="s3cret")
    assert team.put(key(1), code(1))
    entry = team.path_for(key(1).digest)
    for p in (root, entry.parent.parent, entry.parent):
        os.chmod(p, 0o2775)
    os.chmod(entry, 0o664)
    os.chown(entry, OTHER, OTHER)
    assert DiskCache(root, shared="group", secret="s3cret").get(key(1)).binary == code(1).binary
    assert DiskCache(root, shared="group", secret="other").get(key(1)) is None
