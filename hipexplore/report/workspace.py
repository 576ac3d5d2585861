"""The shipped notebooks: where their source is, the ``.ipynb`` made from it, the user's copies.

Why: a notebook run in JupyterLab saves its outputs into the file it was opened from. With tracked
``notebooks/*.ipynb`` every run from a clone dirtied the repository (and every later report's
provenance read ``+dirty``); from a pip install it would write into the installed package. So the
jupytext percent scripts ``notebooks/*.py`` are the one source (outputs cannot live in them; no
``.ipynb`` is tracked), and an ``.ipynb`` is always *made* from a script into a folder that is not
the source's: a per-process temporary folder for ``hipexplore report`` (``notebook_path``), the
user's workspace for ``hipexplore lab`` (``write_workspace``; the user's own copies, never
overwritten). The package reaches the scripts as ``hipexplore/notebooks/``, a symlink to
``../notebooks`` in a checkout and real files in a wheel. Lookup order: ``$HIPEXPLORE_NOTEBOOKS``,
then ``hipexplore/notebooks/``, then ``<repo>/notebooks/``; in a folder the ``.py`` script wins and
an ``.ipynb`` is read only where no script of that name is there (a folder of one's own notebooks).

``hipexplore lab`` also registers the kernel the notebooks ask for (``hipexplore``) as the Python
that runs it (``kernel_environment``): a spec in hipexplore's own data folder, first on the
server's ``JUPYTER_PATH``, so an older ``hipexplore`` spec pointing at another environment never
answers, and JupyterLab never asks which kernel to use.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Mapping

from .. import settings
from ..errors import ConfigError
from ..extras import require
from ..interpreter import kernel_argv

#: The notebooks that ship with hipexplore, by short name (the ``.ipynb`` name each is made as).
NOTEBOOKS = {
    "compile_cache": "compile_cache.ipynb",
    "rotating_buffers": "rotating_buffers.ipynb",
    "dashboard": "dashboard.ipynb",
    "review": "review.ipynb",
}
#: The kernel the notebooks ask for (their metadata) and papermill starts.
KERNEL_NAME = "hipexplore"
#: What running a shipped notebook needs besides the core (the extra ``notebook``): making it from
#: its script, executing it, exporting it, and what the notebooks import.
RUN_MODULES = ("jupytext", "nbformat", "papermill", "nbconvert", "ipykernel", "matplotlib")


def notebooks_dir() -> Path:
    """The folder holding the shipped notebooks' scripts (see the module docstring for the order)."""
    env = settings.NOTEBOOKS.get()
    candidates = [env] if env is not None else []
    here = Path(__file__).resolve().parents[1]  # the hipexplore package
    candidates += [here / "notebooks", here.parent / "notebooks"]
    for cand in candidates:
        if any((cand / f"dashboard{ext}").is_file() for ext in (".py", ".ipynb")):
            return cand
    raise ConfigError(f"no hipexplore notebooks found; looked for dashboard.py in {[str(c) for c in candidates]}")


def source_path(name: str) -> Path:
    """The source of shipped notebook ``name``: its script, else an ``.ipynb`` of that name."""
    if name not in NOTEBOOKS:
        raise ConfigError(f"notebook {name!r} is not one of {sorted(NOTEBOOKS)}")
    folder = notebooks_dir()
    script = folder / f"{name}.py"
    return script if script.is_file() else folder / NOTEBOOKS[name]


