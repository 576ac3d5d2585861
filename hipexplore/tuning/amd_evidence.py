"""What can be checked about gfx942/gfx950 code objects without the GPU: resources, occupancy and
how two candidates' instruction streams differ.

Why: this machine has no MI300, but Triton compiles real gfx942 code objects here, and a tuning
review's first questions are answerable from them: does a candidate spill, how many waves fit on a
SIMD (and what limits it: VGPRs, SGPRs or LDS), and what did a tile change in the generated code
(MFMA count, LDS traffic, waits). Resources come from the code object's AMDHSA metadata (recorded
by the Triton backend in ``ObjectCode.metadata``); the listing is Triton's own AMDGCN (mode ``asm``),
because Debian's LLVM 14 llvm-objdump cannot disassemble gfx942.

Occupancy model (CDNA3 / CDNA4, per the ISA guides): per SIMD 512 VGPRs per lane shared by the
waves (arch + accumulation VGPRs together, allocated in granules of 8), 800 SGPRs (granules of 16),
at most 8 waves; 4 SIMDs per CU; LDS per CU 64 KiB (gfx942) or 160 KiB (gfx950), a workgroup of
``num_warps`` waves resident on one CU.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from typing import Mapping

import pandas as pd

from ..compile.base import ObjectCode
from ..errors import ConfigError

#: target -> (VGPRs per SIMD lane, SGPRs per SIMD, max waves per SIMD, SIMDs per CU, LDS bytes per CU)
ARCH = {
    "gfx942": (512, 800, 8, 4, 64 * 1024),
    "gfx950": (512, 800, 8, 4, 160 * 1024),
    "gfx90a": (512, 800, 8, 4, 64 * 1024),
}
#: instruction classes counted in a listing (regex on the mnemonic)
CLASSES = {
    "mfma": r"^v_mfma",
    "valu": r"^v_(?!mfma)",
    "salu": r"^s_(?!waitcnt|barrier|cbranch|branch|endpgm)",
    "global_load": r"^(global|buffer)_load",
    "global_store": r"^(global|buffer)_store",
    "lds_read": r"^ds_read|^ds_load",
    "lds_write": r"^ds_write|^ds_store",
    "waitcnt": r"^s_waitcnt",
    "barrier": r"^s_barrier",
    "branch": r"^s_(cbranch|branch)",
}


def _ceil(x: int, granule: int) -> int:
    return int(math.ceil(max(x, 1) / granule) * granule)


def occupancy(meta: Mapping[str, int], target: str) -> dict[str, object]:
    """Waves per SIMD and what limits it, from one kernel's metadata."""
    if target not in ARCH:
        raise ConfigError(f"no occupancy model for {target!r}; expected one of {', '.join(ARCH)}")
    vgprs, sgprs, max_waves, simds, lds_cu = ARCH[target]
    v = int(meta.get("vgpr", 0))  # .vgpr_count: arch + accumulation VGPRs together on CDNA (unified file)
    by = {"vgpr": vgprs // _ceil(v, 8), "sgpr": sgprs // _ceil(int(meta.get("sgpr", 0)), 16), "waves": max_waves}
    # Triton allocates its shared memory dynamically (``shared``), beside any static LDS
    lds = int(meta.get("lds", 0) or 0) + int(meta.get("shared", 0) or 0)
    wg_waves = max(1, int(meta.get("num_warps", 1)))
    if lds:
        workgroups = lds_cu // lds
        by["lds"] = (workgroups * wg_waves) // simds if workgroups else 0
    waves = max(0, min(by.values()))
    limiter = min(by, key=lambda k: (by[k], k != "waves"))
    return {"waves_per_simd": waves, "limited_by": limiter, **{f"waves_by_{k}": val for k, val in by.items()}}


def resource_table(codes: Mapping[str, ObjectCode]) -> pd.DataFrame:
    """One row per named gfx code object: registers, LDS, spills, scratch and occupancy."""
    rows = []
    for name, code in codes.items():
        md = dict(code.metadata)
        if md.get("binary_kind") != "hsaco":
            raise ConfigError(
                f"{name}: not an AMD code object from the Triton backend (got {code.compiler} {code.target})"
            )
        rows.append(
            {
                "kernel": name,
                "target": code.target,
                "symbol": md.get("name"),
                "num_warps": md.get("num_warps"),
                "vgpr": md.get("vgpr"),
                "agpr": md.get("agpr"),
                "sgpr": md.get("sgpr"),
                "lds_bytes": int(md.get("lds", 0) or 0) + int(md.get("shared", 0) or 0),
                "scratch_bytes": md.get("scratch"),
                "vgpr_spill": md.get("vgpr_spill"),
                "sgpr_spill": md.get("sgpr_spill"),
                "code_bytes": code.nbytes,
                **occupancy(md, code.target),
            }
        )
    return pd.DataFrame(rows)


def instructions(listing: str | bytes) -> list[str]:
    """The instruction lines of an AMDGCN listing (kernel body only), comments and labels removed."""
    text = listing.decode() if isinstance(listing, bytes) else listing
    out = []
    in_text = False
    for line in text.splitlines():
        s = line.split(";")[0].strip()
        if s.startswith(".text") or s.startswith(".section\t.text") or s == ".section .text":
            in_text = True
        if s.startswith(".section") and ".AMDGPU.csdata" in s or s.startswith(".Lfunc_end"):
            in_text = False
        if not in_text or not s or s.startswith(".") or s.endswith(":"):
            continue
        out.append(re.sub(r"\s+", " ", s))
    return out


def instruction_mix(listings: Mapping[str, str | bytes]) -> pd.DataFrame:
    """Counts of each instruction class per named listing (tidy: kernel, class, count)."""
    rows = []
    for name, text in listings.items():
        mnemonics = [i.split(" ")[0] for i in instructions(text)]
        counts = Counter()
        for cls, rx in CLASSES.items():
            counts[cls] = sum(1 for m in mnemonics if re.match(rx, m))
        counts["total"] = len(mnemonics)
        rows += [{"kernel": name, "class": c, "count": int(n)} for c, n in counts.items()]
    return pd.DataFrame(rows)


def disassembly_diff(a: str | bytes, b: str | bytes, name_a: str = "a", name_b: str = "b", context: int = 1) -> str:
    """A unified diff of two listings' instructions (register numbers kept: they are the point)."""
    return "\n".join(difflib.unified_diff(instructions(a), instructions(b), name_a, name_b, n=context, lineterm=""))


def compare_candidates(
    a: object = None,
    b: object = None,
    target: str = "gfx942",
    problem: object = None,
    cache: object = None,
    compiler: object = None,
) -> dict[str, object]:
    """Compile two Triton GEMM candidates for ``target`` (binary and listing, through the cache) and
    return {"resources": frame, "mix": frame (class x kernel), "diff": unified diff text}. Default:
    the qkv GEMM of the default list, BLOCK 64x64x32 against 128x64x32 (4 warps, 2 stages)."""
    from ..compile.cache import CompileCache
    from ..compile.registry import get_compiler
    from .lists import transformer_problems
    from .triton_list import TritonConfig, role_request

    a = a or TritonConfig(64, 64, 32, 1, 4, 2)
    b = b or TritonConfig(128, 64, 32, 1, 4, 2)
    prob = problem or transformer_problems()[0]
    cache = cache or CompileCache(disk_dir=False)
    compiler = compiler or get_compiler("triton")
    codes, listings = {}, {}
    for cfg in (a, b):
        req = role_request("gemm", target, prob, cfg)  # type: ignore[arg-type]
        codes[cfg.name] = cache.get_or_compile(req, compiler).object_code  # type: ignore[attr-defined]
        listings[cfg.name] = cache.get_or_compile(req.with_(mode="asm"), compiler).object_code.binary  # type: ignore[attr-defined]
    mix = instruction_mix(listings).pivot(index="class", columns="kernel", values="count")
    return {
        "resources": resource_table(codes),
        "mix": mix,
        "diff": disassembly_diff(listings[a.name], listings[b.name], a.name, b.name),
    }  # type: ignore[attr-defined]
