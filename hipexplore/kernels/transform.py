"""Source transforms applied before compilation: the inline instruction-cache flush.

``insert_icache_flush`` is the inline-icache flush mode (rocMLIR PR 2188 does it at LLVM IR level):
``s_icache_inv`` and 16 ``s_nop 0`` run at the entry of every kernel named, so every launch starts
from a cold instruction cache without a separate flush kernel. The transformed source compiles
through the cache under its own key, and the result is checked in the code object (a test
disassembles kernels that are not in the catalog).

Why not IR: ROCm 5.2's hiprtc (what runs here) has no bitcode output (``hiprtcGetBitcode``
arrived later), so there is no IR to edit. Why not simply put the ``asm`` statement first in the
body: the AMDGPU backend lowers kernel arguments to ``s_load`` instructions at the top of the
entry block (AMDGPULowerKernelArguments), so they come *before* any statement of the body.

How, for any kernel as users write it (``extern "C"``, templates instantiated by name expressions,
``__launch_bounds__``, by-value struct parameters, kernels made by macros, comments, headers):

1. The source is parsed with libclang (the ``libclang`` wheel; CUDA mode, device side, no headers
   needed: missing includes are stubbed), which finds each ``__global__`` definition, its full
   extent (the macro invocation, for a kernel a macro makes), its parameters, its template
   parameters, its linkage and its launch bounds. No text is searched with patterns.
2. Around the original definition, ``__global__`` is redefined (``#pragma push_macro``) to an
   always-inline ``__device__`` and the kernel's name to ``<name>__hx_body``: the original text is
   untouched, only renamed and demoted to a device function.
3. After it, a ``__global__`` wrapper of the original name, signature, linkage, template
   parameters and launch bounds runs the flush first; the flush asm also yields a zero in an SGPR,
   and the arguments are read through ``__builtin_amdgcn_kernarg_segment_ptr() + zero`` (a struct
   mirroring the parameter list, i.e. the kernarg layout), so no argument load can move above the
   flush. The body runs under ``if (zero == 0)`` (always true, unknown to the compiler), so its
   dispatch-packet loads cannot be scheduled above the flush either.

Refused with a ``ConfigError`` naming the kernel: a kernel not defined in the source, variadic
template parameter packs, parameters whose type libclang cannot resolve inside a macro expansion.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import ConfigError

ICACHE_ASM_LINES = ("s_icache_inv",) + ("s_nop 0",) * 16
MARKER = "/* hipexplore: inline-icache */"
_AS4 = "__attribute__((address_space(4)))"
BODY_SUFFIX = "__hx_body"

#: Clang arguments for a device-side parse that needs no CUDA or HIP installation.
_PARSE_ARGS = (
    "-x",
    "cuda",
    "--cuda-device-only",
    "-nocudainc",
    "-nocudalib",
    "-std=c++17",
    "-w",
    "-Wno-unknown-cuda-version",
    "-ferror-limit=0",
    "-D__global__=__attribute__((global))",
    "-D__device__=__attribute__((device))",
    "-D__host__=__attribute__((host))",
    "-D__shared__=__attribute__((shared))",
    "-D__constant__=__attribute__((constant))",
    "-D__forceinline__=inline",
    "-D__launch_bounds__(...)=__attribute__((launch_bounds(__VA_ARGS__)))",
    "-D__HIPCC_RTC__=1",
    "-D__HIP_PLATFORM_AMD__=1",
    "-D__HIP__=1",
)
#: Headers the runtime compilers provide built in: stubbed (empty) for the parse.
_STUB_HEADERS = (
    "hip/hip_runtime.h",
    "hip/hip_runtime_api.h",
    "hip/hip_fp16.h",
    "hip/hip_bf16.h",
    "hip/hip_vector_types.h",
    "hip/hip_cooperative_groups.h",
    "hip/amd_detail/amd_hip_runtime.h",
    "cuda_runtime.h",
    "cuda_fp16.h",
    "cuda_bf16.h",
    "cuda.h",
    "stdint.h",
    "cstdint",
    "cstddef",
    "stddef.h",
    "limits",
    "type_traits",
    "cmath",
    "math.h",
)
_LOCK = threading.Lock()


def icache_flush_statement(zero_var: str | None = None) -> str:
    body = "\\n\\t".join(ICACHE_ASM_LINES)
    if zero_var is None:
        return f'{MARKER} asm volatile("{body}" ::: "memory");'
    return f'{MARKER} asm volatile("{body}\\n\\ts_mov_b32 %0, 0" : "=s"({zero_var}) :: "memory");'


def base_name(name_expression: str) -> str:
    """'scale<float, 256>' -> 'scale'; 'ns::k' -> 'k'; 'triad' -> 'triad'."""
    head = name_expression.split("<", 1)[0].strip()
    return head.rsplit("::", 1)[-1].strip()


@dataclass(frozen=True)
class KernelSite:
    """One ``__global__`` definition found by the parse (offsets into the main source text)."""

    name: str
    start: int  # where the definition (or the macro invocation that makes it) starts
    end: int  # just past it
    params: tuple[tuple[str, str], ...]  # (declaration text without the name, name)
    template_params: str  # e.g. 'typename T, int B' ('' if not a template)
    template_args: str  # e.g. 'T, B'
    c_linkage: bool
    launch_bounds: str  # e.g. '__launch_bounds__(256)' or ''
    in_macro: bool


def _cindex():
    try:
        import clang.cindex as ci
    except ImportError as exc:
        raise ConfigError(
            f"inline-icache needs libclang to find kernels in the source (pip install libclang; the 'hip' extra has it): {exc}"
        ) from None
    return ci


def find_kernels(
    source: str, filename: str = "kernel.hip", headers: Sequence[tuple[str, str]] = ()
) -> list[KernelSite]:
    """Every ``__global__`` function defined in ``source`` (not in its headers)."""
    ci = _cindex()
    unsaved = [(filename, source)] + [(f"/hx-headers/{n}", t) for n, t in headers]
    unsaved += [(f"/hx-stubs/{h}", "") for h in _STUB_HEADERS if h not in {n for n, _ in headers}]
    args = list(_PARSE_ARGS) + ["-I/hx-headers", "-I/hx-stubs"]
    with _LOCK:  # libclang's index is not thread-safe
        index = ci.Index.create()
        tu = index.parse(
            filename, args=args, unsaved_files=unsaved, options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
        )
        data = source.encode()
        sites: list[KernelSite] = []
        for cur in tu.cursor.walk_preorder():
            if (
                cur.kind not in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE)
                or not cur.is_definition()
            ):
                continue
            if cur.location.file is None or cur.location.file.name != filename:
                continue
            kids = list(cur.get_children())
            if not any(k.kind == ci.CursorKind.CUDAGLOBAL_ATTR for k in kids):
                continue
            sites.append(_site(ci, tu, cur, kids, data))
    return sites


def _text(data: bytes, start: int, end: int) -> str:
    return data[start:end].decode(errors="replace")


def _site(ci, tu, cur, kids, data: bytes) -> KernelSite:
    name = cur.spelling
    ext = cur.extent
    start, end = ext.start.offset, ext.end.offset
    in_macro = _is_macro_expansion(ci, cur)
    # a definition inside extern "C" { ... } or extern "C" <decl>: start at the linkage spec
    parent = cur.semantic_parent
    c_linkage = cur.kind == ci.CursorKind.FUNCTION_DECL and cur.mangled_name == name
    if parent is not None and parent.kind == ci.CursorKind.UNEXPOSED_DECL:
        pstart = parent.extent.start.offset
        head = _text(data, pstart, start)
        if head.strip().startswith("extern") and "{" not in head:  # extern "C" __global__ ... (no braces)
            start = pstart
    params: list[tuple[str, str]] = []
    parm_cursors = [k for k in kids if k.kind == ci.CursorKind.PARM_DECL]
    for i, p in enumerate(parm_cursors):
        pname = p.spelling or f"hx_a{i}"
        if not in_macro:
            text = _text(data, p.extent.start.offset, p.extent.end.offset)
            if p.spelling:
                # strip the name (last occurrence as a whole word) and a default argument
                text = re.sub(r"\s*=.*$", "", text, flags=re.S)
                idx = [m.start() for m in re.finditer(rf"\b{re.escape(p.spelling)}\b", text)]
                decl = (text[: idx[-1]] + "HX_NAME" + text[idx[-1] + len(p.spelling) :]) if idx else f"{text} HX_NAME"
            else:
                decl = f"{text} HX_NAME"
        else:
            if p.type.kind == ci.TypeKind.INVALID:
                raise ConfigError(
                    f"inline-icache: parameter {pname!r} of kernel {name!r} (made by a macro) has a type "
                    f"libclang cannot resolve; pass its header with the source"
                )
            decl = f"{p.type.spelling} HX_NAME"
        if "[" in decl.replace("HX_NAME", "") and "(*" not in decl:
            decl = re.sub(r"\[[^\]]*\]", "", decl).replace("HX_NAME", "* HX_NAME")  # arrays decay to pointers
        params.append((decl, pname))
    tparams, targs = "", ""
    if cur.kind == ci.CursorKind.FUNCTION_TEMPLATE:
        names = []
        for k in kids:
            if k.kind in (
                ci.CursorKind.TEMPLATE_TYPE_PARAMETER,
                ci.CursorKind.TEMPLATE_NON_TYPE_PARAMETER,
                ci.CursorKind.TEMPLATE_TEMPLATE_PARAMETER,
            ):
                toks = [t.spelling for t in k.get_tokens()]
                if "..." in toks:
                    raise ConfigError(
                        f"inline-icache: kernel {name!r} has a template parameter pack; its arguments "
                        f"cannot be mirrored in a kernarg struct"
                    )
                names.append(k.spelling)
        tokens = [t.spelling for t in cur.get_tokens()]
        if tokens[:2] == ["template", "<"]:
            depth, j = 1, 2
            while j < len(tokens) and depth:
                depth += tokens[j] == "<"
                depth -= tokens[j] == ">"
                depth -= 2 * (tokens[j] == ">>")
                j += 1
            tparams = " ".join(tokens[2 : j - 1])
        targs = ", ".join(names)
    bounds = ""
    for k in kids:
        if k.kind == ci.CursorKind.CUDAGLOBAL_ATTR:
            continue
        if k.kind.is_attribute():
            toks = [t.spelling for t in k.get_tokens()]
            if toks and toks[0] in ("__launch_bounds__", "launch_bounds"):
                bounds = (
                    "__launch_bounds__" + " ".join(toks[1:]).replace(" ", "") if toks[0] == "__launch_bounds__" else ""
                )
            elif toks and toks[0].startswith("amdgpu_"):
                bounds += f" __attribute__(({' '.join(toks)}))"
    if not bounds:
        src = _text(data, start, end)
        m = re.search(r"__launch_bounds__\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)", src.split("{", 1)[0])
        if m:
            bounds = f"__launch_bounds__({m.group(1)})"
    return KernelSite(name, start, end, tuple(params), tparams, targs, bool(c_linkage), bounds, in_macro)


def _is_macro_expansion(ci, cur) -> bool:
    """True when the definition's tokens come from a macro expansion (its name is not where it is spelled)."""
    loc = cur.location
    try:
        f = ci.conf.lib.clang_getSpellingLocation
    except AttributeError:  # pragma: no cover - every libclang has it
        return False
    import ctypes

    file_ = ctypes.c_void_p()
    line, col, off = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    f(loc, ctypes.byref(file_), ctypes.byref(line), ctypes.byref(col), ctypes.byref(off))
    return off.value != loc.offset