def is_shipped_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is the folder of the shipped notebooks (a clone's ``notebooks/``, the
    installed ``hipexplore/notebooks``)."""
    try:
        shipped = {notebooks_dir().resolve()}
    except ConfigError:
        shipped = set()
    shipped.add((Path(__file__).resolve().parents[1] / "notebooks").resolve())
    return Path(path).resolve() in shipped


def _inside_shipped(path: Path) -> bool:
    """``path`` is the shipped folder, lies in it, or in the installed package: no output goes there."""
    here = path.resolve()
    package = Path(__file__).resolve().parents[1]
    roots = {package, (package / "notebooks").resolve()}
    try:
        roots.add(notebooks_dir().resolve())
    except ConfigError:
        pass
    return any(here == r or r in here.parents for r in roots)


def read_notebook(name: str) -> Any:
    """Shipped notebook ``name`` as a notebook node made from its source: no outputs, the
    ``hipexplore`` kernelspec and the language (``language_info``), cell ids numbered (the same file
    every time), and no jupytext pairing (saving a copy must not write a script beside it).

    Why the language: JupyterLab starts the kernel a notebook names, else the one installed kernel of
    the notebook's ``language_info.name`` (never the kernelspec's ``language``), else it asks "Select
    Kernel". A made notebook without it opened in a plain ``jupyter lab`` where no ``hipexplore``
    kernelspec is installed (a pip install, a fresh HOME) asked, although Python 3 was the only choice."""
    jupytext = require("jupytext", "making a notebook from its script", "notebook")
    path = source_path(name)
    nb = jupytext.read(str(path), fmt="py:percent") if path.suffix == ".py" else jupytext.read(str(path))
    nb.metadata.pop("jupytext", None)
    nb.metadata.setdefault(
        "kernelspec", {"name": KERNEL_NAME, "display_name": "Python (hipexplore)", "language": "python"}
    )
    nb.metadata.setdefault("language_info", {"name": "python"})
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name}-{i}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def _text(name: str) -> str:
    nbformat = require("nbformat", "making a notebook from its script", "notebook")
    return nbformat.writes(read_notebook(name))


_LOCK = threading.Lock()
_MADE: dict[str, tuple[tuple[str, int, int], Path]] = {}  # name -> (source path, mtime, size), made file
_FOLDER: list[Path] = []


def _scratch() -> Path:
    if not _FOLDER:
        folder = Path(tempfile.mkdtemp(prefix="hipexplore-notebooks-"))
        atexit.register(shutil.rmtree, folder, True)
        _FOLDER.append(folder)
    return _FOLDER[0]


def notebook_path(name: str | os.PathLike) -> Path:
    """A shipped notebook by short name (``dashboard``): an ``.ipynb`` made from its source in this
    process's temporary folder (made again when the source changes). Or an existing ``.ipynb`` path."""
    if str(name) in NOTEBOOKS:
        src = source_path(str(name))
        st = src.stat()
        key = (str(src), st.st_mtime_ns, st.st_size)
        with _LOCK:
            made = _MADE.get(str(name))
            if made is None or made[0] != key or not made[1].is_file():
                out = _scratch() / NOTEBOOKS[str(name)]
                _atomic_text(out, _text(str(name)))
                _MADE[str(name)] = (key, out)
            return _MADE[str(name)][1]
    path = Path(name)
    if path.suffix == ".ipynb" and path.is_file():
        return path
    raise ConfigError(f"notebook {str(name)!r} is neither one of {sorted(NOTEBOOKS)} nor an existing .ipynb file")


def _atomic_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------------------------------------
# hipexplore lab: the user's workspace and the kernel


def data_dir() -> Path:
    """hipexplore's per-user data folder (platformdirs: ``~/.local/share/hipexplore`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("hipexplore", appauthor=False))


def default_workspace() -> Path:
    return data_dir() / "workspace"


#: a workspace copy larger than this is not read to compare it (a notebook with many figures can be
#: large; one this size is the user's, and is said to differ)
COMPARE_MAX_BYTES = 64 << 20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def write_workspace(folder: str | os.PathLike) -> list[str]:
    """Copy every shipped notebook into ``folder`` as ``NAME.ipynb`` where no file of that name is
    there yet; a copy already there is the user's (their edits, their outputs) and is kept. Returns
    one word per notebook: ``NAME.ipynb (new)``, ``NAME.ipynb (kept)`` (the whole notebook, outputs
    and kernelspec too, is the shipped one) or ``NAME.ipynb (yours, kept as it is: its ... differ
    from the shipped one; ...)``.

    Refused in one line: the shipped folder itself; a folder another user owns or others may write
    into (``own_workspace``: they could plant notebooks there, or links JupyterLab saves through);
    a notebook name there that is a link, not a regular file, or another user's file (never opened)."""
    folder = Path(folder).expanduser()
    if _inside_shipped(folder) or (folder.exists() and not folder.is_dir()):
        raise ConfigError(
            f"workspace {str(folder)!r} must be a folder of your own, outside the shipped notebooks "
            f"and the installed package (default: {default_workspace()})"
        )
    fd = own_workspace(folder)
    try:
        for file in NOTEBOOKS.values():  # every name first: a refusal leaves the folder as it was
            _check_existing(fd, folder, file)
        return [_place(fd, folder, name, file) for name, file in NOTEBOOKS.items()]
    finally:
        os.close(fd)


