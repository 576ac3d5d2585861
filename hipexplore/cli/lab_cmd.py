"""``hipexplore lab [PATH] [--workspace DIR] [-- JUPYTERLAB OPTIONS]``: JupyterLab on the notebooks.

Without PATH (or with the shipped notebooks' folder, a clone's ``notebooks/``) it opens *copies*
of the shipped notebooks in your workspace (default: hipexplore's user data folder; ``--workspace
DIR``): JupyterLab saves outputs into the file it opened, and that must be neither the installed
package nor a repository's tracked files. Copies already there are yours and are kept. Any other
PATH (a folder or notebook of your own) is opened as it is.

The notebooks ask for the kernel ``hipexplore``: it is registered as the Python that runs this
command (its environment named in the kernel menu) and put first for this JupyterLab, so no other
environment's ``hipexplore`` kernel answers and JupyterLab asks for no kernel.

Why a wrapper for ``jupyter lab`` too: as root, plain ``jupyter lab`` refuses to start ("Running as
root is not recommended") unless given ``--allow-root``, a flag only wanted when the user *is*
root; ``lab_command`` adds it exactly then. Everything after ``--`` goes to JupyterLab unchanged
(``hipexplore lab -- --no-browser --port 8890``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from ..interpreter import safe_environ, safe_path_argv

#: what ``hipexplore lab`` needs besides the core: the server and the kernel, and what the notebooks
#: use (widgets, figures, the script -> notebook step)
LAB_MODULES = ("jupyterlab", "ipykernel", "ipywidgets", "matplotlib", "jupytext", "nbformat")


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
HELP = "start JupyterLab on copies of the notebooks in your workspace (adds --allow-root only when run as root)"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        COMMAND,
        help=HELP,
        usage="hipexplore lab [-h] [--workspace DIR] [PATH] [-- JUPYTERLAB OPTIONS ...]",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "path",
        nargs="?",
        default=None,
        help="a folder or notebook of your own to open (default: your workspace's copies of the shipped notebooks)",
    )
    p.add_argument(
        "--workspace",
        metavar="DIR",
        help="where the shipped notebooks are copied and opened "
        "(default: hipexplore's user data folder, e.g. ~/.local/share/hipexplore/workspace)",
    )
    p.set_defaults(func=run, passthrough=[])


def target(path: str | None, workspace: str | None) -> tuple[Path, str]:
    """What JupyterLab opens, and the line that says so: the workspace copies (no PATH, or the
    shipped folder or one of its notebooks), else PATH as given."""
    from ..errors import ConfigError
    from ..report import workspace as ws

    shipped_file = None
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise ConfigError(
                f"path {path!r} does not exist; expected a folder or notebook of yours, "
                "or no PATH for the shipped notebooks (copied into your workspace)"
            )
        if p.is_file() and ws.is_shipped_folder(p.parent) and p.stem in ws.NOTEBOOKS:
            shipped_file = ws.NOTEBOOKS[p.stem]
        elif not ws.is_shipped_folder(p):
            if workspace is not None:
                raise ConfigError(
                    f"--workspace is where the shipped notebooks are copied; "
                    f"PATH {path!r} is a folder or notebook of your own: give one or the other"
                )
            return p, f"hipexplore lab: opening {path} as it is"
    folder = Path(workspace).expanduser() if workspace else ws.default_workspace()
    words = ws.write_workspace(folder)
    line = f"hipexplore lab: the shipped notebooks are copies in {folder} (yours to change and run): {', '.join(words)}"
    return (folder / shipped_file if shipped_file else folder), line


def run(args: argparse.Namespace) -> int:
    from ..extras import require_modules

    require_modules(LAB_MODULES, "hipexplore lab", "notebook")
    from ..report import workspace as ws

    opened, line = target(args.path, args.workspace)
    env = ws.kernel_environment(os.environ)
    print(line, file=sys.stderr)
    print(
        f"hipexplore lab: kernel '{ws.KERNEL_NAME}' is this Python ({sys.executable}): '{ws.kernel_display_name()}'",
        file=sys.stderr,
    )
    stale = ws.stale_kernel_note()  # a plain `jupyter lab` would ask for a kernel: say so, and how to repair it
    if stale:
        print(stale, file=sys.stderr)
    cmd = lab_command(str(opened), os.geteuid(), args.passthrough)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cmd[0], cmd, safe_environ(env))  # no empty/relative PYTHONPATH entry: the cwd again
    return 0  # pragma: no cover (execve does not return)
