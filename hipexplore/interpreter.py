"""Command lines for every Python interpreter hipexplore starts: never the working directory on its path.

Why: a fresh ``python -c CODE`` puts ``''`` (the working directory) first on ``sys.path``, and
``python -m MODULE`` puts the working directory's full path there. A ``json.py`` planted in a
world-writable folder (``/tmp``, a shared scratch space) then ran, as whoever ran hipexplore there,
in every compile worker, the hiprtc dependency helper and every sweep worker, before a line of
ours; and a user whose project folder holds a ``random.py`` of their own saw the workers break.

So every child that runs our code starts *isolated* (``isolated_argv``: ``-I``, i.e. no working
directory, no ``PYTHON*`` variables, no user-site hooks of its own) and gets the parent's
``sys.path`` explicitly (``child_path``): the same packages as the parent (``PYTHONPATH`` entries,
the venv, an extra folder such as ``.hip-python-10``, the parent's user site-packages with its
``.pth`` hooks when the parent had them), less the working directory Python put there implicitly.
The path travels on the command line as a count and the entries (``PATH_PRELUDE`` reads them with
nothing but ``sys``, a built-in no file can stand in for), so the child needs no ``json`` before its
path is set. For processes whose command line is not ours to write (the Jupyter kernel, started from
its kernelspec ``argv``; JupyterLab) ``safe_path_argv`` adds ``-P``: the interpreter keeps its usual
environment but never prepends the working directory (Python >= 3.11, hence ``requires-python``).

The lowest floor: it imports only the standard library, so any launcher may use it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

#: Prepended to an isolated child's code: ``sys.argv[1]`` is a count N, ``sys.argv[2]`` the parent's
#: user site-packages folder when the parent had one on its path (its ``.pth`` files are processed
#: again: a ``pip install --user -e`` finder lives there) or ``''``, ``sys.argv[3:3+N]`` the parent's
#: path. They replace ``sys.path`` and leave ``sys.argv`` as ``['-c', *args]``. It imports ``sys``
#: (built in) and ``site`` (frozen, and loaded at start-up): nothing is looked up on a path.
PATH_PRELUDE = (
    "import sys\n"
    "_n = int(sys.argv[1])\n"
    "if sys.argv[2]:\n"
    "    import site; site.addsitedir(sys.argv[2])\n"
    "sys.path[:] = sys.argv[3:3 + _n]; del sys.argv[1:3 + _n], _n\n"
)

#: Interpreter options whose argument is the next command-line word when not attached (``-W x``).
_WITH_VALUE = frozenset("WX")


def run_mode(orig_argv: Sequence[str]) -> str:
    """How the interpreter was started, from its own command line (``sys.orig_argv``): ``"-c"``,
    ``"-m"``, ``"script"`` or ``""`` (interactive or standard input). It decides what Python put
    first on ``sys.path``: ``''`` for -c and interactive, the working directory for -m. Public: its tests
    pin the parse on command lines this process was not started with."""
    args = list(orig_argv[1:])
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return "script" if i + 1 < len(args) else ""
        if arg == "-":
            return ""
        if not arg.startswith("-"):
            return "script"
        if arg.startswith("--"):
            i += 2 if arg == "--check-hash-based-pycs" else 1
            continue
        for j, ch in enumerate(arg[1:], 1):
            if ch in "cm":
                return "-" + ch
            if ch in _WITH_VALUE:
                i += 1 if j == len(arg) - 1 else 0  # "-W x": the value is the next word
                break
        i += 1
    return ""


def _explicit_entries(environ: Mapping[str, str]) -> set[str]:
    """The ``PYTHONPATH`` entries as Python made them (absolute): a working directory named there on
    purpose stays (``PYTHONPATH=$PWD`` in a checkout)."""
    if sys.flags.ignore_environment:
        return set()
    return {os.path.abspath(p) for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p}


def implicit_cwd_entries(
    orig_argv: Sequence[str] | None = None, cwd: str | None = None, safe_path: bool | None = None
) -> set[str]:
    """The absolute spellings of the working directory Python itself put on ``sys.path`` at start-up:
    the directory, for ``python -m`` without ``-P``/``-I``; none otherwise (``''`` is always left
    out by ``child_path``, and a script's own folder is the script's, not the working directory's)."""
    safe = (sys.flags.safe_path or sys.flags.isolated) if safe_path is None else safe_path
    if safe or run_mode(sys.orig_argv if orig_argv is None else orig_argv) != "-m":
        return set()
    here = os.getcwd() if cwd is None else cwd
    return {here, os.path.realpath(here)}


def child_path(
    path: Sequence[object] | None = None,
    *,
    orig_argv: Sequence[str] | None = None,
    cwd: str | None = None,
    environ: Mapping[str, str] | None = None,
    safe_path: bool | None = None,
) -> list[str]:
    """The parent's ``sys.path`` (or ``path``) as a child should get it: every entry in its order,
    without ``''``, ``'.'`` and other relative spellings of "here", without the working directory
    ``python -m`` prepended (unless ``PYTHONPATH`` names it too), without duplicates and non-strings.
    The arguments after ``path`` stand in for this process's own start-up facts (tests)."""
    implicit = implicit_cwd_entries(orig_argv, cwd, safe_path) - _explicit_entries(
        os.environ if environ is None else environ
    )
    out: list[str] = []
    for entry in sys.path if path is None else path:
        if not isinstance(entry, str) or os.path.normpath(entry) == "." or entry in implicit or entry in out:
            continue
        out.append(entry)
    return out


def _inherited_options() -> list[str]:
    """The parent's options an isolated child would otherwise lose with its ``PYTHON*`` variables:
    no ``.pyc`` writing (``-B``, ``PYTHONDONTWRITEBYTECODE``), UTF-8 mode (``PYTHONUTF8``)."""
    out = ["-B"] if sys.flags.dont_write_bytecode else []
    if sys.flags.utf8_mode:
        out += ["-X", "utf8"]
    return out


def _user_site(entries: Sequence[str]) -> str:
    """This process's user site-packages folder when it is on the child's path (``-I`` would skip
    its ``.pth`` files: the user's own, which this process ran too), else ``''``."""
    import site

    user_site = site.USER_SITE if site.ENABLE_USER_SITE else None
    return user_site if user_site and user_site in entries else ""


def isolated_argv(
    code: str,
    *args: str,
    path: Sequence[object] | None = None,
    executable: str | None = None,
    prefix: Sequence[str] = (),
) -> list[str]:
    """``[*prefix, python, -I, ..., -c, PATH_PRELUDE + code, N, USER_SITE, *entries, *args]``: ``code``
    runs with ``sys.path`` = ``child_path(path)`` and ``sys.argv`` = ``['-c', *args]``, and nothing
    from the working directory or the ``PYTHON*`` variables. The one way hipexplore starts a Python
    of its own (compile workers, sweep workers, the hiprtc dependency helper). ``prefix``: a program
    that starts the interpreter itself (a profiler: ``ncu ... --``, ``rocprofv3 ... --``; the counter
    pass's worker, ``bench.counters``); the interpreter's own command line is the same behind it."""
    entries = child_path(path)
    return [
        *map(str, prefix),
        executable or sys.executable,
        "-I",
        *_inherited_options(),
        "-c",
        PATH_PRELUDE + code,
        str(len(entries)),
        _user_site(entries),
        *entries,
        *map(str, args),
    ]


def safe_path_argv(*args: str, executable: str | None = None) -> list[str]:
    """``[python, -P, *args]``: for a process whose command line is written elsewhere (a kernelspec,
    ``python -m jupyterlab``): its environment stays (``PYTHONPATH``, the user's kernel extensions),
    but the working directory is never prepended to its path."""
    return [executable or sys.executable, "-P", *map(str, args)]


def safe_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``environ`` (default ``os.environ``) for a ``safe_path_argv`` process: ``PYTHONPATH``
    keeps only its absolute entries. ``-P`` stops Python prepending the working directory, but an
    empty or relative ``PYTHONPATH`` entry (``PYTHONPATH=$PYTHONPATH:/x`` with the variable unset
    gives ``:/x``) is the working directory again, named by the user's own variable."""
    env = dict(os.environ if environ is None else environ)
    if "PYTHONPATH" in env:
        kept = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and os.path.isabs(p)]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            env.pop("PYTHONPATH")
    return env


def kernel_argv(executable: str | None = None) -> list[str]:
    """The ``argv`` of the ``hipexplore`` Jupyter kernelspec (``hipexplore report``'s own kernel and
    the one ``scripts/install_kernel.sh`` installs): ipykernel with a safe path. IPython adds
    ``''`` to a kernel's path unless the interpreter runs with ``-P`` (``sys.flags.safe_path``)."""
    return safe_path_argv("-m", "ipykernel_launcher", "-f", "{connection_file}", executable=executable)
