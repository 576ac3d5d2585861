"""``hipexplore lab [PATH]``: start JupyterLab on the notebooks, as root or as a user.

Why a wrapper: ``setup.sh`` runs as root (it installs apt packages), and plain ``jupyter lab``
then refuses to start ("Running as root is not recommended") unless given ``--allow-root`` — a
flag that is only wanted when the user *is* root. ``lab_command`` adds it exactly then; everything
after ``--`` goes to JupyterLab unchanged (``hipexplore lab notebooks/ -- --no-browser``).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from ..interpreter import safe_environ, safe_path_argv


def lab_command(path: str, euid: int, extra: Sequence[str] = (), python: str = sys.executable) -> list[str]:
    """The JupyterLab command line for user ``euid`` (``--allow-root`` only for root, 0). With ``-P``
    (``interpreter.safe_path_argv``): ``python -m`` would put the folder it is started in first on
    the server's path, and a ``json.py`` there would run as the user."""
    cmd = safe_path_argv("-m", "jupyterlab", path, executable=python)
    if euid == 0:
        cmd.append("--allow-root")
    return [*cmd, *extra]


#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "lab"
HELP = "start JupyterLab on the notebooks (adds --allow-root only when run as root)"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(COMMAND, help=HELP,
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?", default="notebooks", help="folder or notebook to open (default: notebooks)")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="after --: arguments for jupyter lab")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError

    if not Path(args.path).exists():
        raise ConfigError(f"lab: path {args.path!r} does not exist; expected the notebooks folder (e.g. notebooks/)")
    extra = [a for a in args.extra if a != "--"]
    cmd = lab_command(args.path, os.geteuid(), extra)
    sys.stdout.flush()
    os.execve(cmd[0], cmd, safe_environ())  # no empty/relative PYTHONPATH entry: the cwd again
    return 0  # pragma: no cover (execv does not return)
