"""The files ``hipexplore tune-replay`` writes: ``--frame`` and ``--export-list`` checked before any
compile (a writable folder, the right suffix, and no file hipexplore did not write replaced without
``--force``), and the list in use written as a list file.

Why before: a replay compiles for minutes; a write error at its end would lose the measurement.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import ConfigError


def check_outputs(args: argparse.Namespace) -> None:
    """Before any work: ``--frame`` and ``--export-list`` can be written, and neither replaces a
    file hipexplore did not write (unless ``--force``)."""
    from ..files import check_replace

    if args.frame:
        check_destination(args.frame, "--frame", ".parquet")
        check_replace(
            args.frame,
            "--frame",
            "a compile-event frame hipexplore wrote",
            lambda _head: _is_frame(args.frame),
            args.force,
        )
    if args.export_list:
        check_destination(args.export_list, "--export-list", ".jsonl")
        check_replace(
            args.export_list,
            "--export-list",
            "a list hipexplore exported",
            lambda head: b'"format": "hipexplore.tuning-list"' in head,
            args.force,
        )


def _is_frame(path: str) -> bool:
    """A parquet file with the compile-event frame's schema tag (what ``--frame`` writes)."""
    from ..schema import TUNING, schema_of

    try:
        return schema_of(path) == TUNING
    except Exception:  # noqa: BLE001 - not a parquet file at all: not ours
        return False


def check_destination(path: str, flag: str, suffix: str) -> None:
    """Before the work starts: ``path`` must end in ``suffix`` and its directory must exist and be
    writable, so a long run never ends in a write error that loses its results."""
    import os
    from pathlib import Path

    p = Path(path)
    if p.suffix.lower() != suffix:
        raise ConfigError(f"{flag} must name a {suffix} file; got {path!r}")
    if p.is_dir():
        raise ConfigError(f"{flag} {path!r} is a directory; expected a {suffix} file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"{flag} {path!r}: directory {str(parent)!r} does not exist (checked before running)")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ConfigError(f"{flag} {path!r}: cannot write there (checked before running)")
    import tempfile

    try:  # access() says yes for root on /proc and on read-only mounts: make (and remove) a file there
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".check", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(
            f"{flag} {path!r}: cannot write there ({exc.strerror or exc}; checked before running)"
        ) from None


def export_list(args: argparse.Namespace, spec: Any, tlist: Any) -> None:
    """``--export-list FILE``: the list in use (``spec``, or the built-in ``tlist``'s) as a list file."""
    from ..tuning import listfile

    if spec is None:
        if args.compiler == "triton":
            raise ConfigError(
                "--export-list: the built-in Triton list's candidates are Triton configs, not perf configs; "
                "export the built-in list with --compiler hiprtc/nvrtc/host, or give --list"
            )
        spec = listfile.from_builtin(tlist)
    listfile.write(spec, args.export_list)
    if not args.quiet:
        print(
            f"tune-replay: wrote {spec.n_candidates} candidates of {len(spec.problems)} problems to {args.export_list}",
            file=sys.stderr,
        )
