"""The disk tier against another user (issue 25, items 1, 2 and the local-disk parts of 6 and 7).

Every attack here is mounted by a REAL second user: the module creates two unprivileged users
(victim, attacker) and a team group with ``useradd``/``groupadd`` (the tests run as root in CI),
builds each hostile layout AS the attacker (``setpriv``), runs the victim's lookup AS the victim in
its own process, and removes both users afterwards.

  * Code execution: the attacker compiles a host library whose constructor writes a marker file,
    wraps it in an entry for the victim's own request (the key is computed the way the victim's
    process computes it, and a private entry's SHA-256 is recomputed by anyone) and plants it in
    each layout. The victim compiles its request through ``CompileCache`` and loads what it got
    (``ctypes``), as a host benchmark does: the marker must never appear and the victim's own code
    must answer. A control layout (the same bytes, but the victim's own file in its own folders)
    proves the planted entry is a hit and the marker works, so a pass is not a miss by accident.
  * Deletion: the attacker, a team member in a shared group-writable cache, swaps shard and version
    folders for symlinks to a victim folder in a tight loop while the victim runs clear / verify /
    prune many times; not one victim file outside the cache may go.
  * Locks, sizes, leftovers: a lock held on by the forked child of a killed holder, another user's
    live lock, another user trying to hold the victim's lock, a hung holder past its lifetime; a
    real 3 GiB sparse temp file and another user's big file against the cap; lock files left by
    compiles and by killed holders.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from twousers import ops, users  # noqa: F401  (users: the module's fixture)

REPO = Path(__file__).resolve().parents[2]
SECRET = "team-secret-of-the-security-tests"

VICTIM_C = "int answer(void) { return 1; }\n"
#: The attacker's library: a constructor (runs on dlopen, before any symbol is called) that
#: leaves a marker naming the uid it ran as, and a different answer.
EVIL_C = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
  FILE* f = fopen("@MARKER@", "a");
  if (f) { fprintf(f, "%d\n", (int)getuid()); fclose(f); }
}
int answer(void) { return 666; }
"""


#: As the victim, once: the key its request has in its environment (what an attacker who knows the
#: request and the environment computes too; the key is not a secret).
VICTIM_KEY = r"""
import base64, json, sys
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
key = CompileCache(disk_dir=False, remote=False).key_for(CompileRequest(Source("k.c", sys.argv[1]), "host", "host"))
print(json.dumps({"canonical": base64.b64encode(key.canonical).decode(), "digest": key.digest}))
"""

#: As the attacker: the victim's key around the attacker's library; a plain entry (its SHA-256 anyone
#: recomputes) and HMAC-tagged ones under a guessed and under the team's secret.
MAKE_EVIL = r"""
import base64, json, sys
from pathlib import Path
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.entry import encode_entry
from hipexplore.compile.request import CacheKey
out, evil_src, secret = Path(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
evil = CompileCache(disk_dir=False, remote=False).get_or_compile(CompileRequest(Source("k.c", evil_src), "host", "host")).object_code
for mode, known in json.loads(sys.argv[4]).items():
    key = CacheKey(base64.b64decode(known["canonical"]), known["digest"])
    (out / f"plain-{mode}.hxc").write_bytes(encode_entry(key, evil))
    (out / f"wrong-secret-{mode}.hxc").write_bytes(encode_entry(key, evil, secret=b"guessed"))
    (out / f"team-secret-{mode}.hxc").write_bytes(encode_entry(key, evil, secret=secret))
"""

#: As the victim: compile its own request through the cache and load what it got, as a host benchmark does.
VICTIM_RUN = r"""
import ctypes, json, os, sys, tempfile, warnings
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cache = CompileCache(disk_dir=sys.argv[1], max_entries=0, remote=False)
    res = cache.get_or_compile(CompileRequest(Source("k.c", sys.argv[2]), "host", "host"))
lib = os.path.join(tempfile.mkdtemp(), "lib.so")
with open(lib, "wb") as f:
    f.write(res.object_code.binary)
answer = ctypes.CDLL(lib).answer()
print(json.dumps({"outcome": res.outcome, "answer": answer, "digest": res.key.digest,
                  "warnings": [str(w.message) for w in caught], "disk": cache.disk.counters}))
"""


def victim_env(users, team: bool) -> dict:
    extra = {"HIPEXPLORE_CACHE_SHARED": "group", "HIPEXPLORE_CACHE_SECRET": SECRET} if team else {}
    return users.env("victim", **extra)


