"""The files ``hipexplore bench`` writes, checked before anything runs and written after: ``--out``
(a hipexplore result or a new file, in a folder this user can write, and whose results it may resume
or replace) and each ``--export FORMAT FILE``.

Why before: a sweep runs for minutes to hours; a write error at its end would lose it, so every
destination is refused in one line before a device or compiler starts.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .inputs import check_out_owner


def check_outputs(args: argparse.Namespace) -> None:
    """``--out`` and every ``--export``, before any device or compiler starts."""
    if args.out is not None:
        check_out(args.out, force=args.force)
        check_out_owner(args.out, resume=not args.no_resume, others=args.resume_from_others, force=args.force)
    exports(args)


def exports(args: argparse.Namespace, res: Any = None) -> None:
    """``--export FORMAT FILE``: without a result, check each (the format, the file's folder:
    ``interop.export``); with one, write each."""
    from ..interop.export import check_export_path, check_format, write_export

    for fmt, path in args.export or []:
        if res is None:
            check_format(fmt)
            check_export_path(path)
        else:
            print(
                f"exported ({fmt}): {write_export(fmt, path, res.summary, res.samples, res.metadata)}", file=sys.stderr
            )


def tagged_samples(path: Path) -> bool:
    """A samples file hipexplore wrote (its schema tag): a sweep killed before its first summary
    left it; it is a result to start over from, not someone else's file."""
    from ..schema import SAMPLES, schema_of

    try:
        return schema_of(path) == SAMPLES
    except Exception:  # noqa: BLE001 - not a parquet file at all: not ours
        return False


def check_out(out: str, force: bool) -> None:
    """Before anything runs: refuse to replace a parquet file that is not a hipexplore result."""
    from ..bench.io import output_paths

    samples, _summary, meta = output_paths(out)
    if samples.is_dir():
        raise ConfigError(f"--out {out!r} is a directory; expected a FILE.parquet name")
    if samples.exists() and not meta.exists() and not force and not tagged_samples(samples):
        raise ConfigError(
            f"--out {out!r} exists and is not a hipexplore result (no {meta.name} beside it); it was left "
            f"as it is: choose another file, or pass --force to replace it"
        )
    parent = samples.parent if str(samples.parent) else Path(".")
    while not parent.exists() and parent != parent.parent:  # the writer makes missing folders: check where it would
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(f"--out {out!r}: {str(parent)!r} is not a directory")
    # access() says yes for root on /proc and on read-only mounts: make (and remove) a file there
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".hipexplore-out-check-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        from ..files import why_no_new_file

        raise ConfigError(
            f"--out {out!r}: cannot create a file in the folder {str(parent)!r} ({why_no_new_file(exc, parent)}); "
            f"give --out a path in a folder you can write (checked before running)"
        ) from None
