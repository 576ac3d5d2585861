"""Source transforms applied before compilation.

``insert_icache_flush`` is the inline-icache flush mode (rocMLIR PR 2188 did it at LLVM IR level):
``s_icache_inv`` and 16 ``s_nop 0`` run at the entry of the kernel under test, so every launch
starts from a cold instruction cache without a separate flush kernel. Because it changes the source
text, the transformed kernel compiles through the cache under its own key.

Why not simply put the ``asm`` statement first in the body: the AMDGPU backend lowers kernel
arguments to ``s_load`` instructions placed at the top of the entry block (AMDGPULowerKernelArguments),
so they come *before* any statement of the body (seen with hiprtc/gfx90a: three ``s_load`` then
``s_icache_inv``). The transform therefore:

  1. renames the original kernel to an always-inline ``__device__`` function ``<entry>__hx_body``;
  2. declares ``struct <entry>__hx_args`` mirroring the parameter list (the kernarg layout);
  3. defines a ``__global__ <entry>`` with the same signature whose first statement is the flush
     asm, which also produces a zero in an SGPR; the arguments are then read through
     ``__builtin_amdgcn_kernarg_segment_ptr() + zero``, so no argument load can move above the
     flush, and the named parameters stay unused (their loads are dead and removed). The body runs
     under ``if (zero == 0)`` (always true, unknown to the compiler) so its dispatch-packet loads
     (blockDim, gridDim) cannot be scheduled above the flush either.

A test disassembles the code object and checks the first 17 instructions.
"""
from __future__ import annotations

import re

from ..errors import ConfigError

ICACHE_ASM_LINES = ("s_icache_inv",) + ("s_nop 0",) * 16
MARKER = "/* hipexplore: inline-icache */"
_AS4 = "__attribute__((address_space(4)))"


def icache_flush_statement(zero_var: str | None = None) -> str:
    body = "\\n\\t".join(ICACHE_ASM_LINES)
    if zero_var is None:
        return f'{MARKER} asm volatile("{body}" ::: "memory");'
    return f'{MARKER} asm volatile("{body}\\n\\ts_mov_b32 %0, 0" : "=s"({zero_var}) :: "memory");'


def _split_params(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    last = "".join(cur).strip()
    if last and last != "void":
        out.append(last)
    return out


def _matching(source: str, pos: int, open_ch: str, close_ch: str) -> int:
    """Index just past the bracket that closes the one opened before ``pos``."""
    depth = 1
    while pos < len(source) and depth:
        ch = source[pos]
        depth += ch == open_ch
        depth -= ch == close_ch
        pos += 1
    if depth:
        raise ConfigError(f"inline-icache: unbalanced {open_ch}{close_ch} in the kernel source")
    return pos


def insert_icache_flush(source: str, entry: str) -> str:
    """Rewrite ``__global__`` function ``entry`` so that s_icache_inv + 16 s_nop 0 run first.

    Finds ``__global__ ... entry(`` (or the catalog's ``HX_KERNEL ... entry(``). Raises
    ``ConfigError`` when the kernel is missing, defined twice, already transformed, or has a
    parameter the transform cannot mirror (arrays, unnamed parameters).
    """
    if MARKER in source:
        raise ConfigError(f"kernel {entry!r} already carries the inline-icache flush; refusing to insert it twice")
    pattern = re.compile(r"(?:__global__|\bHX_KERNEL\b)[^;{}#]*?\b" + re.escape(entry) + r"\s*\(")
    hits = list(pattern.finditer(source))
    if not hits:
        raise ConfigError(f"inline-icache: no __global__ function named {entry!r} in the kernel source")
    if len(hits) > 1:
        raise ConfigError(f"inline-icache: {len(hits)} __global__ functions named {entry!r}; expected exactly one")
    m = hits[0]
    params_start = m.end()
    params_end = _matching(source, params_start, "(", ")")  # just past ")"
    params_text = source[params_start: params_end - 1]
    brace = source.find("{", params_end)
    semi = source.find(";", params_end)
    if brace < 0 or (0 <= semi < brace):
        raise ConfigError(f"inline-icache: {entry!r} is declared but not defined in this source (no body found)")
    body_end = _matching(source, brace + 1, "{", "}")
    body = source[brace:body_end]
    params = _split_params(params_text)
    names = []
    for p in params:
        if "[" in p:
            raise ConfigError(f"inline-icache: array parameter {p!r} of {entry!r} is not supported; pass a pointer")
        idents = re.findall(r"[A-Za-z_]\w*", p)
        if len(idents) < 2:
            raise ConfigError(f"inline-icache: parameter {p!r} of {entry!r} needs a type and a name")
        names.append(idents[-1])
    prefix = source[m.start(): m.end()]  # e.g. 'HX_KERNEL void triad(' or '__global__ void __launch_bounds__(256) k('
    body_fn = f"{entry}__hx_body"
    args_t = f"{entry}__hx_args"
    members = "".join(f"  {p};\n" for p in params)
    call = ", ".join(f"hx_ka->{n}" for n in names)
    wrapper = (
        f"static __device__ __attribute__((always_inline)) void {body_fn}({params_text}) {body}\n"
        f"struct {args_t} {{\n{members}}};\n"
        f"{prefix}{params_text}) {{\n"
        f"  unsigned int hx_zero;\n"
        f"  {icache_flush_statement('hx_zero')}\n"
        f"  const {_AS4} {args_t}* hx_ka = (const {_AS4} {args_t}*)"
        f"((const {_AS4} char*)__builtin_amdgcn_kernarg_segment_ptr() + hx_zero);\n"
        f"  if (hx_zero == 0u) {body_fn}({call});  /* always true; keeps the body's loads below the flush */\n"
        f"}}"
    )
    return source[: m.start()] + wrapper + source[body_end:]
