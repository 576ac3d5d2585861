"""The kernels a ``hipexplore bench`` command line names, before anything compiles: catalog kernels
by name, or ``--source``/``--code-object`` kernels (one per KERNEL name, each with its own
``--entry``/``--args`` or shared ones), every one's launch geometry evaluated at every size on the
device, and a line when geometry given for the host is not used there.

Why a module of its own: what KERNEL and the user-kernel options mean is one job, apart from running
the sweep (``cli/bench_cmd.py``) and from registering the options (``cli/bench_options.py``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import ConfigError
from .bench_values import csv_items


def kernels_of(args: argparse.Namespace) -> list[Any]:
    """The kernels to sweep: the user's (``--source``/``--code-object``, built and registered) or the
    catalog's, by KERNEL's comma separated names."""
    from ..kernels import catalog

    if args.source is not None or args.code_object is not None:
        return [user_kernel(one) for one in per_kernel(args)]
    if not csv_items(args.kernel):
        raise ConfigError(f"KERNEL {args.kernel!r} names no kernel; expected e.g. triad or triad,copy")
    return [catalog.get(k) for k in csv_items(args.kernel)]


def per_kernel(args: argparse.Namespace) -> list[argparse.Namespace]:
    """The user kernels of a ``bench`` command line, one namespace each with single values: KERNEL's
    names in order, each with its own ``--source`` (one per name, or one source for a single name),
    its ``--entry`` and ``--args`` (one per name, or one shared by all)."""
    names = csv_items(args.kernel) or [args.kernel]
    if len(set(names)) != len(names):
        raise ConfigError(f"KERNEL {args.kernel!r} names a kernel twice; each --source kernel needs a name of its own")
    sources = args.source or []
    if sources and len(sources) != len(names):
        raise ConfigError(
            f"{len(sources)} --source file(s) for {len(names)} kernel name(s) {names}; give one --source per "
            f"name, in order (bench A,B --source a.cu --source b.cu)"
        )
    if args.code_object is not None and len(names) > 1:
        raise ConfigError(f"--code-object loads one kernel; KERNEL names {len(names)} ({args.kernel!r})")

    def each(flag: str, values: list[str] | None) -> list[str | None]:
        values = values or []
        if len(values) in (0, 1):
            return [values[0] if values else None] * len(names)
        if len(values) != len(names):
            raise ConfigError(
                f"{len(values)} {flag} values for {len(names)} kernel name(s) {names}; give one shared "
                f"{flag}, or one per name, in order"
            )
        return list(values)

    out = []
    for name, source, entry, spec in zip(
        names, sources or [None] * len(names), each("--entry", args.entry), each("--args", args.args)
    ):
        one = argparse.Namespace(**vars(args))
        one.kernel, one.source, one.entry, one.args = name, source, entry, spec
        out.append(one)
    return out


def user_kernel(args: argparse.Namespace) -> Any:
    """One ``--source``/``--code-object`` kernel (``per_kernel``'s namespace), registered."""
    from ..kernels import catalog

    if not args.args:
        raise ConfigError(
            "--source/--code-object needs --args describing the kernel's arguments (e.g. 'out:a:f32[n],n:u64=n')"
        )
    if args.code_object is not None and not args.entry:
        raise ConfigError("--code-object needs --entry NAME: the kernel's symbol in the code object")
    from .inputs import check_user_kernel

    check_user_kernel(args)  # files readable UTF-8, expressions ASCII: one line each, before the build
    block: Any = int(args.block) if args.block.strip().isdigit() else args.block
    return catalog.user_kernel(
        args.source,
        args.entry or args.kernel,
        args.args,
        name=args.kernel,
        grid=args.grid,
        block=block,
        shared_bytes=args.shared_bytes,
        bytes_per_launch=args.bytes_per_launch,
        include_dirs=args.include_dir,
        headers=args.header,
        options=args.option,
        code_object=args.code_object,
    )


def preflight(kernels: list[Any], sizes: list[str], device: Any) -> None:
    """Before anything compiles: evaluate every kernel's launch geometry, buffer counts, scalar
    values and traffic at every size on this device, so a bad expression (``--grid 'n**n'``, a count
    of 0) is one line now, not after the compiles and in the middle of the sweep."""
    from ..bench.spec_checks import parse_size

    for k in kernels:
        for s in sizes:
            try:
                n = k.elements(parse_size(s))
            except ConfigError:
                continue  # a bad size: the sweep names it with the others
            k.launch(n, device)
            k.set_bytes(n)
            k.footprint(n)


def unused_geometry(args: argparse.Namespace, device: Any) -> None:
    """One line when launch geometry was given for the host: a host kernel is one C call (no grid,
    block or shared memory), so the values were checked (``preflight``) and are not used. Not a
    refusal: the same command line also runs on a GPU, where they are."""
    given = [
        f"{flag} {value}"
        for flag, value, default in (
            ("--grid", args.grid, None),
            ("--block", args.block, "256"),
            ("--shared-bytes", args.shared_bytes, "0"),
        )
        if value != default and (args.source is not None or args.code_object is not None)
    ]
    if given and device.kind == "host":
        print(
            f"hipexplore bench: {', '.join(given)}: not used on the host (a host kernel is one C call, no launch "
            f"geometry); checked, and used where the device is a GPU",
            file=sys.stderr,
        )