def _others_can_write(st: os.stat_result, sticky_ok: bool) -> str:
    """Why users other than this one may add, remove or rename entries of the folder ``st`` (a
    sticky one only their own where ``sticky_ok``), or ``""``. A group-writable folder whose group
    holds no other user (a user-private group under umask 002) is this user's alone."""
    mode = stat.S_IMODE(st.st_mode)
    if sticky_ok and mode & stat.S_ISVTX:
        return ""
    if st.st_uid not in (os.geteuid(), 0) and mode & 0o200:
        return f"belongs to another user (uid {st.st_uid})"
    if mode & 0o002:
        return f"is writable by every user (mode {mode:04o})"
    if mode & 0o020 and _group_has_others(st.st_gid):
        return f"is writable by its group, gid {st.st_gid}, which has other members (mode {mode:04o})"
    return ""


def _group_has_others(gid: int) -> bool:
    try:
        import grp
        import pwd
    except ImportError:  # pragma: no cover - not POSIX
        return True
    me = os.geteuid()
    try:
        members = set(grp.getgrgid(gid).gr_mem)
    except KeyError:
        return True  # a group nobody can name: assume others
    try:
        members.discard(pwd.getpwuid(me).pw_name)
    except KeyError:
        pass
    return bool(members) or any(p.pw_gid == gid and p.pw_uid != me for p in pwd.getpwall())


def own_workspace(folder: Path) -> int:
    """A descriptor of ``folder``, made here (0700) when missing, else refused in one line when it
    is not this user's own: another user's folder, one others may write into, or a link another
    user made; its parent must not let others rename it away (a sticky one such as /tmp is fine)."""
    shown = str(folder)
    made = False
    if not os.path.lexists(folder):
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(folder, 0o700)
            made = True
        except FileExistsError:
            pass
    link = os.lstat(folder)
    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (os.geteuid(), 0):
        raise ConfigError(
            f"workspace {shown!r} is a symbolic link another user (uid {link.st_uid}) made; refused: "
            f"choose a folder of your own with --workspace"
        )
    try:
        fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"cannot open workspace {shown!r}: {exc.strerror or exc}") from None
    st = os.fstat(fd)
    why = (
        ("" if st.st_uid == os.geteuid() else f"belongs to another user (uid {st.st_uid})")
        or _others_can_write(st, sticky_ok=False)
        or _parent_problem(folder)
    )
    if why:
        os.close(fd)
        if made:
            os.rmdir(folder)
        raise ConfigError(
            f"workspace {shown!r} {why}; refused (others could plant notebooks or links there that "
            f"JupyterLab would run or save through): choose a folder of your own with --workspace, or "
            f"make it yours alone (chmod go-w)"
        )
    return fd


def _parent_problem(folder: Path) -> str:
    parent = Path(os.path.realpath(folder)).parent
    try:
        why = _others_can_write(os.stat(parent), sticky_ok=True)
    except OSError:
        return ""
    return f"is in {str(parent)!r}, which {why}: others could rename it and put theirs in its place" if why else ""


