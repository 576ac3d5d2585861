"""A local Dask cluster against another user of the machine (``--cluster local:N``).

Mounted with REAL users (tests/security/twousers.py): the victim starts a real ``local:2`` cluster
through hipexplore's ``connect`` in its own process, as ``hipexplore bench``/``tune-replay`` do (no
working directory on its own ``sys.path``, as a console script's), from a project folder another
user can write to and with a scratch folder shared by every user (``TMPDIR``, as ``/tmp`` is). The
attacker, another uid:

  * reads the cluster's addresses (as it would from ``/proc/net/tcp``: they are handed over here)
    and connects to the scheduler, every nanny and every worker: with ``distributed.Client`` over
    plain TCP, over TLS with a certificate of its own and over TLS without one, and with a bare
    ``rpc`` ``run`` message; each tries ``run_on_scheduler``/``run``/``submit`` of a function that
    leaves a marker and returns the uid it ran as. Nothing may run: no marker, no uid back.
  * planted ``socket.py`` in the project folder (multiprocessing's spawn children put the working
    directory first on ``sys.path`` while they import ``multiprocessing.spawn``, which imports it) and made the shared
    ``$TMPDIR/dask-scratch-space`` itself (mode 0777) with a ``msgpack.py`` in it (distributed puts its
    scratch folder first on ``sys.path``, in the victim's process and in every worker, and uses
    another user's folder when it can write to it). Both modules are transparent (they load the real
    module after leaving their marker), so on the old code the cluster works and the markers show it.

The victim's cluster must still run its own tasks, and leave no ``PYTHONSAFEPATH`` in its own
environment (the variable is set only around the spawns).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import COMPILERS, need, need_module
from twousers import ops, users  # noqa: F401  (users: the module's fixture)

need_module("distributed")  # the cluster extra (setup.sh --dev)

#: A module the attacker plants under a stdlib or package name: it leaves a marker naming the uid it
#: ran as, then loads the real module from the rest of the path (so the victim notices nothing).
PLANTED = r"""
import os, sys
_here = os.path.dirname(os.path.abspath(__file__))
try:
    open(os.path.join(@DROP@, "planted-@NAME@-%d-%d" % (os.getuid(), os.getpid())), "w").close()
except OSError:
    pass
import importlib.machinery, importlib.util
_spec = importlib.machinery.PathFinder.find_spec(__name__, [p for p in sys.path if os.path.abspath(p or ".") != _here])
_mod = importlib.util.module_from_spec(_spec)
sys.modules[__name__] = _mod
_spec.loader.exec_module(_mod)
"""

#: The victim, as a console script runs: no working directory on sys.path; in the project folder.
VICTIM = r"""
import json, os, sys
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
os.chdir(sys.argv[1])


def view():
    import os, sys
    return {"uid": os.getuid(), "safe_path": sys.flags.safe_path, "path": sys.path[:4]}


def main():
    from hipexplore.bench.cluster import connect

    conn = connect("local:2", pin=False)
    c = conn.client
    info = c.scheduler_info()["workers"]
    print(json.dumps({"scheduler": c.scheduler.address, "workers": sorted(info),
                      "nannies": sorted(w["nanny"] for w in info.values())}), flush=True)
    sys.stdin.readline()  # the attacker's turn
    out = {"views": list(c.run(view).values()), "task": c.submit(pow, 2, 10, pure=False).result(timeout=60),
           "parent_path": sys.path[:4], "parent_env": os.environ.get("PYTHONSAFEPATH")}
    conn.close()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
"""

#: The attacker: every way in it has, against every address of the victim's cluster.
ATTACKER = r"""
import asyncio, json, os, sys
import distributed
from distributed.core import rpc
from distributed.protocol.pickle import dumps

ADDRS = json.loads(sys.argv[1])
DROP = sys.argv[2]


def pwn():
    import os
    open(os.path.join(DROP, "ran-%d-%d" % (os.getuid(), os.getpid())), "w").close()
    return os.getuid()