def _wrapper(site: KernelSite) -> str:
    n = site.name
    body, args_t = f"{n}{BODY_SUFFIX}", f"{n}__hx_args"
    decls = [d.replace("HX_NAME", pname) for d, pname in site.params]
    members = "".join(f"  {d};\n" for d in decls)
    tpl = f"template <{site.template_params}>\n" if site.template_params else ""
    targs = f"<{site.template_args}>" if site.template_params else ""
    call = ", ".join(f"hx_ka->{pname}" for _, pname in site.params)
    linkage = 'extern "C" ' if site.c_linkage else ""
    struct = f"{tpl}struct {args_t} {{\n{members}}};\n" if site.params else ""
    # generic pointer to the kernarg segment: members of class type (by-value structs) copy from it
    # like any object; InferAddressSpaces turns the loads back into scalar kernarg loads
    ka = (
        (
            f"  const {args_t}{targs}* hx_ka = (const {args_t}{targs}*)(const char*)"
            f"((const {_AS4} char*)__builtin_amdgcn_kernarg_segment_ptr() + hx_zero);\n"
        )
        if site.params
        else ""
    )
    return (
        f"{struct}"
        f"{tpl}{linkage}__global__ {site.launch_bounds + ' ' if site.launch_bounds else ''}void {n}({', '.join(decls)}) {{\n"
        f"  unsigned int hx_zero;\n"
        f"  {icache_flush_statement('hx_zero')}\n"
        f"{ka}"
        f"  if (hx_zero == 0u) {body}{targs}({call});  /* always true; keeps the body's loads below the flush */\n"
        f"}}\n"
    )


