"""``hipexplore info``: what this machine can compile and run, and where the cache lives."""

from __future__ import annotations

import argparse
import json
import math
import textwrap
from typing import Any


def gather() -> dict[str, Any]:
    """Compilers (version, library, targets), devices, and the compile cache's location and size."""
    from .. import __version__
    from ..compile.registry import compiler_info

    out: dict[str, Any] = {"hipexplore": __version__, "compilers": compiler_info()}
    out["devices"] = _devices()
    out["cache"] = _cache()
    return out


def _devices() -> list[dict[str, Any]]:
    import dataclasses

    from ..devices import get_device
    from ..errors import HipexploreError

    out: list[dict[str, Any]] = []
    for kind in ("hip", "cuda", "host"):
        try:
            dev = get_device(kind)
        except HipexploreError as exc:
            out.append({"kind": kind, "available": False, "reason": str(exc)})
            continue
        props = dev.properties
        row = dataclasses.asdict(props) if dataclasses.is_dataclass(props) else dict(props)
        out.append({"kind": kind, "available": True, **row})
    return out


def _cache() -> dict[str, Any]:
    from ..compile.cache import CompileCache

    cache = CompileCache()
    stats = cache.stats()
    return {
        "disk_dir": str(getattr(cache, "disk_dir", "") or ""),
        "max_entries": getattr(cache, "max_entries", None),
        "max_bytes": getattr(cache, "max_bytes", None),
        "disk_max_bytes": getattr(cache, "disk_max_bytes", None),
        "disk_entries": stats.get("disk_entries"),
        "disk_bytes": stats.get("disk_bytes"),
        "shared": cache.disk.shared if cache.disk is not None else "",
        "remote": stats.get("remote_url", ""),  # password redacted
    }


def info_text(info: dict[str, Any]) -> str:
    """``hipexplore info`` as text, from ``gather()``'s dict (public: its tests feed it the edges this
    machine does not show: an unavailable compiler, a long target list)."""
    lines = [f"hipexplore {info['hipexplore']}", "", "compilers:"]
    for c in info["compilers"]:
        if c.get("available"):
            targets = c.get("targets") or []
            lines.append(f"  {c['name']:<7} {c.get('version', '')}  [{c.get('library', '')}]")
            # every target, wrapped: a cut list hid gfx90a (hiprtc's 13th) and read as "not supported"
            lines += textwrap.wrap(
                f"targets ({len(targets)}): {', '.join(targets) or '-'}",
                width=100,
                initial_indent=" " * 10,
                subsequent_indent=" " * 19,
                break_on_hyphens=False,
            )
            if c.get("crashing_targets"):
                lines.append(f"          crashing targets: {', '.join(c['crashing_targets'])}")
            for note in c.get("notes", []) or []:
                lines.append(f"          note: {note}")
        else:
            lines.append(f"  {c['name']:<7} unavailable: {c.get('reason', '')}")
    lines += ["", "devices:"]
    for d in info["devices"]:
        if d.get("available"):
            llc = d.get("llc_bytes")
            llc_s = f"{llc / 2**20:.1f} MiB ({d.get('llc_source', '')})" if llc else "?"
            lines.append(f"  {d['kind']:<5} {d.get('name', '')}  target={d.get('target', '')}  LLC={llc_s}")
        else:
            lines.append(f"  {d['kind']:<5} absent: {d.get('reason', '')}")
    from ..readable import format_bytes

    c = info["cache"]
    lines += [
        "",
        "compile cache:",
        f"  disk dir: {c['disk_dir'] or '(disk tier off)'}",
        f"  memory limits: {c['max_entries']} entries, {format_bytes(c['max_bytes'])}",
        f"  disk: {c['disk_entries']} entries, {c['disk_bytes']} bytes ({format_bytes(c['disk_bytes'] or 0)}; "
        f"cap {format_bytes(c['disk_max_bytes'])})" + (" [team directory]" if c.get("shared") == "group" else ""),
        f"  remote (Redis team tier): {c.get('remote') or 'off'}",
    ]
    return "\n".join(lines)


def strict_json(obj: Any) -> Any:
    """NaN and infinity become null (an unknown peak bandwidth is NaN): strict JSON has no such numbers."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    return obj


def run(args: argparse.Namespace) -> int:
    info = gather()
    print(json.dumps(strict_json(info), indent=2, default=str, allow_nan=False) if args.json else info_text(info))
    return 0


#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "info"
HELP = "compilers, devices and the compile cache on this machine"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(COMMAND, help=HELP)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)
