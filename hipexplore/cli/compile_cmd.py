"""``hipexplore compile``: compile one source file through the compile cache.

Run twice in two processes, the second reports ``disk-hit``: the quickest way to see the
persistent tier work (and what it saves) without writing any Python.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..compile.request import COMPILERS, DIAGNOSTICS

#: What --target defaults to when the compiler has only one sensible target.
_DEFAULT_TARGET = {"host": "host"}
_EXAMPLE_TARGET = {"hiprtc": "gfx90a", "nvrtc": "sm_90", "host": "host", "triton": "gfx942"}


#: the subcommand and its one line in ``hipexplore --help`` (shown without building its parser)
COMMAND = "compile"
HELP = "compile a kernel source through the compile cache"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        COMMAND,
        help=HELP,
        description="Compile SOURCE through the compile cache (memory + disk tier at $HIPEXPLORE_CACHE_DIR) "
        "and report the outcome (compiled, disk-hit, ...), the key digest and the times.",
    )
    p.add_argument("source", metavar="SOURCE", help="kernel source file (.hip, .cu, .c)")
    p.add_argument("--compiler", required=True, choices=COMPILERS, help="which compiler backend")
    p.add_argument("--target", default=None, help="gfx90a, sm_90, ... ('host' for --compiler host, the default there)")
    p.add_argument(
        "--option", action="append", default=[], metavar="O",
        help="one compiler option, repeatable; write options starting with '-' as --option=-O3",
    )
    p.add_argument("--kernel", action="append", default=[], metavar="NAME", help="kernel name or name expression to lower, repeatable")
    p.add_argument("--header", action="append", default=[], metavar="FILE", help="header made available to #include under its file name, repeatable")
    p.add_argument("-I", "--include-dir", action="append", default=[], metavar="DIR", dest="include_dir",
                   help="directory searched for #include files (after the including file's own folder), repeatable; "
                        "every file read from it is keyed")
    p.add_argument("--signature", default=None, metavar="SIG",
                   help="triton: the non-constexpr arguments' types, e.g. 'x_ptr:*fp32,n:i32'")
    p.add_argument("--constexpr", action="append", default=[], metavar="NAME=VALUE",
                   help="triton: a tl.constexpr argument's value, repeatable (--option NAME=VALUE are Triton options: num_warps=4)")
    p.add_argument("--mode", default="", help="output kind (default: the compiler's: code-object, cubin, shared-library)")
    p.add_argument(
        "--diagnostic", action="append", default=[], choices=sorted(DIAGNOSTICS),
        help="diagnostic switch; the compile then bypasses the cache",
    )
    p.add_argument("--inline-icache", action="store_true",
                   help="hiprtc: put s_icache_inv + 16 s_nop 0 at the entry of each --kernel (every kernel when none is named); "
                        "the transformed source compiles under its own cache key")
    p.add_argument("--out", "-o", default=None, metavar="FILE", help="write the binary here")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-cache", action="store_true", help="compile without reading or writing either cache tier")
    p.set_defaults(func=run)


def _read_text(path: str, what: str) -> str:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{what} file {path!r} does not exist")
    if p.is_dir():
        raise ConfigError(f"{what} file {path!r} is a directory, expected a source file")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} file {path!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} file {path!r}: {exc.strerror or exc}") from None


def _check_destination(out: str) -> None:
    """``--out``: a file name in a directory that exists and takes a new file (tried, not guessed:
    ``access()`` says yes for root on /proc and read-only mounts)."""
    import tempfile

    if not out.strip():
        raise ConfigError("--out is empty; expected a file name for the binary")
    p = Path(out)
    if p.is_dir() or out.endswith(os.sep):
        raise ConfigError(f"--out {out!r} is a directory; expected a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"--out {out!r}: directory {str(parent)!r} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".check", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"cannot write --out {out!r}: {exc.strerror or exc} (checked before compiling)") from None


def build_request(args: argparse.Namespace):
    from ..compile.request import CompileRequest, Source

    if args.compiler == "triton":
        return _triton_request(args)
    if args.signature or args.constexpr:
        raise ConfigError(f"--signature/--constexpr are for --compiler triton; got --compiler {args.compiler}")
    text = _read_text(args.source, "source")
    headers = []
    for h in args.header:
        headers.append(Source(Path(h).name, _read_text(h, "header")))
    target = args.target or _DEFAULT_TARGET.get(args.compiler)
    if not target:
        raise ConfigError(
            f"--target is required for --compiler {args.compiler} (for example --target {_EXAMPLE_TARGET[args.compiler]})"
        )
    from ..compile.includes import include_closure

    # the include closure first: its files are headers of the request (keyed), and the
    # inline-icache transform parses with them
    closure = include_closure(text, compiler=args.compiler, source_path=args.source, include_dirs=args.include_dir,
                              given=[h.name for h in headers])
    headers = [*headers, *closure.headers()]
    args.closure = closure
    if getattr(args, "inline_icache", False):
        if args.compiler != "hiprtc":
            raise ConfigError(f"--inline-icache inserts AMD instructions and needs --compiler hiprtc, not {args.compiler!r}")
        from ..kernels.transform import insert_icache_flush

        text = insert_icache_flush(text, tuple(args.kernel) or None, filename=Path(args.source).name,
                                   headers=[(h.name, h.text) for h in headers])
    return CompileRequest(
        source=Source(Path(args.source).name, text),
        compiler=args.compiler,
        target=target,
        headers=tuple(headers),
        kernels=tuple(args.kernel),
        options=tuple(args.option),
        mode=args.mode,
        diagnostics=frozenset(args.diagnostic),
    )


def _triton_request(args: argparse.Namespace):
    from ..compile.triton_source import triton_request

    _read_text(args.source, "source")  # the same one-line errors for a missing/unreadable file
    if len(args.kernel) != 1:
        raise ConfigError(f"--compiler triton needs exactly one --kernel NAME (the @triton.jit function); got {args.kernel}")
    if not args.signature:
        raise ConfigError("--compiler triton needs --signature, e.g. --signature 'x_ptr:*fp32,n:i32'")
    if not args.target:
        raise ConfigError("--target is required for --compiler triton (for example --target gfx942 or --target sm_90)")
    if args.header or args.mode not in ("", "binary") or args.diagnostic:
        raise ConfigError("--header, --mode and --diagnostic do not apply to --compiler triton")
    return triton_request(args.source, args.kernel[0], args.signature, args.target, args.constexpr, args.option)


def run(args: argparse.Namespace) -> int:
    from ..compile.cache import CompileCache

    if args.target is not None and not args.target.strip():
        raise ConfigError(f"--target is empty; expected e.g. --target {_EXAMPLE_TARGET[args.compiler]}")
    if args.out is not None:
        _check_destination(args.out)  # before the compile: a failed write must not follow a long compile
    request = build_request(args)
    if args.no_cache:
        cache = CompileCache(max_entries=0, max_bytes=0, disk_dir=False)
    else:
        cache = CompileCache()
    # Loading the compiler and fingerprinting its libraries (identity) is a once-per-process cost
    # (~0.2 s for hiprtc); time it apart so lookup_seconds is the cache's own cost.
    t0 = time.perf_counter()
    key = cache.key_for(request)
    setup_seconds = time.perf_counter() - t0
    from ..errors import CompileError

    try:
        result = cache.get_or_compile(request)
    except CompileError as exc:  # the diagnostics name the file as given, not its copy in the build folder
        if args.compiler == "host" and request.source.name != args.source:
            from ..kernels.build import user_paths

            exc.log = user_paths(exc.log, request.source.name, args.source)
        raise
    code = result.object_code
    out_path = None
    if args.out:
        out_path = os.path.abspath(args.out)
        from ..files import write_file  # temp file beside it, renamed: an existing file is kept or replaced whole

        write_file(out_path, code.binary, what="--out", shown=args.out)
    identity = key.record["compiler"]
    report: dict[str, Any] = {
        "source": os.path.abspath(args.source),
        "compiler": request.compiler,
        "compiler_version": identity.get("version", ""),
        "target": request.target,
        "mode": request.mode,
        "options": list(request.options),
        "kernels": list(request.kernels),
        "inline_icache": bool(getattr(args, "inline_icache", False)),
        "lowered_names": dict(code.lowered_names),
        "metadata": dict(code.metadata),
        "outcome": result.outcome,
        "key": result.key.digest,
        "compile_seconds": result.compile_seconds,
        "lookup_seconds": result.lookup_seconds,
        "seconds_saved": result.seconds_saved,
        "setup_seconds": setup_seconds,
        "bytes": code.nbytes,
        "out": out_path,
        "cache_dir": str(cache.disk_dir) if cache.disk_dir is not None else None,
        "log": code.log,
        # every header in the key: --header files, the discovered include closure, built-ins
        "headers": [{"name": h.name, "path": os.path.abspath(h_path), "sha256": _sha(h.text), "included_from": ""}
                    for h, h_path in zip(request.headers, args.header)]
                   + (args.closure.record() if getattr(args, "closure", None) else []),
        "system_headers": list(args.closure.system) if getattr(args, "closure", None) else [],
        # what the compiler reads outside the request (cc -M, absolute includes, ...): keyed too
        "implicit_inputs": key.record.get("implicit", []),
    }
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(_text(report))
    return 0


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _text(r: dict[str, Any]) -> str:
    lines = [
        f"{r['outcome']}: {Path(r['source']).name} with {r['compiler']} ({r['compiler_version']}) for {r['target']} "
        f"({r['mode']}, {r['bytes']} bytes)",
        f"  key {r['key']}",
        f"  lookup {r['lookup_seconds'] * 1e3:.2f} ms; recorded compile {r['compile_seconds'] * 1e3:.1f} ms; "
        f"saved {r['seconds_saved'] * 1e3:.1f} ms (compiler load + identity {r['setup_seconds'] * 1e3:.0f} ms)",
    ]
    if r["headers"]:
        lines.append(f"  headers in the key: {', '.join(h['name'] for h in r['headers'])}")
    for name, symbol in r["lowered_names"].items():
        lines.append(f"  kernel {name} -> {symbol}")
    if r["out"]:
        lines.append(f"  wrote {r['out']}")
    lines.append(f"  cache: {r['cache_dir'] or '(disk tier off)'}")
    return "\n".join(lines)
