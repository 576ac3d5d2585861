"""Provenance for every recorded result: where, with what, from which revision, by which command.

Reviewers doubt numbers that cannot be traced; every parquet file, benchmark table and report
carries this dictionary. Values are plain strings so they store cleanly as parquet metadata.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import shlex
import subprocess
import sys
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

from . import __version__, settings

_PACKAGES = (
    "numpy",
    "pandas",
    "pyarrow",
    "hip-python",
    "cuda-bindings",
    "cuda-python",
    "nvidia-cuda-nvrtc",
    "torch",
    "triton",
    "matplotlib",
    "ipywidgets",
    "papermill",
    "nbconvert",
)


def _git(*args: str, cwd: Path) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def git_revision(path: str | os.PathLike | None = None) -> str:
    """``<sha>`` or ``<sha>+dirty`` (modified or untracked, not ignored, files present).

    ``HIPEXPLORE_GIT_REVISION`` overrides it, for copies of the tree without ``.git`` (the GPU
    machine receives the working tree only); ``unknown`` outside a checkout otherwise.
    """
    override = settings.GIT_REVISION.get()
    if override:
        return override
    cwd = Path(path) if path else Path(__file__).resolve().parent
    sha = _git("rev-parse", "HEAD", cwd=cwd)
    if not sha:
        return "unknown"
    dirty = _git("status", "--porcelain", cwd=cwd)
    return sha + ("+dirty" if dirty else "")


def _tree_revision(path: Path) -> tuple[str, str]:
    """(work tree revision ``<sha>`` or ``<sha>+dirty``, whether this file itself is modified)
    of the git work tree holding ``path``; ("", "") outside one."""
    cwd = path.parent
    sha = _git("rev-parse", "HEAD", cwd=cwd)
    if not sha:
        return "", ""
    dirty = _git("status", "--porcelain", cwd=cwd)
    mine = _git("status", "--porcelain", "--", path.name, cwd=cwd)
    return sha + ("+dirty" if dirty else ""), ("modified" if mine else "clean")


def code_provenance(specs: Any, compiler: str) -> dict[str, str]:
    """The code under review, per kernel: ``code.<kernel>.sha256`` (of the source the device
    compiles, its entry, arguments and options, so a variant differing only by an option or a
    scalar argument hashes differently),
    ``code.<kernel>.origin`` (the file it was read from, or ``hipexplore catalog``) and, for a file
    in a git work tree, ``code.<kernel>.git_revision`` (``<sha>[+dirty]``) and
    ``code.<kernel>.file`` (``clean`` / ``modified``). Catalog kernels live in hipexplore itself:
    their revision is ``git_revision``."""
    out: dict[str, str] = {}
    for spec in specs:
        name = spec.name
        try:
            text = spec.source_for(compiler)
            entry = spec.entry_for(compiler)
        except Exception as exc:  # a kernel without a source for this compiler: say so, keep going
            out[f"code.{name}.sha256"] = f"unavailable: {exc}"
            continue
        blob = "\0".join(
            [text, entry, repr(getattr(spec, "args", ())), *map(str, getattr(spec, "options", ()))]
        ).encode()
        out[f"code.{name}.sha256"] = hashlib.sha256(blob).hexdigest()[:16]
        where = getattr(spec, "source_path", None)
        out[f"code.{name}.origin"] = where or "hipexplore catalog (revision: git_revision)"
        if where:
            rev, state = _tree_revision(Path(where))
            if rev:
                out[f"code.{name}.git_revision"] = rev
                out[f"code.{name}.file"] = state
    return out


def package_versions(names: tuple[str, ...] = _PACKAGES) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def compiler_versions() -> dict[str, str]:
    """``compiler.<name>`` -> version, or why it is unavailable, and ``compiler_cache.<name>`` -> the
    compiler's own cache as a compile here would use it (``HIPEXPLORE_COMPILER_CACHE``). Never raises. Versions only
    (``Compiler.version``): every run records them, and the identities ``hipexplore info`` shows
    hash the compilers' files (1.4 s a run here, most of a small host sweep's CPU)."""
    try:
        from .compile.registry import COMPILERS, backend_class
    except Exception as exc:  # pragma: no cover - registry missing is a bug, keep provenance alive
        return {"compilers": f"unavailable: {exc}"}
    out: dict[str, str] = {}
    for name in COMPILERS:
        try:
            backend = backend_class(name)()
            available = backend.available()
            out[f"compiler.{name}"] = (
                str(backend.version() or "") if available else f"unavailable: {backend.unavailable_reason()}"
            )
            if available:  # its own cache (NVRTC's, COMGR's, Triton's) as a compile here would use it (issue 45)
                out[f"compiler_cache.{name}"] = str(backend.own_cache().label())
        except Exception as exc:  # noqa: BLE001 - provenance describes a broken install, never dies on it
            out[f"compiler.{name}"] = f"unavailable: {type(exc).__name__}: {exc}"
    return out


def default_command(argv: list[str], environ: Any = os.environ) -> str:
    """The command line that produced a result. In a Jupyter kernel ``sys.argv`` is
    ``ipykernel_launcher.py -f <connection file>``, which says nothing: name the notebook instead
    (JupyterLab puts its path in ``JPY_SESSION_NAME``)."""
    if not argv or not argv[0]:
        return ""
    if Path(argv[0]).name in ("ipykernel_launcher.py", "ipykernel_launcher", "__main__.py") and "-f" in argv:
        nb = environ.get("JPY_SESSION_NAME", "")
        return f"notebook {nb}" if nb else "interactive Jupyter kernel (notebook path not known)"
    return shlex.join([Path(argv[0]).name, *argv[1:]])


def machine_hash(machine_id: str, hostname: str, node: int) -> str:
    """12 hex digits that differ between machines but do not reveal them: containers often share a
    hostname (``vm``) and some have no machine-id, so the id, the hostname and the MAC-derived node
    number are hashed together."""
    return hashlib.sha256(f"{machine_id.strip()}|{hostname}|{node:x}".encode()).hexdigest()[:12]


def _machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            return Path(path).read_text().strip()
        except OSError:
            continue
    return ""


def describe_value(key: str, value: Any, props: dict[str, Any]) -> str:
    """A device property as text; an empty or NaN value says what it means instead."""
    text = str(value)
    if key == "peak_bandwidth_gbs" and text.lower() == "nan":
        why = str(props.get("peak_bandwidth_source") or "no datasheet value for this device")
        return why if why.lower().startswith("unknown") else f"unknown: {why}"
    if text.strip() == "" or text.lower() == "nan":
        return "n/a (not reported by this device)"
    return text


def collect(device: Any = None, command: str | list[str] | None = None, compilers: bool = True) -> dict[str, str]:
    """Provenance as a flat ``{str: str}`` dict.

    device: a hipexplore device (its ``properties`` are flattened under ``device.*``) or None.
    command: the command line that produced the result (defaults to this process's argv).
    """
    if command is None or command == "" or command == []:
        command = default_command(list(sys.argv))
    if not isinstance(command, str):
        command = shlex.join(str(c) for c in command)
    info: dict[str, str] = {
        "hipexplore": __version__,
        "git_revision": git_revision(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname_hash": machine_hash(_machine_id(), platform.node(), uuid.getnode()),
        "cpu": _cpu_model(),
        "cpu_count": str(os.cpu_count() or ""),
    }
    info.update({f"package.{k}": v for k, v in package_versions().items()})
    if compilers:
        info.update(compiler_versions())
    if device is not None:
        values = device.properties.as_dict()  # a Device's DeviceProperties (devices.base)
        extra = values.pop("extra", None) or {}
        for k, v in values.items():
            info[f"device.{k}"] = describe_value(k, v, values)
        for k, v in extra.items():  # what one runtime reports (CUDA: the persisting-L2 set-aside)
            info.setdefault(f"device.{k}", str(v))
    return info