def ways(addr):
    host = addr.split("://", 1)[1]
    yield "tcp", "tcp://" + host, None
    yield "tls-own-cert", "tls://" + host, distributed.Security.temporary()
    yield "tls-no-cert", "tls://" + host, distributed.Security()


def client_attempts(addr):
    out = []
    for how, target, security in ways(addr):
        try:
            with distributed.Client(target, timeout=5, security=security) as c:
                got = [c.run_on_scheduler(pwn), sorted(c.run(pwn).values()), c.submit(pwn, pure=False).result(timeout=20)]
            out.append({"to": target, "how": "client-" + how, "ran": got})
        except Exception as exc:
            out.append({"to": target, "how": "client-" + how, "refused": f"{type(exc).__name__}: {exc}"[:200]})
    return out


async def rpc_attempt(target, how, security):
    args = security.get_connection_args("client") if security is not None else {}
    r = rpc(target, connection_args=args, timeout=5)
    try:
        return await asyncio.wait_for(r.run(function=dumps(pwn)), 20)
    finally:
        await r.close_rpc()


def rpc_attempts(addr):
    out = []
    for how, target, security in ways(addr):
        try:
            got = asyncio.run(rpc_attempt(target, how, security))
            out.append({"to": target, "how": "rpc-" + how, "ran": repr(got)})
        except Exception as exc:
            out.append({"to": target, "how": "rpc-" + how, "refused": f"{type(exc).__name__}: {exc}"[:200]})
    return out


results = client_attempts(ADDRS["scheduler"])
for addr in ADDRS["workers"] + ADDRS["nannies"]:
    results += rpc_attempts(addr)