@pytest.fixture(scope="module")
def evil(users):
    """The attacker's planted entries (in the attacker's home, ``plain-private.hxc`` ...), the
    victim's digests, and the marker the attacker's code leaves."""
    markers = users.base / "markers"
    markers.mkdir()
    os.chmod(markers, 0o1777)  # the planted constructor runs as the victim and must be able to write here
    marker = markers / "attacker-code-ran"
    keys = {}
    for mode in ("private", "team"):
        probe = users.run("victim", VICTIM_KEY, VICTIM_C, env=victim_env(users, mode == "team"))
        assert probe.returncode == 0, probe.stderr
        keys[mode] = json.loads(probe.stdout)
    out = users.home("attacker") / "evil"
    ops(users, "attacker", ("mkdir", str(out), 0o755))
    made = users.run("attacker", MAKE_EVIL, str(out), EVIL_C.replace("@MARKER@", str(marker)), SECRET, json.dumps(keys))
    assert made.returncode == 0, made.stderr
    return {"dir": out, "digest": keys["private"]["digest"], "team_digest": keys["team"]["digest"], "marker": marker}


def victim_lookup(users, evil, root: Path, team: bool = False) -> dict:
    if evil["marker"].exists():
        evil["marker"].unlink()
    out = users.run("victim", VICTIM_RUN, str(root), VICTIM_C, env=victim_env(users, team))
    assert out.returncode == 0, f"the victim's lookup failed: {out.stderr[-2000:]}"
    report = json.loads(out.stdout.strip().splitlines()[-1])
    report["attacker_code_ran"] = evil["marker"].exists()
    if report["attacker_code_ran"]:
        report["marker"] = evil["marker"].read_text()
        evil["marker"].unlink()
    return report


# -- item 1: no code of another user runs as the victim ---------------------------------------------------
def _layout(users, evil, name: str, team: bool = False) -> tuple[Path, dict]:
    """A scratch folder (like /tmp: sticky, anyone may create in it) for one layout; the cache root
    path the victim is given is ``<it>/cache``; names of the levels below."""
    place = users.base / f"layout-{name}"
    place.mkdir()
    os.chmod(place, 0o1777)
    d = evil["team_digest" if team else "digest"]
    root = place / "cache"
    return root, {
        "root": str(root),
        "v1": str(root / "v1"),
        "shard": str(root / "v1" / d[:2]),
        "entry": str(root / "v1" / d[:2] / f"{d}.hxc"),
        "plain": str(evil["dir"] / "plain-private.hxc"),
        "place": str(place),
        "team": users.team_gid,
    }


def _attacker_tree(p: dict, root_mode: int, v1_mode: int, shard_mode: int) -> list:
    return [
        ("mkdir", p["root"], root_mode),
        ("mkdir", p["v1"], v1_mode),
        ("mkdir", p["shard"], shard_mode),
        ("copy", p["plain"], p["entry"], 0o644),
    ]


def _victim_tree(p: dict, root_mode: int = 0o755, v1_mode: int = 0o755, shard_mode: int | None = 0o755) -> list:
    steps = [("mkdir", p["root"], root_mode), ("mkdir", p["v1"], v1_mode)]
    if shard_mode is not None:
        steps.append(("mkdir", p["shard"], shard_mode))
    return steps


