"""Pristine host inputs of a kernel's buffers: drawn once per sweep, not once per unit.

Why: a sweep builds the same inputs (seeded random data, zeros, ones, a value) for every group,
reference part and output check of a size, and drawing 3 x 64 Mi random floats took ~2.5 s of every
256 MiB configuration on a CPU core. Within a process the last layout drawn is kept (up to
``HOST_INPUT_CACHE_BYTES``). A sweep in units measures each unit on a GPU in a fresh process
(``bench.units``), which would draw everything again per unit; so the parent gives every unit
worker one private folder (``shared_folder``, under /dev/shm where it has room: memory, not disk), the
first unit to need a layout writes it there and the later ones map it (``np.load(mmap_mode="r")``).
The data is the same by construction (same layout, same seed): what moves between units is where
the device buffers land, never their contents.

The folder is made by ``tempfile.mkdtemp`` (mode 0700, a fresh name with the sweep's pid) in the
sweep's own process and removed when the sweep ends (a killed sweep's folder by the next sweep); a file is written under a temporary name and renamed into place, so a
unit never maps half a file. Nothing in it is trusted across sweeps.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..devices.base import fill_host_array
from ..errors import ConfigError
from ..files import write_file
from ..kernels.spec import KernelSpec

if TYPE_CHECKING:  # numpy is imported in the functions that compute: `bench --help` loads this module without it
    import numpy as np

#: pristine host inputs of the last (buffers, n, seed) filled, reused up to this many bytes
HOST_INPUT_CACHE_BYTES = 1 << 30
#: the most bytes a sweep's shared folder holds (beyond it, layouts are drawn per unit)
SHARED_BYTES = 8 << 30
#: the kept inputs (at most one (layout, seed)); public: tests read and clear it to see a draw
HOST_INPUTS: dict[Any, dict[str, np.ndarray]] = {}
_HOST_LOCK = threading.Lock()
_SHARED: list[str | None] = [None]
#: layouts this process drew and mapped (a unit worker reports them: ``inputs.unit.K`` metadata)
COUNTS = {"drawn": 0, "mapped": 0}


def host_inputs(
    spec: KernelSpec, n: int, scalars: dict[str, Any], seed: int = 0, *, copy: bool = True
) -> dict[str, np.ndarray]:
    """Each buffer's host data (seeded random / zeros / ones / a value, in the spec's buffer order
    from one generator). ``copy``: fresh writable copies, so a reference that writes into them
    changes nothing kept; else the pristine arrays themselves, read-only."""
    import numpy as np

    layout = tuple((a.name, np.dtype(a.dtype), int(a.elements(n, scalars)), str(a.init)) for a in spec.buffers())
    key = (layout, int(seed))
    with _HOST_LOCK:
        kept = HOST_INPUTS.get(key)
    if kept is None:
        mapped = _shared(key)
        kept = mapped or _draw(spec, layout, seed)
        COUNTS["mapped" if mapped else "drawn"] += 1
        if mapped is None and sum(a.nbytes for a in kept.values()) > HOST_INPUT_CACHE_BYTES:
            return kept  # not kept: these are the only copies, the caller's to write
        for arr in kept.values():
            arr.setflags(write=False)
        if sum(a.nbytes for a in kept.values()) <= HOST_INPUT_CACHE_BYTES:
            with _HOST_LOCK:
                HOST_INPUTS.clear()
                HOST_INPUTS[key] = kept
    return {name: arr.copy() for name, arr in kept.items()} if copy else dict(kept)


def _draw(spec: KernelSpec, layout: tuple, seed: int) -> dict[str, np.ndarray]:
    import numpy as np

    rng = np.random.default_rng(seed)
    out = {}
    for (name, dtype, elements, _), a in zip(layout, spec.buffers()):
        arr = np.empty(elements, dtype=dtype)
        fill_host_array(arr, a.init, rng)
        out[name] = arr
    folder = _SHARED[0]
    if folder is not None:
        _save(folder, layout, seed, out)
    return out


def _stem(layout: tuple, seed: int) -> str:
    return hashlib.sha256(repr((layout, seed)).encode()).hexdigest()[:32]


def _shared(key: tuple) -> dict[str, np.ndarray] | None:
    """The layout from the sweep's shared folder, mapped read-only, or None."""
    import numpy as np

    folder = _SHARED[0]
    if folder is None:
        return None
    layout, seed = key
    stem = _stem(layout, seed)
    out = {}
    for i, (name, dtype, elements, _) in enumerate(layout):
        path = os.path.join(folder, f"{stem}-{i}.npy")
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            return None
        if arr.dtype != dtype or arr.shape != (elements,):
            return None
        out[name] = arr
    return out


def _save(folder: str, layout: tuple, seed: int, arrays: dict[str, np.ndarray]) -> None:
    """Write a drawn layout for the later units (skipped past ``SHARED_BYTES`` or when the folder
    is full: they then draw it themselves)."""
    import numpy as np

    nbytes = sum(a.nbytes for a in arrays.values())
    try:
        used = sum(e.stat().st_size for e in os.scandir(folder))
        if used + nbytes > SHARED_BYTES or shutil.disk_usage(folder).free < 2 * nbytes:
            return
        stem = _stem(layout, seed)
        for i, (name, *_rest) in enumerate(layout):
            final = os.path.join(folder, f"{stem}-{i}.npy")
            write_file(
                final, lambda f, a=arrays[name]: np.save(f, a, allow_pickle=False), what="shared inputs", durable=False
            )
    except (OSError, ConfigError):
        return  # a full or vanished folder: the later units draw their own


def share_in(folder: str | None) -> None:
    """Use ``folder`` (a sweep's shared folder, given to a unit worker) for this process's inputs."""
    _SHARED[0] = folder if folder and os.path.isdir(folder) else None


PREFIX = "hipexplore-inputs-"


#: /dev/shm is used when it has this much free (a container's is often 64 MiB), else the temp folder
SHM_MIN_FREE = 2 << 30


def _base() -> str:
    try:
        if os.access("/dev/shm", os.W_OK) and shutil.disk_usage("/dev/shm").free >= SHM_MIN_FREE:
            return "/dev/shm"
    except OSError:
        pass
    return tempfile.gettempdir()


def clean_leftovers(base: str | None = None) -> int:
    """Remove the shared folders of sweeps whose process died (a SIGKILL leaves its folder, and under
    /dev/shm that is memory): only this user's real folders named ``PREFIX<pid>-*`` whose creator is
    gone (by pid and start time: ``compile.host.creator_alive``). Returns how many were removed."""
    from ..compile.host import creator_alive, remove_tree

    base = base or _base()
    removed = 0
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(PREFIX)]
    except OSError:
        return 0
    for e in entries:
        pid = e.name[len(PREFIX) :].split("-", 1)[0]
        try:
            st = os.lstat(e.path)
        except OSError:
            continue
        if not (pid.isdigit() and stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()):
            continue
        if int(pid) != os.getpid() and not creator_alive(int(pid), st.st_mtime):
            removed += remove_tree(Path(e.path))
    return removed


@contextlib.contextmanager
def shared_folder() -> Iterator[str]:
    """A fresh private folder (mode 0700) for a sweep's units to share their inputs through,
    removed after; dead sweeps' folders are removed first (``clean_leftovers``)."""
    base = _base()
    clean_leftovers(base)
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = [
    "HOST_INPUTS",
    "HOST_INPUT_CACHE_BYTES",
    "PREFIX",
    "SHARED_BYTES",
    "clean_leftovers",
    "host_inputs",
    "share_in",
    "shared_folder",
]
