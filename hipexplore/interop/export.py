"""``hipexplore bench --export FORMAT FILE``: a sweep's result in another tool's format.

* ``nvbench``: nvbench-shaped JSON that nvbench's compare scripts read (``nvbench_files.write``);
* ``pyperf``: a pyperf file that ``pyperf compare_to`` and ``pyperf stats`` read (``pyperf_files.write``);
* ``bencher``: the Bencher Metric Format, one entry per configuration with the measure ``latency``
  (nanoseconds, as Bencher's own harness adapters report it): ``value`` the median, ``lower_value`` /
  ``upper_value`` the ends of its 95% interval (between units where the sweep had them).

The path is checked before the sweep starts (``check_export_path``): the folder must be this
user's own, or a sticky folder of root's (``/tmp``). A folder of another user, or one others may
write without the sticky bit, is refused in one line: whoever owns it could swap the file for a
link, or read a result that was not meant for them. The file is written through
``files.write_file`` (a temporary beside it, renamed; no link followed).
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError

EXPORT_FORMATS = ("nvbench", "pyperf", "bencher")


def check_format(fmt: str) -> str:
    if fmt not in EXPORT_FORMATS:
        raise ConfigError(f"--export format {fmt!r} is unknown; expected one of {', '.join(EXPORT_FORMATS)}")
    return fmt


def check_export_path(path: str, flag: str = "--export") -> Path:
    """Refuse, before anything runs, an export path whose folder is another user's or writable by
    others without the sticky bit, a folder itself, or a file that exists and is not a regular file."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    try:
        st = os.stat(folder)
    except OSError as exc:
        raise ConfigError(
            f"{flag} {path!r}: its folder {str(folder)!r} cannot be used ({exc.strerror}); give a path in a "
            f"folder of yours"
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{flag} {path!r}: {str(folder)!r} is not a folder")
    sticky = bool(st.st_mode & stat.S_ISVTX)
    me = os.geteuid()
    if st.st_uid != me and not (st.st_uid == 0 and sticky):
        raise ConfigError(
            f"{flag} {path!r}: the folder {str(folder)!r} belongs to another user (uid {st.st_uid}); "
            f"refused (its owner could replace the file or read it): give a path in a folder of yours"
        )
    if st.st_mode & 0o022 and not sticky:
        raise ConfigError(
            f"{flag} {path!r}: the folder {str(folder)!r} is writable by others (mode "
            f"{stat.S_IMODE(st.st_mode):04o}, not sticky); refused: give a path in a folder of yours"
        )
    if p.is_dir():
        raise ConfigError(f"{flag} {path!r} is a folder; expected a file name")
    if os.path.lexists(p) and not p.is_file():
        raise ConfigError(f"{flag} {path!r} exists and is not a regular file (a link or a device); refused")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"{flag} {path!r}: the folder {str(folder)!r} is not writable by you")
    return p


def bencher(summary: Any) -> str:
    """The Bencher Metric Format of a summary (module docstring)."""
    from .pyperf_files import config_label as label  # one name per configuration across the formats

    out: dict[str, Any] = {}
    for r in summary.to_dict("records"):
        med = float(r["median_s"])
        if not math.isfinite(med):
            continue
        lo, hi = float(r.get("ci_low_s", math.nan)), float(r.get("ci_high_s", math.nan))
        entry = {"value": med * 1e9}
        if math.isfinite(lo) and math.isfinite(hi):
            entry.update(lower_value=lo * 1e9, upper_value=hi * 1e9)
        out[label(r)] = {"latency": entry}
    return json.dumps(out, indent=1, sort_keys=True)


def render(fmt: str, summary: Any, samples: Any, metadata: Mapping[str, str]) -> str:
    from . import nvbench_files, pyperf_files

    if fmt == "nvbench":
        return nvbench_files.write(summary, samples, dict(metadata))
    if fmt == "pyperf":
        return pyperf_files.write(summary, samples, dict(metadata))
    return bencher(summary)


def write_export(fmt: str, path: str, summary: Any, samples: Any, metadata: Mapping[str, str]) -> Path:
    """Render, then write ``path`` (checked again: the folder may have changed while the sweep ran)."""
    from ..files import write_file

    check_export_path(path)
    text = render(check_format(fmt), summary, samples, metadata)
    write_file(path, text, what=f"{fmt} export")
    return Path(path)


__all__ = ["EXPORT_FORMATS", "bencher", "check_export_path", "check_format", "render", "write_export"]