def _build(users, p: dict, layout: str) -> None:
    A, V = "attacker", "victim"
    if layout == "attacker root 0755":
        ops(users, A, *_attacker_tree(p, 0o755, 0o755, 0o755))
    elif layout == "attacker root, sticky v1 and shard (1755)":
        ops(users, A, *_attacker_tree(p, 0o755, 0o1755, 0o1755))
    elif layout == "attacker root, all 1777":
        ops(users, A, *_attacker_tree(p, 0o1777, 0o1777, 0o1777))
    elif layout == "victim sticky root, attacker v1 1755":
        ops(users, V, ("mkdir", p["root"], 0o1777))
        ops(
            users, A, ("mkdir", p["v1"], 0o1755), ("mkdir", p["shard"], 0o1755), ("copy", p["plain"], p["entry"], 0o644)
        )
    elif layout.startswith("victim v1 1777, attacker shard "):
        mode = int(layout.rsplit(" ", 1)[1], 8)
        ops(users, V, *_victim_tree(p, 0o755, 0o1777, None))
        ops(users, A, ("mkdir", p["shard"], mode), ("copy", p["plain"], p["entry"], 0o644))
    elif layout == "root-owned sticky root like /tmp, attacker v1":
        os.mkdir(p["root"])
        os.chmod(p["root"], 0o1777)
        ops(
            users, A, ("mkdir", p["v1"], 0o1755), ("mkdir", p["shard"], 0o1755), ("copy", p["plain"], p["entry"], 0o644)
        )
    elif layout == "group-writable root":
        ops(users, V, ("mkdir", p["root"], 0o775), ("chgrp", p["root"], p["team"]))
        ops(users, A, ("mkdir", p["v1"], 0o755), ("mkdir", p["shard"], 0o755), ("copy", p["plain"], p["entry"], 0o644))
    elif layout == "group-writable v1":
        ops(users, V, ("mkdir", p["root"], 0o755), ("mkdir", p["v1"], 0o775), ("chgrp", p["v1"], p["team"]))
        ops(users, A, ("mkdir", p["shard"], 0o755), ("copy", p["plain"], p["entry"], 0o644))
    elif layout == "group-writable shard":
        ops(users, V, *_victim_tree(p, shard_mode=0o775), ("chgrp", p["shard"], p["team"]))
        ops(users, A, ("copy", p["plain"], p["entry"], 0o644))
    elif layout == "root path is the attacker's symlink":
        evil_root = str(Path(p["place"]) / "evil-root")
        q = {
            **p,
            "root": evil_root,
            "v1": evil_root + "/v1",
            "shard": evil_root + "/v1/" + Path(p["shard"]).name,
            "entry": evil_root + "/v1/" + Path(p["shard"]).name + "/" + Path(p["entry"]).name,
        }
        ops(users, A, *_attacker_tree(q, 0o755, 0o1755, 0o1755), ("symlink", evil_root, p["root"]))
    elif layout == "v1 is the attacker's symlink (victim sticky root)":
        other = str(Path(p["place"]) / "evil-v1")
        ops(users, V, ("mkdir", p["root"], 0o1777))
        ops(
            users,
            A,
            ("mkdir", other, 0o755),
            ("mkdir", other + "/" + Path(p["shard"]).name, 0o755),
            ("copy", p["plain"], other + "/" + Path(p["shard"]).name + "/" + Path(p["entry"]).name, 0o644),
            ("symlink", other, p["v1"]),
        )
    elif layout == "shard is the attacker's symlink (victim v1 1777)":
        other = str(Path(p["place"]) / "evil-shard")
        ops(users, V, *_victim_tree(p, 0o755, 0o1777, None))
        ops(
            users,
            A,
            ("mkdir", other, 0o755),
            ("copy", p["plain"], other + "/" + Path(p["entry"]).name, 0o644),
            ("symlink", other, p["shard"]),
        )
    elif layout == "attacker-owned entry file in the victim's folders":
        ops(users, V, *_victim_tree(p))
        shutil.copy(p["plain"], p["entry"])  # how it got there (a copied tree, an admin's mv) does not matter
        os.chown(p["entry"], users.uid[A], users.gid[A])
        os.chmod(p["entry"], 0o644)
    elif layout == "victim's own entry file writable by others, rewritten by the attacker":
        ops(users, V, *_victim_tree(p), ("copy", "/dev/null", p["entry"], 0o666))  # e.g. made under umask 000
        ops(users, A, ("overwrite", p["plain"], p["entry"]))
    elif layout == "victim root renamed away by the attacker who owns its parent":
        parent = Path(p["place"]) / "attacker-parent"
        ops(users, A, ("mkdir", str(parent), 0o755))
        root = parent / "cache"
        os.mkdir(root)
        os.chown(root, users.uid[V], users.gid[V])  # the victim's root, in a folder the attacker owns
        q = {
            **p,
            "root": str(root),
            "v1": str(root / "v1"),
            "shard": str(root / "v1" / Path(p["shard"]).name),
            "entry": str(root / "v1" / Path(p["shard"]).name / Path(p["entry"]).name),
        }
        ops(
            users,
            A,
            ("rename", str(root), str(parent / "victims-old-cache")),
            *_attacker_tree(q, 0o755, 0o1755, 0o1755),
        )
        p["root"] = str(root)
    else:
        raise AssertionError(layout)


HOSTILE_LAYOUTS = [
    "attacker root 0755",
    "attacker root, sticky v1 and shard (1755)",
    "attacker root, all 1777",
    "victim sticky root, attacker v1 1755",
    "victim v1 1777, attacker shard 1755",
    "victim v1 1777, attacker shard 1777",
    "victim v1 1777, attacker shard 0777",
    "victim v1 1777, attacker shard 0755",
    "root-owned sticky root like /tmp, attacker v1",
    "group-writable root",
    "group-writable v1",
    "group-writable shard",
    "root path is the attacker's symlink",
    "v1 is the attacker's symlink (victim sticky root)",
    "shard is the attacker's symlink (victim v1 1777)",
    "attacker-owned entry file in the victim's folders",
    "victim's own entry file writable by others, rewritten by the attacker",
    "victim root renamed away by the attacker who owns its parent",
]