#: Macros redefined around the original definition: the kernel becomes a plain device function,
#: and kernel-only attributes (launch bounds and their AMDGPU spellings) go to the wrapper instead.
_DEMOTE = (
    ("__global__", "__device__ __attribute__((always_inline))"),
    ("__launch_bounds__(...)", ""),
    ("amdgpu_flat_work_group_size(...)", ""),
    ("amdgpu_waves_per_eu(...)", ""),
)


def _prologue(sites: Sequence[KernelSite]) -> str:
    lines = []
    for macro, value in _DEMOTE:
        name = macro.split("(", 1)[0]
        lines += [f'#pragma push_macro("{name}")', f"#undef {name}", f"#define {macro} {value}".rstrip()]
    lines += [f"#define {s.name} {s.name}{BODY_SUFFIX}" for s in sites]
    return "\n" + "\n".join(lines) + "\n"


def _epilogue(sites: Sequence[KernelSite]) -> str:
    lines = [f"#undef {s.name}" for s in sites]
    for macro, _ in reversed(_DEMOTE):
        name = macro.split("(", 1)[0]
        lines += [f"#undef {name}", f'#pragma pop_macro("{name}")']
    return "\n" + "\n".join(lines) + "\n" + "".join(_wrapper(s) for s in sites)


def insert_icache_flush(
    source: str,
    entry: str | Iterable[str] | None = None,
    *,
    filename: str = "kernel.hip",
    headers: Sequence[tuple[str, str]] = (),
) -> str:
    """Return ``source`` with s_icache_inv + 16 s_nop 0 at the entry of each kernel named in
    ``entry`` (a name, a name expression like ``'scale<float, 256>'``, or several; ``None``: every
    ``__global__`` kernel the source defines). See the module docstring for how and why."""
    if MARKER in source:
        raise ConfigError("this kernel source already carries the inline-icache flush; refusing to insert it twice")
    wanted = (
        None if entry is None else ({base_name(entry)} if isinstance(entry, str) else {base_name(e) for e in entry})
    )
    sites = find_kernels(source, filename, headers)
    if wanted is not None:
        names = {s.name for s in sites}
        missing = sorted(wanted - names)
        if missing:
            have = ", ".join(sorted(names)) or "none"
            raise ConfigError(
                f"inline-icache: no __global__ function named {', '.join(repr(m) for m in missing)} in "
                f"{filename}: not defined there (kernels defined there: {have})"
            )
        sites = [s for s in sites if s.name in wanted]
    if not sites:
        raise ConfigError(f"inline-icache: {filename} defines no __global__ kernel")
    counts: dict[str, int] = {}
    for s in sites:
        counts[s.name] = counts.get(s.name, 0) + 1
    dup = sorted(k for k, v in counts.items() if v > 1)
    if dup:
        raise ConfigError(
            f"inline-icache: kernel {dup[0]!r} is defined {counts[dup[0]]} times in {filename} (overloads "
            f"cannot be told apart by name)"
        )
    # offsets are bytes (libclang's); a macro invocation making several kernels is one span
    spans: dict[tuple[int, int], list[KernelSite]] = {}
    for site in sites:
        spans.setdefault((site.start, site.end), []).append(site)
    out = source.encode()
    for (start, end), group in sorted(spans.items(), reverse=True):
        out = out[:start] + _prologue(group).encode() + out[start:end] + _epilogue(group).encode() + out[end:]
    return out.decode()


__all__ = [
    "ICACHE_ASM_LINES",
    "KernelSite",
    "MARKER",
    "base_name",
    "find_kernels",
    "icache_flush_statement",
    "insert_icache_flush",
]