print(json.dumps(results))
"""


def _spawning_python(users) -> str:  # noqa: F811
    """A Python the victim can run that can also start itself again (multiprocessing spawns
    ``sys.executable``): the venv's interpreter may be a link into a folder the users may not
    enter, which the first exec (by ``setpriv``) passes and a nested one does not."""
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    tried = []
    for exe in dict.fromkeys(
        [users.python, f"/usr/bin/{ver}", shutil.which(ver, path="/usr/local/bin:/usr/bin:/bin") or ""]
    ):
        if not exe:
            continue
        probe = subprocess.run(
            users.argv("victim", exe, "-c", SPAWNS),
            capture_output=True,
            text=True,
            env=users.env("victim"),
            cwd="/",
            timeout=120,
        )
        if probe.returncode == 0:
            return exe
        tried.append(f"{exe}: {(probe.stderr.strip().splitlines() or ['?'])[-1]}")
    need("a Python the test users can run and spawn again", "; ".join(tried), flag=COMPILERS)
    raise AssertionError("unreachable")


SPAWNS = "import subprocess, sys, distributed, cryptography; subprocess.run([sys.executable, '-c', ''], check=True)"


def _run_as(users, role: str, python: str, code: str, *args: str, env=None, **kw) -> subprocess.Popen:  # noqa: F811
    proc = subprocess.Popen(
        users.argv(role, python, "-c", code, *args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or users.env(role),
        cwd=str(users.home(role)),
        **kw,
    )
    users.procs.append(proc)  # killed by the fixture's cleanup if still running
    return proc


@pytest.fixture(scope="module")
def attacked(users):  # noqa: F811 - the fixture from twousers
    """The victim's cluster, attacked once: the addresses, the attempts, the victim's view after."""
    drop = users.base / "drop"
    drop.mkdir()
    os.chmod(drop, 0o1777)
    shared_tmp = users.base / "shared-tmp"  # as /tmp: everyone's, sticky
    shared_tmp.mkdir()
    os.chmod(shared_tmp, 0o1777)
    project = users.home("attacker") / "project"  # a folder the attacker shares with the team
    scratch = shared_tmp / "dask-scratch-space"
    plant = {name: users.base / f"plant-{name}.py" for name in ("socket", "msgpack")}
    for name, path in plant.items():
        path.write_text(PLANTED.replace("@DROP@", repr(str(drop))).replace("@NAME@", name))
        os.chmod(path, 0o644)
    ops(
        users,
        "attacker",
        ("mkdir", str(project), 0o777),
        ("copy", str(plant["socket"]), str(project / "socket.py"), 0o644),
        ("mkdir", str(scratch), 0o777),
        ("copy", str(plant["msgpack"]), str(scratch / "msgpack.py"), 0o644),
    )
    python = _spawning_python(users)
    victim = _run_as(users, "victim", python, VICTIM, str(project), env=users.env("victim", TMPDIR=str(shared_tmp)))
    line = victim.stdout.readline()
    if not line.strip():
        victim.wait(60)
        pytest.fail(f"the victim's cluster did not start: {victim.stderr.read()[:6000]}")
    addrs = json.loads(line)
    attacker = _run_as(users, "attacker", python, ATTACKER, json.dumps(addrs), str(drop))
    out, err = attacker.communicate(timeout=240)
    assert attacker.returncode == 0, err[-3000:]
    victim.stdin.write("\n")
    victim.stdin.flush()
    after = victim.stdout.readline()
    victim.wait(120)
    assert after.strip(), victim.stderr.read()[-3000:]
    return {"addrs": addrs, "attempts": json.loads(out), "after": json.loads(after), "drop": drop, "scratch": scratch}


def test_another_user_cannot_run_code_in_a_local_cluster(users, attacked):  # noqa: F811
    addrs, attempts = attacked["addrs"], attacked["attempts"]
    ran = [a for a in attempts if "ran" in a]
    assert ran == [], f"the attacker's code ran in the victim's cluster: {ran}"
    assert not sorted(p.name for p in attacked["drop"].glob("ran-*")), (
        "the attacker's function ran (its marker is there)"
    )
    assert len(attempts) == 3 * (1 + len(addrs["workers"]) + len(addrs["nannies"])) and len(addrs["workers"]) == 2
    assert all(a.startswith("tls://127.0.0.1:") for a in [addrs["scheduler"], *addrs["workers"], *addrs["nannies"]]), (
        addrs
    )


def test_spawned_workers_import_nothing_from_the_working_directory(users, attacked):  # noqa: F811
    markers = sorted(p.name for p in attacked["drop"].glob("planted-socket-*"))
    assert markers == [], f"the socket.py planted in the victim's working directory ran: {markers}"
    views = attacked["after"]["views"]
    assert len(views) == 2 and all(v["safe_path"] and v["uid"] == users.uid["victim"] for v in views), views


def test_a_scratch_folder_another_user_made_is_not_used(users, attacked):  # noqa: F811
    markers = sorted(p.name for p in attacked["drop"].glob("planted-msgpack-*"))
    assert markers == [], f"the msgpack.py planted in the shared dask-scratch-space ran: {markers}"
    scratch = str(attacked["scratch"])
    paths = [*attacked["after"]["parent_path"], *(p for v in attacked["after"]["views"] for p in v["path"])]
    assert not [p for p in paths if p.startswith(scratch)], paths
    assert sorted(os.listdir(scratch)) == ["msgpack.py"]  # the victim wrote nothing into it either


def test_the_owner_still_runs_its_tasks_and_keeps_its_environment(attacked):
    after = attacked["after"]
    assert after["task"] == 1024
    assert after["parent_env"] is None  # PYTHONSAFEPATH only around the spawns, not left in the victim's process


def test_the_planted_modules_are_found_by_a_plain_import(tmp_path):
    """The control: the planted modules work (a ``python -c`` in each folder imports them, leaves
    its marker, and still gets the real module), so a pass above is not a module that never loads."""
    drop = tmp_path / "drop"
    drop.mkdir()
    for name in ("socket", "msgpack"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.py").write_text(PLANTED.replace("@DROP@", repr(str(drop))).replace("@NAME@", name))
        code = textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {str(folder)!r})
            import {name}
            assert {name}.__file__ != {str(folder / (name + ".py"))!r}, {name}.__file__
            print({name}.__name__)
        """)
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=str(tmp_path)
        )
        assert out.returncode == 0 and out.stdout.strip() == name, out.stderr
        assert [p.name.split("-")[1] for p in drop.glob(f"planted-{name}-*")] == [name]