def _place(fd: int, folder: Path, name: str, file: str) -> str:
    """Shipped notebook ``name`` as ``file`` in the opened workspace: made where absent (never
    through a link), else compared whole with the shipped one."""
    text = _text(name)
    try:
        out = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=fd)
    except FileExistsError:
        out = None
    if out is not None:
        with os.fdopen(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        return f"{file} (new)"
    _check_existing(fd, folder, file)
    return f"{file} ({_differs(fd, file, json.loads(text))})"


def _check_existing(fd: int, folder: Path, file: str) -> None:
    """A notebook name in the workspace that is a link, not a regular file, or another user's file
    is refused in one line (never opened)."""
    try:
        st = os.stat(file, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    what = (
        "a symbolic link"
        if stat.S_ISLNK(st.st_mode)
        else "not a regular file"
        if not stat.S_ISREG(st.st_mode)
        else f"another user's file (uid {st.st_uid})"
        if st.st_uid != os.geteuid()
        else ""
    )
    if what:
        raise ConfigError(
            f"workspace {str(folder)!r}: {file} there is {what}; hipexplore neither opens nor replaces it, "
            f"and JupyterLab would open it (and save through a link): remove it, or choose another --workspace"
        )


def _differs(fd: int, file: str, shipped: dict[str, Any]) -> str:
    """``kept`` when the copy is the shipped notebook whole (cells, outputs, kernelspec, metadata),
    else what differs, in words."""
    try:
        src = os.open(file, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
        with os.fdopen(src, "rb") as fh:
            data = fh.read(COMPARE_MAX_BYTES + 1)
        mine = json.loads(data) if len(data) <= COMPARE_MAX_BYTES else None
    except (OSError, ValueError):
        mine = None
    if mine == shipped:
        return "kept"
    if not isinstance(mine, dict):
        parts = ["it is not a notebook hipexplore can read"]
    else:
        parts = _parts_that_differ(mine, shipped)
    return f"yours, kept as it is: {', '.join(parts)}; move it away to get the shipped one"


def _parts_that_differ(mine: dict[str, Any], shipped: dict[str, Any]) -> list[str]:
    def cells(nb: dict[str, Any], what: str) -> list[Any]:
        out = []
        for c in nb.get("cells", []) if isinstance(nb.get("cells"), list) else []:
            c = c if isinstance(c, dict) else {}
            src = c.get("source", "")
            out.append(
                (c.get("cell_type"), "".join(src) if isinstance(src, list) else src)
                if what == "source"
                else (c.get("outputs"), c.get("execution_count"))
            )
        return out

    meta = mine.get("metadata") if isinstance(mine.get("metadata"), dict) else {}
    parts = []
    if cells(mine, "source") != cells(shipped, "source"):
        parts.append("its cells differ from the shipped ones")
    if any(o or n is not None for o, n in cells(mine, "outputs")):
        parts.append("it holds outputs of an earlier run")
    spec = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
    if spec != shipped["metadata"]["kernelspec"]:
        parts.append(f"its kernel is {_shown_name(spec.get('name'))}, not {KERNEL_NAME!r}")
    rest = {k: v for k, v in meta.items() if k != "kernelspec"}
    if rest != {k: v for k, v in shipped["metadata"].items() if k != "kernelspec"} or {
        k: v for k, v in mine.items() if k not in ("cells", "metadata")
    } != {k: v for k, v in shipped.items() if k not in ("cells", "metadata")}:
        parts.append("its notebook metadata differ")
    return parts or ["its cells' ids or metadata differ"]


def _shown_name(value: Any) -> str:
    from ..untrusted import shown

    return shown(str(value), 60) if value is not None else "not named"


def kernel_display_name(prefix: str | None = None) -> str:
    """``Python (hipexplore: ~/venvs/x)``: which environment runs the notebooks, in the kernel menu."""
    prefix = sys.prefix if prefix is None else prefix
    home = os.path.expanduser("~")
    if home not in ("", "/") and (prefix == home or prefix.startswith(home + os.sep)):
        prefix = "~" + prefix[len(home) :]
    return f"Python (hipexplore: {prefix})"


def register_kernel() -> Path:
    """Write kernelspec ``hipexplore`` for this Python (``kernel_argv``: -P, no working directory on
    its path) into a folder of this environment's own under ``data_dir()``, and return the folder to
    put first on ``JUPYTER_PATH``. Per environment, so two environments' labs never swap kernels."""
    tag = hashlib.sha256(f"{sys.executable}\0{sys.prefix}".encode()).hexdigest()[:16]
    root = data_dir() / "kernels" / tag
    spec_dir = root / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": kernel_argv(),
        "display_name": kernel_display_name(),
        "language": "python",
        "metadata": {"hipexplore_prefix": sys.prefix},
    }
    _atomic_text(spec_dir / "kernel.json", json.dumps(spec, indent=1) + "\n")
    return root


def kernel_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with this Python's ``hipexplore`` kernelspec first on ``JUPYTER_PATH``."""
    env = dict(environ)
    root = str(register_kernel())
    env["JUPYTER_PATH"] = os.pathsep.join([root, *[p for p in env.get("JUPYTER_PATH", "").split(os.pathsep) if p]])
    return env


def stale_kernel_note() -> str:
    """One line where the ``hipexplore`` kernelspec a plain ``jupyter lab`` starts (the first of that
    name on this process's Jupyter path: ``setup.sh`` installs one per user, and each clone's run
    rewrites it) names a Python that no longer exists (its environment removed): JupyterLab then shows
    "Error Starting Kernel" and asks "Select Kernel". ``hipexplore lab`` puts its own spec first and is
    not affected; the line says how to repair the other. "" when the spec is absent or sound."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    except ImportError:
        return ""
    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except (NoSuchKernel, OSError, ValueError):
        return ""
    python = spec.argv[0] if spec.argv else ""
    if not os.path.isabs(python) or os.path.exists(python):
        return ""
    return (
        f"hipexplore lab: note: kernel '{KERNEL_NAME}' of a plain `jupyter lab` ({spec.resource_dir}) runs {python}, "
        f"which no longer exists, so there JupyterLab asks for a kernel; this lab uses its own. To repair it: "
        f"scripts/install_kernel.sh {sys.executable} (in a clone), or {sys.executable} -m ipykernel install --user "
        f"--name {KERNEL_NAME}"
    )
