"""``hipexplore cache {stats,clear,verify}``: inspect and maintain the on-disk compile cache.

The location is ``$HIPEXPLORE_CACHE_DIR`` (else the user cache dir), the same one every
``CompileCache`` in this environment uses; ``--dir`` points at another one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from typing import Any

from ..errors import CacheError


#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "cache"
HELP = "show, verify or clear the on-disk compile cache"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        COMMAND,
        help=HELP,
        description="Maintain the on-disk compile cache at $HIPEXPLORE_CACHE_DIR (or --dir).",
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    for name, help_text in (
        ("stats", "entries, bytes and what they hold (by compiler and target)"),
        ("clear", "remove every entry"),
        ("verify", "check every entry (checksum or team HMAC, header types); bad entries and stray files are removed"),
    ):
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.add_argument("--json", action="store_true", help="print one JSON object")
        sp.add_argument(
            "--dir", default=None, help="cache directory (default: $HIPEXPLORE_CACHE_DIR or the user cache dir)"
        )
        sp.set_defaults(func=run)


def _disk(args: argparse.Namespace):
    from .. import settings
    from ..compile.cache import default_cache_dir
    from ..compile.disk import DiskCache

    if args.dir is not None and not args.dir.strip():
        raise CacheError(
            "--dir is empty; expected a cache directory (or leave --dir out: $HIPEXPLORE_CACHE_DIR or the user cache dir)"
        )
    root = args.dir or default_cache_dir()
    disk = DiskCache(root, max_bytes=settings.CACHE_DISK_MAX_BYTES.get())
    if disk.root.exists() and not disk.root.is_dir():
        raise CacheError(f"cache location {str(disk.root)!r} is not a directory")
    return disk, settings.CACHE_DISK.get()


def run(args: argparse.Namespace) -> int:
    """0 when the action did what it says; 1 when some files could not be read or removed
    (e.g. ``clear`` on a read-only mount): the text names them."""
    disk, enabled = _disk(args)
    report: dict[str, Any] = {
        "action": args.action,
        "root": str(disk.root),
        "directory": str(disk.directory),
        "disk_enabled": enabled,
        "shared": disk.shared,
    }
    status = 0
    if args.action == "stats":
        report.update(disk_stats(disk))
    elif args.action == "clear":
        report.update(disk.clear())
        status = 1 if report["failed"] else 0
    else:
        report.update(disk.verify())
        status = 1 if report["failed"] else 0
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(_text(report))
    return status


def disk_stats(disk) -> dict[str, Any]:
    """What ``hipexplore cache stats`` reports of a disk tier: entries, temp files and bytes by compiler
    (public: its tests read it on a tier they damaged)."""
    from ..compile.entry import Corrupt, read_header

    listing = list(disk.listing())
    infos = [i for i in listing if i.kind == "entry"]
    temps = [i for i in listing if i.kind == "temp"]
    by_compiler: Counter[str] = Counter()
    by_target: Counter[str] = Counter()
    unreadable = 0
    compile_seconds = 0.0
    for info in infos:
        try:
            header = read_header(info.path)  # O_NOFOLLOW, regular files only, bounded, every field type-checked
        except FileNotFoundError:  # pruned while we listed: not unreadable, just gone
            continue
        except (OSError, Corrupt):
            unreadable += 1
            continue
        by_compiler[header["compiler"]] += 1
        by_target[header["target"]] += 1
        compile_seconds += header["compile_seconds"]
    mtimes = [i.mtime for i in infos]
    return {
        "exists": disk.directory.is_dir(),
        "entries": len(infos),
        "bytes": sum(i.size for i in infos) + sum(i.size for i in temps),
        "temp_files": len(temps),
        "temp_bytes": sum(i.size for i in temps),
        "foreign_files": sum(1 for i in listing if i.kind == "foreign"),
        "max_bytes": disk.max_bytes,
        "recorded_compile_seconds": compile_seconds,
        "by_compiler": dict(sorted(by_compiler.items())),
        "by_target": dict(sorted(by_target.items())),
        "unreadable_headers": unreadable,
        "oldest_use": min(mtimes) if mtimes else None,
        "newest_use": max(mtimes) if mtimes else None,
    }


def _ago(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{(time.time() - t) / 3600:.1f} h ago"


def _text(r: dict[str, Any]) -> str:
    head = f"compile cache at {r['root']}" + (
        "" if r["disk_enabled"] else " (disk tier disabled by HIPEXPLORE_CACHE_DISK=0)"
    )
    if r.get("shared") == "group":
        head += " (team directory: entries authenticated with HIPEXPLORE_CACHE_SECRET)"
    if r["action"] == "stats":
        from ..readable import format_bytes

        lines = [
            head,
            f"  {r['entries']} entries, {format_bytes(r['bytes'])} of {format_bytes(r['max_bytes'])} cap",
            f"  recorded compile time of the entries: {r['recorded_compile_seconds']:.1f} s",
            f"  least recently used {_ago(r['oldest_use'])}, most recently {_ago(r['newest_use'])}",
        ]
        if r["temp_files"]:
            lines.append(
                f"  {r['temp_files']} temp files ({format_bytes(r['temp_bytes'])}; counted in the size, "
                "removed by the pruner once their writer is gone)"
            )
        if r["foreign_files"]:
            lines.append(
                f"  {r['foreign_files']} files that are not entries (links, FIFOs, folders; `verify` removes them)"
            )
        for what in ("compiler", "target"):
            counts = r[f"by_{what}"]
            if counts:
                width = max(len(what), *(len(k) for k in counts))
                lines += ["", f"  {what:<{width}}  entries"] + [f"  {k:<{width}}  {v:>7}" for k, v in counts.items()]
        if r["unreadable_headers"]:
            lines.append(f"  {r['unreadable_headers']} entries with unreadable headers (run `hipexplore cache verify`)")
        return "\n".join(lines)
    if r["action"] == "clear":
        text = f"{head}\n  removed {r['removed']} entries and {r['temp_removed']} temp files"
        if r["failed"]:
            text += f"\n  FAILED to remove {r['failed']} files (first: {r['error']})"
        return text
    lines = [
        f"{head}\n  checked {r['checked']}: {r['ok']} ok, {r['corrupt']} bad ({r['removed']} removed)"
        + (
            f", {r['unauthenticated']} not authenticated under this secret (left in place)"
            if r.get("unauthenticated")
            else ""
        )
    ]
    lines += [f"  {path}: {what} ({action})" for path, what, action in r["problems"][:50]]
    if len(r["problems"]) > 50:
        lines.append(f"  ... and {len(r['problems']) - 50} more (--json lists all)")
    if r["failed"]:
        lines.append(f"  FAILED: {r['failed']} files could not be read or removed")
    return "\n".join(lines)