def test_the_planted_entry_is_a_hit_where_the_victim_trusts_the_folders(users, evil):
    """The control: the attacker's bytes as the victim's own file in the victim's own private
    folders are a disk hit and the constructor runs (so the layouts below test the folder checks,
    not a key that does not match or a marker that cannot be written)."""
    root, p = _layout(users, evil, "control")
    ops(users, "victim", *_victim_tree(p), ("copy", p["plain"], p["entry"], 0o644))
    got = victim_lookup(users, evil, root)
    assert got["digest"] == evil["digest"]
    assert (got["outcome"], got["answer"], got["attacker_code_ran"]) == ("disk-hit", 666, True), got
    assert got["marker"].strip() == str(users.uid["victim"])


@pytest.mark.parametrize("layout", HOSTILE_LAYOUTS)
def test_no_attacker_code_runs_as_the_victim(users, evil, layout):
    root, p = _layout(users, evil, HOSTILE_LAYOUTS.index(layout))
    _build(users, p, layout)
    root = Path(p["root"])
    got = victim_lookup(users, evil, root)
    assert not got["attacker_code_ran"], f"{layout}: the attacker's constructor ran as the victim: {got}"
    assert got["answer"] == 1 and got["outcome"] == "compiled", got
    assert got["disk"]["hits"] == 0


@pytest.mark.parametrize(
    "planted,outcome,answer",
    [
        ("plain-team.hxc", "compiled", 1),  # a plain checksum anyone recomputes: never accepted in a team directory
        ("wrong-secret-team.hxc", "compiled", 1),  # an HMAC under another secret
        (
            "team-secret-team.hxc",
            "disk-hit",
            666,
        ),  # the control: a member holding the team's secret is trusted by design
    ],
)
def test_in_a_team_directory_only_the_team_secret_lets_code_in(users, evil, planted, outcome, answer):
    root, p = _layout(users, evil, f"team-{planted}", team=True)
    os.mkdir(root)
    os.chown(root, users.uid["victim"], users.team_gid)
    os.chmod(root, 0o2770)  # the README's team directory
    ops(
        users,
        "attacker",
        ("mkdir", p["v1"], 0o2775),
        ("mkdir", p["shard"], 0o2775),
        ("copy", str(evil["dir"] / planted), p["entry"], 0o664),
    )
    got = victim_lookup(users, evil, root, team=True)
    assert (got["outcome"], got["answer"], got["attacker_code_ran"]) == (outcome, answer, answer == 666), got


# -- item 2: nothing outside the cache is deleted through a swapped folder ------------------------------------
ATTACKER_SWAPS = r"""
import os, sys, time
v1, target_flat, target_tree, stop, count = sys.argv[1:6]
swaps = 0
deadline = time.monotonic() + 600
while not os.path.exists(stop) and time.monotonic() < deadline:
    with open(count + ".part", "w") as f:  # the victim reads how far the attack has got
        f.write(str(swaps))
    os.replace(count + ".part", count)
    try:
        shards = [n for n in os.listdir(v1) if len(n) == 2]
    except OSError:
        shards = []
    for s in shards:
        path = os.path.join(v1, s)
        try:
            os.rename(path, path + ".real")
        except OSError:
            continue
        try:
            os.symlink(target_flat, path)
            swaps += 1
            time.sleep(0.0005)
            os.unlink(path)
        except OSError:
            pass
        try:
            os.rename(path + ".real", path)
        except OSError:
            pass
    try:  # and the whole version folder, for a walk that starts there
        os.rename(v1, v1 + ".real")
        os.symlink(target_tree, v1)
        swaps += 1
        time.sleep(0.0005)
        os.unlink(v1)
        os.rename(v1 + ".real", v1)
    except OSError:
        pass
print(swaps, flush=True)
"""

