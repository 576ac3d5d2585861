"""What a harness needs to launch the kernel Triton compiled (``launch_metadata``), JSON-able, carried
in the ``ObjectCode``'s ``metadata`` by the Triton backend (``compile.tritonc``).

Why a module of its own: it reads Triton's compiled object as data (its ``metadata`` and the
assembly it kept), not Triton's API, and it is what the benchmark harness launches by: the kernel's
name, shared memory, warps and their size, and the parameters the ABI takes: the user's
non-constexpr arguments, then the scratch pointers Triton 3.x appends (``global_scratch``,
``profile_scratch``), counted from the PTX/AMDGCN entry (``count_params``), and for AMD the resource
usage from the code object's metadata (registers, LDS, scratch, spills).
"""

from __future__ import annotations

import re
from typing import Any

_PTX_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\(([^)]*)\)", re.S)
_AMD_FIELD = {
    "vgpr": r"\.vgpr_count:\s+(\d+)",
    "sgpr": r"\.sgpr_count:\s+(\d+)",
    "agpr": r"\.agpr_count:\s+(\d+)",
    "lds": r"\.group_segment_fixed_size:\s+(\d+)",
    "scratch": r"\.private_segment_fixed_size:\s+(\d+)",
    "vgpr_spill": r"\.vgpr_spill_count:\s+(\d+)",
    "sgpr_spill": r"\.sgpr_spill_count:\s+(\d+)",
    "wavefront_size": r"\.wavefront_size:\s+(\d+)",
    "kernarg_size": r"\.kernarg_segment_size:\s+(\d+)",
}


def launch_metadata(compiled: Any, binary_kind: str, user_args: list[str]) -> dict[str, Any]:
    """What a harness needs to launch the kernel Triton compiled, JSON-able."""
    md = compiled.metadata
    n_params = count_params(compiled.asm, binary_kind)
    extra = max(0, n_params - len(user_args)) if n_params >= 0 else 0
    extra_names = ["global_scratch", "profile_scratch"][:extra] + [f"extra_{i}" for i in range(max(0, extra - 2))]
    meta: dict[str, Any] = {
        "name": md.name,
        "shared": int(md.shared),
        "num_warps": int(md.num_warps),
        "warp_size": int(md.warp_size),
        "num_stages": int(getattr(md, "num_stages", 0) or 0),
        "num_ctas": int(getattr(md, "num_ctas", 1) or 1),
        "block_threads": int(md.num_warps) * int(md.warp_size),
        "params": user_args + extra_names,
        "scratch_params": extra_names,
        "global_scratch_size": int(getattr(md, "global_scratch_size", 0) or 0),
        "global_scratch_align": int(getattr(md, "global_scratch_align", 1) or 1),
        "profile_scratch_size": int(getattr(md, "profile_scratch_size", 0) or 0),
        "triton_version": str(getattr(md, "triton_version", "")),
        "binary_kind": binary_kind,
        "arch": str(md.target.arch),
    }
    if binary_kind == "hsaco":
        text = compiled.asm.get("amdgcn", "")
        for k, rx in _AMD_FIELD.items():
            m = re.search(rx, text)
            if m:
                meta[k] = int(m.group(1))
    return meta


def count_params(asm: dict[str, Any], binary_kind: str) -> int:
    """The parameters of the kernel's entry in Triton's assembly (PTX ``.entry``, AMDGCN ``.args``); -1
    when the entry cannot be found. Triton 3.x appends scratch pointers to the user's arguments."""
    if binary_kind == "cubin":
        m = _PTX_ENTRY.search(asm.get("ptx", ""))
        return len([p for p in m.group(2).split(",") if p.strip()]) if m else -1
    text = asm.get("amdgcn", "")
    m = re.search(r"\.args:\n(.*?)\n\s+\.group_segment_fixed_size", text, re.S)
    if not m:
        return -1
    return len(re.findall(r"^\s+- (?:\.address_space|\.name|\.offset|\.size|\.value_kind)", m.group(1), re.M))
