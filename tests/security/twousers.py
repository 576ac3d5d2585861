"""Two real unprivileged users (victim, attacker) and a team group for the security tests.

The tests run as root in CI: ``Users.create`` makes the users and the group with ``useradd`` /
``groupadd``, ``Users.run``/``start`` run Python code AS one of them (``setpriv``) with this checkout
and this environment's packages on its path, and ``cleanup`` removes them. ``ops`` builds a file
layout as a user (the attacker plants links, folders and files with it). Import the fixture into a
test module with ``from twousers import users  # noqa: F401``.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import COMPILERS, need, suite_settings

REPO = Path(__file__).resolve().parents[2]


# -- real users ------------------------------------------------------------------------------------------
def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if not path:
        need(f"tool {name}", "needed to create the unprivileged users of the security tests", flag=COMPILERS)
    return path


class Users:
    """Two unprivileged users and a team group, a world-readable scratch folder, and a Python
    both users can run with this checkout and its packages."""

    def __init__(self) -> None:
        if os.geteuid() != 0:
            need("root", "the security tests create unprivileged users (useradd) and run as them", flag=COMPILERS)
        self.useradd, self.userdel = _tool("useradd"), _tool("userdel")
        self.groupadd, self.groupdel, self.setpriv = _tool("groupadd"), _tool("groupdel"), _tool("setpriv")
        tag = f"{os.getpid() % 100000:05d}"
        self.team = f"hxteam{tag}"
        self.names = {"victim": f"hxvict{tag}", "attacker": f"hxatk{tag}"}
        self.made: list[tuple[str, str]] = []
        self.procs: list[subprocess.Popen] = []
        self.base = Path(tempfile.mkdtemp(prefix="hx-security-", dir="/tmp"))
        os.chmod(self.base, 0o755)

    def create(self) -> None:
        subprocess.run([self.groupadd, self.team], check=True, capture_output=True)
        self.made.append(("group", self.team))
        import grp
        import pwd

        self.team_gid = grp.getgrnam(self.team).gr_gid
        self.uid: dict[str, int] = {}
        self.gid: dict[str, int] = {}
        for role, name in self.names.items():
            subprocess.run(
                [
                    self.useradd,
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    "--user-group",
                    "--groups",
                    self.team,
                    name,
                ],
                check=True,
                capture_output=True,
            )
            self.made.append(("user", name))
            pw = pwd.getpwnam(name)
            self.uid[role], self.gid[role] = pw.pw_uid, pw.pw_gid
            home = self.base / f"home-{role}"
            home.mkdir()
            os.chown(home, pw.pw_uid, pw.pw_gid)
            os.chmod(home, 0o711)  # others may pass through (to a planted file's folder), not list
            (home / "tmp").mkdir()
            os.chown(home / "tmp", pw.pw_uid, pw.pw_gid)
            os.chmod(home / "tmp", 0o700)
        self.python, self.pythonpath = self._find_python()

    def home(self, role: str) -> Path:
        return self.base / f"home-{role}"

    def env(self, role: str, **extra: str) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home(role)),
            "TMPDIR": str(self.home(role) / "tmp"),
            "LANG": "C.UTF-8",
            "PYTHONPATH": getattr(self, "pythonpath", ""),
            "PYTHONNOUSERSITE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "HIPEXPLORE_CACHE_DISK": "1",
            # the suite's own settings, as every process the tests start has them: without them a
            # host bench flushed this VM's real 480 MiB LLC (11-19 s of CPU for a 20-iteration sweep)
            **suite_settings(),
        }
        env.update(extra)
        return env

    def argv(self, role: str, *cmd: str) -> list[str]:
        return [self.setpriv, f"--reuid={self.uid[role]}", f"--regid={self.gid[role]}", "--init-groups", "--", *cmd]

    def run(
        self, role: str, code: str, *args: str, env: dict | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.argv(role, self.python, "-c", code, *map(str, args)),
            capture_output=True,
            text=True,
            env=env or self.env(role),
            cwd=str(self.home(role)),
            timeout=timeout,
        )

    def start(self, role: str, code: str, *args: str, env: dict | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(
            self.argv(role, self.python, "-c", code, *map(str, args)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env or self.env(role),
            cwd=str(self.home(role)),
        )
        self.procs.append(proc)
        return proc

    def _find_python(self) -> tuple[str, str]:
        """A Python of this minor version the users can execute, with this checkout and this
        environment's packages on its path (the venv's own interpreter may live in a folder they
        cannot enter, e.g. under /root)."""
        pythonpath = os.pathsep.join([str(REPO), *site.getsitepackages()])
        ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
        candidates = [
            sys.executable,
            os.path.realpath(sys.executable),
            getattr(sys, "_base_executable", ""),
            shutil.which(ver, path="/usr/local/bin:/usr/bin:/bin") or "",
            f"/usr/bin/{ver}",
        ]
        tried = []
        for exe in dict.fromkeys(c for c in candidates if c):
            probe = subprocess.run(
                self.argv("victim", exe, "-c", "import hipexplore.compile.cache"),
                capture_output=True,
                text=True,
                env={**self.env("victim"), "PYTHONPATH": pythonpath},
                cwd="/",
                timeout=120,
            )
            if probe.returncode == 0:
                return exe, pythonpath
            tried.append(f"{exe}: {(probe.stderr.strip().splitlines() or ['?'])[-1]}")
        need("a Python the test users can run", "; ".join(tried), flag=COMPILERS)
        raise AssertionError("unreachable")

    def cleanup(self) -> None:
        for proc in self.procs:  # only the processes this module started, by their pid
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        shutil.rmtree(self.base, ignore_errors=True)
        for kind, name in reversed(self.made):
            subprocess.run([self.userdel, name] if kind == "user" else [self.groupdel, name], capture_output=True)


def use_python_by_name(users: Users) -> str:
    """Make ``users.python`` an interpreter the users can start BY NAME, as hipexplore's own children
    (sweep workers, compile workers, the report's notebook kernel) start ``sys.executable``: the
    system's Python of this version, with this checkout and the environment's packages on
    ``PYTHONPATH`` (``users.python`` may be a venv link into a folder the test users cannot enter,
    whose stdlib then comes from elsewhere). Returns it."""
    probe = "import os, sys, hipexplore.compile.cache; sys.exit(0 if os.access(sys.executable, os.X_OK) else 3)"
    for exe in (f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}", users.python):
        if (
            os.path.exists(exe)
            and subprocess.run(
                users.argv("victim", exe, "-c", probe),
                env=users.env("victim"),
                cwd="/",
                capture_output=True,
                timeout=120,
            ).returncode
            == 0
        ):
            users.python = exe
            return exe
    need(
        "a Python the test users can start by name",
        f"neither /usr/bin/python3.x nor {users.python} can be",
        flag=COMPILERS,
    )
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def users():
    from conftest import require_compiler

    require_compiler("host")
    u = Users()
    try:
        u.create()
        yield u
    finally:
        u.cleanup()


#: Runs a list of file operations as whoever runs it (the layouts are built with it, as each user).
OPS = r"""
import json, os, sys
for op, *a in json.loads(sys.argv[1]):
    if op == "mkdir":
        os.mkdir(a[0]); os.chmod(a[0], a[1])
    elif op == "chmod":
        os.chmod(a[0], a[1])
    elif op == "chgrp":
        os.chown(a[0], -1, a[1])
    elif op == "symlink":
        os.symlink(a[0], a[1])
    elif op == "rename":
        os.rename(a[0], a[1])
    elif op == "copy":
        data = open(a[0], "rb").read()
        fd = os.open(a[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, data); os.close(fd); os.chmod(a[1], a[2])
    elif op == "overwrite":  # into an existing file someone else owns (it is writable by us)
        data = open(a[0], "rb").read()
        fd = os.open(a[1], os.O_WRONLY | os.O_TRUNC)
        os.write(fd, data); os.close(fd)
    else:
        raise SystemExit(f"unknown op {op}")
"""


def ops(users: Users, role: str, *steps) -> None:
    out = users.run(role, OPS, json.dumps([list(s) for s in steps]))
    assert out.returncode == 0, f"{role} could not build the layout: {out.stderr}"