VICTIM_MAINTAINS = r"""
import hashlib, json, os, sys, time
from hipexplore.compile import ObjectCode
from hipexplore.compile.disk import DiskCache
from hipexplore.compile.request import CacheKey
root, rounds, names_out, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[5]
os.umask(0o002)  # the README's team setting: folders and files group-writable
disk = DiskCache(root, max_bytes=10**9, shared="group", secret=sys.argv[4])
def key(i):
    c = json.dumps({"generated": i}).encode()
    return CacheKey(c, hashlib.sha256(c).hexdigest())
keys = [key(i) for i in range(12)]
# generated payloads (not compiler output): this test is about which files get deleted
def fill(corrupt):
    for i, k in enumerate(keys):
        disk.put(k, ObjectCode(bytes([i]) * 2048, "host", "host", "shared-library"))
    for k in keys[:corrupt]:  # a few damaged entries, so that verify removes something
        try:  # (through the tier's own checked folder fd: a path here would follow the attacker's link)
            with disk._shard(k.digest, create=False) as dfd:
                fd = os.open(disk.path_for(k.digest).name, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, dir_fd=dfd)
                os.write(fd, b"damaged"); os.close(fd)
        except Exception:
            pass
with open(names_out, "w") as f:
    json.dump([disk.path_for(k.digest).name for k in keys], f)
print("ready", flush=True)
sys.stdin.readline()
done = {"clear": 0, "verify": 0, "prune": 0}
def fresh():  # a swapped version folder turns writes off for the process (ELOOP at v1): a new process each time
    global disk
    done["writes"] = done.get("writes", 0) + disk.counters["writes"]
    disk = DiskCache(root, max_bytes=10**9, shared="group", secret=sys.argv[4])
def swaps():
    try:
        return int(open(count).read() or 0)
    except (OSError, ValueError):
        return 0
# at least `rounds` rounds, and on until the attack has really run beside them (100 swaps, 100 writes):
# a loaded machine slows either side, so the activity is a condition to reach, not a count to hope for
r, cap = 0, time.monotonic() + 420
while r < rounds or ((done.get("writes", 0) <= 100 or swaps() <= 100) and time.monotonic() < cap):
    fresh(); fill(0); disk.clear(); done["clear"] += 1
    fresh(); fill(4); disk.verify(); done["verify"] += 1
    fresh(); fill(0); disk.prune(target_bytes=0); done["prune"] += 1
    r += 1
fresh()
print(json.dumps(done), flush=True)
"""


def test_a_teammate_swapping_folders_for_symlinks_never_makes_the_victim_delete_outside_the_cache(users):
    team_root = users.base / "team-race"
    team_root.mkdir()
    os.chown(team_root, users.uid["victim"], users.team_gid)
    os.chmod(team_root, 0o2770)  # the README's team directory: the attacker is a member
    precious = users.home("victim") / "precious"  # the victim's own files, outside the cache
    os.mkdir(precious)
    names_file = users.home("victim") / "names.json"
    env = users.env("victim", HIPEXPLORE_CACHE_SHARED="group", HIPEXPLORE_CACHE_SECRET=SECRET)
    counts = users.base / "race-count"  # the attacker's swap count, readable by the victim
    counts.mkdir()
    os.chmod(counts, 0o777)
    count_file = counts / "swaps"
    victim = users.start(
        "victim", VICTIM_MAINTAINS, str(team_root), "40", str(names_file), SECRET, str(count_file), env=env
    )
    assert victim.stdout.readline().strip() == "ready", victim.stderr.read()
    # the victim's folder holds files named exactly like the cache's own (entries, temps, locks) and others
    names = json.loads(names_file.read_text()) + [".lock-" + "ab" * 32, ".tmp-host-1-abc.hxc.part", "thesis.tex"]
    flat = precious / "flat"
    tree = precious / "tree" / "v1"
    for folder in [flat] + [tree / n[:2] for n in names]:
        folder.mkdir(parents=True, exist_ok=True)
    for folder in [flat] + [tree / n[:2] for n in names]:
        for n in names:
            (folder / n).write_text(f"the victim's {n}")
    for dirpath, dirs, files in os.walk(precious):
        os.chown(dirpath, users.uid["victim"], users.gid["victim"])
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chown(os.path.join(dirpath, f), users.uid["victim"], users.gid["victim"])
    before = sorted(str(p.relative_to(precious)) for p in precious.rglob("*"))
    stop = users.base / "stop-race"
    attacker = users.start(
        "attacker",
        ATTACKER_SWAPS,
        str(team_root / "v1"),
        str(flat),
        str(tree),
        str(stop),
        str(count_file),
        env=users.env("attacker", HIPEXPLORE_CACHE_SHARED="group", HIPEXPLORE_CACHE_SECRET=SECRET),
    )
    time.sleep(0.5)  # the attacker is swapping before the victim's first clear
    try:
        out, err = victim.communicate("go\n", timeout=600)
    finally:
        stop.write_text("stop")
        swaps = attacker.communicate(timeout=60)[0].strip()
    assert victim.returncode == 0, err[-2000:]
    done = json.loads(out.strip().splitlines()[-1])
    writes = done.pop("writes")
    assert done["clear"] == done["verify"] == done["prune"] >= 40 and int(swaps) > 100 and writes > 100, (
        done,
        writes,
        swaps,
    )
    after = sorted(str(p.relative_to(precious)) for p in precious.rglob("*"))
    assert after == before, f"deleted outside the cache: {sorted(set(before) - set(after))}"
    assert all((flat / n).read_text() == f"the victim's {n}" for n in names)


