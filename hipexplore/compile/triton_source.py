"""Triton compile requests, built without importing Triton.

Why a module of its own, and why ``ast``: Triton is heavy to import (and its LLVM is process-global),
so the parent process never imports it — compiles run in worker processes. But the cache key must
be decided in the parent, and it must contain exactly what decides the output (issue 25, item 4:
a helper reached as ``import m as H; H.f()`` and ``PTXAS_OPTIONS`` were not keyed).

**Sources** (``triton_modules.kernel_sources``): the kernel's module and every local module it
reaches, generated from the files as Python and Triton resolve the kernel's names; the reasons the
texts cannot pin the result make the request *uncacheable* (``uncacheable=`` options). See that module.

**Environment.** ``triton_environment()`` keys every variable the installed Triton reads
(``triton_env_names``: its ``knobs.py``, its ``getenv`` calls, ``GetEnv.h``) but the neutral ones,
by value, plus the contents of the files ``FILE_ENV`` variables name (ptxas, libdevice, ...);
``UNCACHEABLE_ENV`` (IR overrides) and a variable Triton reads that these tables do not know make
the request uncacheable.

Request layout (``compiler="triton"``): ``source`` = the generated kernel module, ``headers`` = the
generated modules it imports (``_hx<N>_<name>.py``), ``kernels`` = (name,), ``options`` =
``signature=a:*fp32,n:i32``, ``constexpr=NAME:VALUE`` (one each), ``env=NAME=VALUE`` (sorted), then
``NAME=VALUE`` Triton options (``num_warps=4``...), then ``uncacheable=WHY`` (one per reason).
``mode`` is ``binary`` (hsaco for gfx targets, cubin for sm targets) or ``asm`` (AMDGCN / PTX).
"""

from __future__ import annotations

import os
from typing import Mapping

from ..errors import ConfigError
from .request import CompileRequest, Source
from .triton_args import NAME_RX, SCALAR_TYPES, check_target, parse_signature, parse_value, parse_assignments  # noqa: F401 - public here too
from .triton_env import FILE_ENV, UNCACHEABLE_ENV, triton_env_names, triton_environment  # noqa: F401 - public here too
from .triton_env import NEUTRAL_ENV, NON_CODEGEN_ENV, VALUE_ENV, knob_names, codegen_env  # noqa: F401 - public here too
from .triton_modules import kernel_sources


def triton_request(
    path: str | os.PathLike,
    kernel: str,
    signature: str | Mapping[str, str],
    target: str,
    constexprs: Mapping[str, object] | list[str] | None = None,
    options: Mapping[str, object] | list[str] | None = None,
    environ: Mapping[str, str] | None = None,
    label: str = "",
    mode: str = "binary",
) -> CompileRequest:
    """A ``CompileRequest`` for ``kernel`` in the file ``path`` (see the module doc for the layout)."""
    check_target(target)
    sig = parse_signature(signature)
    consts = parse_assignments(constexprs, "constexpr")
    opts = parse_assignments(options, "option")
    for name in ("signature", "constexpr", "env"):
        if name in opts:
            raise ConfigError(f"option {name!r} is reserved; pass it as its own argument")
    clash = sorted(set(sig) & set(consts))
    if clash:
        raise ConfigError(f"{', '.join(clash)} given both in the signature and as constexprs; give each once")
    for name in ("uncacheable",):
        if name in opts:
            raise ConfigError(f"option {name!r} is reserved (hipexplore sets it)")
    text, modules, why = kernel_sources(path, kernel)
    env, env_why = triton_environment(environ)
    encoded = [f"signature={','.join(f'{k}:{v}' for k, v in sig.items())}"]
    encoded += [f"constexpr={k}:{v!r}" for k, v in sorted(consts.items())]
    encoded += [f"env={k}={v}" for k, v in env.items()]
    encoded += [f"{k}={v!r}" for k, v in sorted(opts.items())]
    encoded += [f"uncacheable={w}" for w in (*why, *env_why)]  # TritonCompiler.implicit_inputs: never cached
    return CompileRequest(
        source=Source(f"{kernel}.py", text),
        compiler="triton",
        target=target,
        kernels=(kernel,),
        headers=modules,
        options=tuple(encoded),
        mode=mode,
        label=label or kernel,
    )


def decode_options(
    options: tuple[str, ...],
) -> tuple[dict[str, str], dict[str, object], dict[str, str], dict[str, object]]:
    """(signature, constexprs, env, triton options) from a request's encoded options."""
    import ast as _ast

    sig: dict[str, str] = {}
    consts: dict[str, object] = {}
    env: dict[str, str] = {}
    opts: dict[str, object] = {}
    for o in options:
        key, _, value = o.partition("=")
        if key == "signature":
            sig = parse_signature(value)
        elif key == "constexpr":
            name, _, lit = value.partition(":")
            consts[name] = _ast.literal_eval(lit)
        elif key == "env":
            name, _, v = value.partition("=")
            env[name] = v
        elif key == "uncacheable":
            continue
        elif NAME_RX.match(key) and value:
            try:
                opts[key] = _ast.literal_eval(value)
            except (ValueError, SyntaxError):
                opts[key] = value
        else:
            raise ConfigError(f"triton request option {o!r} is not NAME=VALUE")
    if not sig:
        raise ConfigError("triton request has no 'signature=' option; build it with triton_request()")
    return sig, consts, env, opts