# -- items 6 and 7: locks with an owner and a lifetime, sizes by blocks, no left-over lock files ----------------
def _key(i: int):
    from hipexplore.compile.request import CacheKey

    canonical = json.dumps({"generated": i, "test": "security"}).encode()
    return CacheKey(canonical, hashlib.sha256(canonical).hexdigest())


def _payload(i: int, size: int = 4096):
    from hipexplore.compile import ObjectCode

    return ObjectCode(bytes([i % 251]) * size, "host", "host", "shared-library")  # generated, not compiler output


HOLD = r"""
import os, signal, sys, time
from hipexplore.compile.disk import DiskCache
if len(sys.argv) > 4:
    os.umask(0o002)
disk = DiskCache(sys.argv[1], shared=sys.argv[3], secret=(sys.argv[4] if len(sys.argv) > 4 else None))
with disk.key_lock(sys.argv[2]) as held:
    child = 0
    if os.environ.get("HOLD_FORK") == "1":  # a worker forked while holding: it keeps the lock's file open
        child = os.fork()
        if child == 0:
            time.sleep(600)
            os._exit(0)
    print("held" if held else "not held", child, flush=True)
    time.sleep(600)
"""


def _hold(root, lid: str, *, fork: bool = False, users=None, role: str = "", team: bool = False):
    args = [str(root), lid, "group" if team else "private"] + ([SECRET] if team else [])
    if users is not None:
        proc = users.start(role, HOLD, *args, env=users.env(role, HOLD_FORK="1" if fork else "0"))
    else:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, *args],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), "HOLD_FORK": "1" if fork else "0"},
        )
    line = proc.stdout.readline().split()
    assert line and line[0] == "held", line
    return proc, int(line[1])


def _lock_files(root: Path) -> list[str]:
    return sorted(p.name for p in Path(root).rglob(".lock-*"))


def test_a_lock_held_on_by_the_forked_child_of_a_killed_holder_is_taken_over_at_once(tmp_path):
    """The holder forked a worker (which inherits the open lock file, so the kernel keeps the flock)
    and was then killed: its record names a dead process, so the next process takes the lock over
    instead of waiting for the timeout."""
    from hipexplore.compile.disk import DiskCache

    disk = DiskCache(tmp_path / "c")
    lid = _key(1).digest
    holder, child = _hold(tmp_path / "c", lid, fork=True)
    try:
        holder.kill()
        holder.wait()
        start = time.monotonic()
        with disk.key_lock(lid, timeout=30) as held:
            waited = time.monotonic() - start
            assert held, "the dead holder's lock was waited on for the whole timeout"
        assert waited < 15, waited
        assert disk.counters["locks_taken_over"] == 1
        assert _lock_files(tmp_path / "c") == []  # released: the lock file went with it
    finally:
        if child:
            os.kill(child, signal.SIGKILL)  # the grandchild this test made, by its pid
        holder.kill()
        holder.wait()


def test_a_hung_holder_past_its_lifetime_is_taken_over(tmp_path, monkeypatch):
    """A live but hung holder (SIGSTOP) keeps its lock for its lifetime (the compile timeout plus a
    margin; shortened here), not for every waiter's whole timeout."""
    import hipexplore.compile.disk as disk_mod
    from hipexplore.compile import disk_locks  # where the lifetime's margin is

    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "1")
    monkeypatch.setattr(disk_locks, "LOCK_LIFETIME_MARGIN_S", 1.0)
    disk = disk_mod.DiskCache(tmp_path / "c")
    lid = _key(2).digest
    holder, _ = _hold(tmp_path / "c", lid)
    try:
        os.kill(holder.pid, signal.SIGSTOP)
        with disk.key_lock(lid, timeout=0.3) as held:
            assert not held  # young: waited on (bounded by the timeout)
        start = time.monotonic()
        with disk.key_lock(lid, timeout=60) as held:
            assert held and time.monotonic() - start < 30
    finally:
        holder.kill()
        holder.wait()


def test_another_user_cannot_hold_the_victims_lock_file(users):
    """A victim's holder is killed and leaves its lock file; another user opens it read-only and
    locks it (flock needs no write access) to make the victim's compiles of that key wait. Private
    lock files are 0600, so the attacker cannot open it; the victim takes it over at once."""
    root = users.home("victim") / "cache-locks"
    ops(users, "victim", ("mkdir", str(root), 0o755))
    lid = _key(3).digest
    holder, _ = _hold(root, lid, users=users, role="victim")
    holder.kill()
    holder.wait()
    left = [p for p in root.rglob(f".lock-{lid}")]
    assert left
    mode = stat.S_IMODE(left[0].stat().st_mode)
    grab = users.start(
        "attacker",
        r"""
import fcntl, os, sys, time
held = []
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        held.append(fd)
    except OSError as exc:
        print("refused", exc.errno, flush=True)
print("holding", len(held), flush=True)
time.sleep(600)
""",
        str(left[0]),
    )
    try:
        lines = [grab.stdout.readline().strip()]
        while not lines[-1].startswith("holding"):
            lines.append(grab.stdout.readline().strip())
        wait = users.run(
            "victim",
            r"""
import sys, time
from hipexplore.compile.disk import DiskCache
disk = DiskCache(sys.argv[1])
start = time.monotonic()
with disk.key_lock(sys.argv[2], timeout=60) as held:
    print(held, round(time.monotonic() - start, 2), flush=True)
""",
            str(root),
            lid,
            timeout=120,
        )
        assert wait.returncode == 0, wait.stderr
        held, seconds = wait.stdout.split()
        assert held == "True" and float(seconds) < 20, (lines, wait.stdout)
        assert lines[-1] == "holding 0" and mode & 0o077 == 0, (lines, oct(mode))
    finally:
        grab.kill()
        grab.wait()


def test_another_users_live_lock_in_a_team_directory_is_not_waited_on_for_the_whole_timeout(users):
    """A teammate's process holds a key's lock forever: the victim waits ``FOREIGN_LOCK_WAIT_S``
    (with the default 300 s lock timeout), then compiles on its own."""
    import hipexplore.compile.disk as disk_mod

    foreign_wait = getattr(disk_mod, "FOREIGN_LOCK_WAIT_S", 10.0)
    root = users.base / "team-locks"
    root.mkdir()
    os.chown(root, users.uid["victim"], users.team_gid)
    os.chmod(root, 0o2770)
    lid = _key(4).digest
    holder, _ = _hold(root, lid, users=users, role="attacker", team=True)
    try:
        env = users.env("victim", HIPEXPLORE_CACHE_SHARED="group", HIPEXPLORE_CACHE_SECRET=SECRET)
        wait = users.run(
            "victim",
            r"""
import os, sys, time
os.umask(0o002)
from hipexplore.compile.disk import DiskCache
disk = DiskCache(sys.argv[1])
start = time.monotonic()
with disk.key_lock(sys.argv[2]) as held:
    print(held, round(time.monotonic() - start, 2), disk.counters["locks_not_waited"], flush=True)
""",
            str(root),
            lid,
            env=env,
            timeout=foreign_wait + 110,
        )
        assert wait.returncode == 0, wait.stderr
        held, seconds, not_waited = wait.stdout.split()
        assert held == "False" and not_waited == "1", wait.stdout
        assert float(seconds) < foreign_wait + 60, wait.stdout  # not the 300 s lock timeout
    finally:
        holder.kill()
        holder.wait()


def test_a_3_gib_sparse_temp_file_does_not_make_every_write_prune_every_entry(tmp_path):
    from hipexplore.compile.disk import HOST_TAG, DiskCache

    root = tmp_path / "c"
    disk = DiskCache(root, max_bytes=1024**2)
    for i in range(10):
        assert disk.put(_key(i), _payload(i))
    shard = disk.path_for(_key(0).digest).parent
    sparse = shard / f".tmp-{HOST_TAG}-{os.getpid()}-sparse.hxc.part"  # a live writer's (ours): never swept
    with open(sparse, "wb") as f:
        f.truncate(3 * 1024**3)
    assert sparse.stat().st_size == 3 * 1024**3 and sparse.stat().st_blocks * 512 < 1024**2  # really sparse
    fresh = DiskCache(root, max_bytes=1024**2)  # a new process: its first write scans the folder
    for i in range(10, 15):
        assert fresh.put(_key(i), _payload(i))
    assert fresh.counters["pruned"] == 0, "the sparse file was counted at its length"
    assert all(fresh.get(_key(i)) is not None for i in range(15))
    assert fresh.stats()["bytes"] < 1024**2


def test_another_users_files_are_not_counted_pruned_or_removed(users):
    """In a team directory a teammate's 4 MiB temp file and entries neither count against the
    victim's 2 MiB cap nor are pruned or cleared by the victim."""
    root = users.base / "team-sizes"
    root.mkdir()
    os.chown(root, users.uid["victim"], users.team_gid)
    os.chmod(root, 0o2770)
    env = {"HIPEXPLORE_CACHE_SHARED": "group", "HIPEXPLORE_CACHE_SECRET": SECRET}
    fill = r"""
import hashlib, json, os, sys, time
os.umask(0o002)
from hipexplore.compile import ObjectCode
from hipexplore.compile.disk import DiskCache
from hipexplore.compile.request import CacheKey
root, first, count, action = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
disk = DiskCache(root, max_bytes=2 * 1024**2)
for i in range(first, first + count):
    c = json.dumps({"generated": i}).encode()
    disk.put(CacheKey(c, hashlib.sha256(c).hexdigest()), ObjectCode(bytes([i % 251]) * 8192, "host", "host", "shared-library"))
if action == "big":
    shard = next(p for p in (disk.directory).iterdir() if p.is_dir())
    with open(shard / ".tmp-otherhost-1-big.hxc.part", "wb") as f:
        f.write(os.urandom(4 * 1024**2))  # dense: allocated, not sparse
    old = time.time() - 10**5
    for p in disk.directory.rglob("*.hxc"):
        os.utime(p, (old, old))  # the oldest entries in the folder: the first a pruner would take
result = {"pruned": disk.counters["pruned"]}
if action == "prune":
    disk.prune(target_bytes=0)
    result["clear"] = disk.clear()
print(json.dumps(result))
"""
    out = users.run("attacker", fill, str(root), 0, 5, "big", env=users.env("attacker", **env))
    assert out.returncode == 0, out.stderr
    theirs = sorted(
        (p, p.stat().st_size) for p in root.rglob("*") if p.is_file() and p.stat().st_uid == users.uid["attacker"]
    )
    assert len(theirs) == 6
    out = users.run("victim", fill, str(root), 100, 20, "count", env=users.env("victim", **env))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["pruned"] == 0, "another user's files were counted against the victim's cap"
    out = users.run("victim", fill, str(root), 200, 1, "prune", env=users.env("victim", **env))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["clear"]["others_left"] == 6
    assert (
        sorted(
            (p, p.stat().st_size) for p in root.rglob("*") if p.is_file() and p.stat().st_uid == users.uid["attacker"]
        )
        == theirs
    )
    assert not [p for p in root.rglob("*.hxc") if p.stat().st_uid == users.uid["victim"]]  # the victim's own did go


def test_compiles_and_pruning_leave_no_lock_files(tmp_path):
    from conftest import require_compiler

    from hipexplore.compile import CompileRequest, Source
    from hipexplore.compile.cache import CompileCache

    require_compiler("host")
    root = tmp_path / "c"
    one = (
        CompileCache(disk_dir=False).get_or_compile(CompileRequest(Source("k.c", VICTIM_C), "host", "host")).object_code
    )
    cache = CompileCache(disk_dir=root, disk_max_bytes=3 * (len(one.binary) + 4096), remote=False)
    for v in range(12):
        assert (
            cache.get_or_compile(
                CompileRequest(Source("k.c", f"int answer(void) {{ return {v}; }}\n"), "host", "host")
            ).outcome
            == "compiled"
        )
    assert cache.disk.counters["pruned"] >= 6
    assert len(list(cache.disk.entries())) <= 3
    assert _lock_files(root) == [], "every compile left its lock file behind"


def test_clear_and_prune_remove_a_killed_holders_lock_file_but_never_a_live_one(tmp_path):
    from hipexplore.compile.disk import DiskCache

    root = tmp_path / "c"
    disk = DiskCache(root)
    dead, live = _key(5).digest, _key(6).digest
    killed, _ = _hold(root, dead)
    killed.kill()
    killed.wait()
    holder, _ = _hold(root, live)
    try:
        assert _lock_files(root) == sorted([f".lock-{dead}", f".lock-{live}"])
        disk.clear()
        assert _lock_files(root) == [f".lock-{live}"]  # the live holder's stayed ...
        with disk.key_lock(live, timeout=0.3) as held:
            assert not held  # ... and still excludes
        holder.kill()
        holder.wait()
        assert disk.put(_key(7), _payload(7))
        disk.prune()
        assert _lock_files(root) == []
    finally:
        holder.kill()
        holder.wait()


def test_under_umask_000_nothing_the_tier_makes_is_writable_by_others(tmp_path):
    """A user with ``umask 000``: entries, folders and lock files of a private cache still come out
    writable by their owner only (an entry others can rewrite is code others can plant)."""
    from hipexplore.compile.disk import DiskCache

    old = os.umask(0)
    try:
        disk = DiskCache(tmp_path / "c")
        assert disk.put(_key(8), _payload(8))
        with disk.key_lock(_key(9).digest) as held:
            assert held
            locks = list((tmp_path / "c").rglob(".lock-*"))
            lock_modes = [stat.S_IMODE(p.stat().st_mode) for p in locks]
    finally:
        os.umask(old)
    entry = disk.path_for(_key(8).digest)
    made = [entry, entry.parent, disk.directory, disk.root]
    assert {str(p): oct(stat.S_IMODE(p.stat().st_mode) & 0o022) for p in made} == {str(p): "0o0" for p in made}
    assert lock_modes == [0o600]
    assert disk.get(_key(8)) is not None
