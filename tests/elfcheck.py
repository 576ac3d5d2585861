"""What a compiled binary really is, read from its ELF headers and symbol tables (pyelftools).

A check of the ``\\x7fELF`` magic alone passes for any ELF: an x86 object handed back for a GPU
target, a code object for the wrong GPU, a library without the kernel. These helpers check the
machine (EM_AMDGPU / EM_CUDA / the host's), the GPU target in ``e_flags`` and the kernel symbols.
"""

from __future__ import annotations

import io
import platform
import struct

EM_X86_64, EM_AARCH64, EM_CUDA, EM_AMDGPU = 62, 183, 190, 224
#: EF_AMDGPU_MACH_* values (LLVM AMDGPUUsage, code object v3+): the target lives in e_flags & 0xFF.
EF_AMDGPU_MACH = {
    "gfx900": 0x2C,
    "gfx906": 0x2F,
    "gfx908": 0x30,
    "gfx90a": 0x3F,
    "gfx1030": 0x36,
    "gfx940": 0x40,
    "gfx941": 0x4B,
    "gfx942": 0x4C,
    "gfx1100": 0x41,
    "gfx1101": 0x46,
    "gfx1102": 0x47,
}
EM_HOST = {"x86_64": EM_X86_64, "aarch64": EM_AARCH64}.get(platform.machine())


def elf_header(binary: bytes) -> tuple[int, int]:
    """(e_machine, e_flags) read straight from an ELF64 little-endian header."""
    assert binary[:4] == b"\x7fELF", binary[:16]
    assert binary[4] == 2, "expected ELFCLASS64"
    return struct.unpack_from("<H", binary, 18)[0], struct.unpack_from("<I", binary, 48)[0]


def elffile(binary: bytes):
    from conftest import missing

    try:
        from elftools.elf.elffile import ELFFile
    except ImportError as exc:
        missing("pyelftools", str(exc))  # the dev extra
    return ELFFile(io.BytesIO(binary))


def symbols(binary: bytes, section: str | None = None) -> dict[str, tuple[str, str, bool]]:
    """name -> (type, binding, defined) over every symbol table (or only ``section``, e.g. ``.dynsym``)."""
    out: dict[str, tuple[str, str, bool]] = {}
    for sec in elffile(binary).iter_sections():
        if not hasattr(sec, "iter_symbols") or (section is not None and sec.name != section):
            continue
        for sym in sec.iter_symbols():
            if sym.name:
                out[sym.name] = (sym["st_info"]["type"], sym["st_info"]["bind"], sym["st_shndx"] != "SHN_UNDEF")
    return out


def cuda_sm(flags: int) -> int:
    # CUDA >= 12.8 ELF ABI v8 keeps the SM in bits 8..15; older cubins in bits 0..7
    return (flags >> 8) & 0xFF if (flags >> 24) else flags & 0xFF


def assert_amdgpu_code_object(binary: bytes, target: str, kernel: str) -> None:
    """An AMDGPU code object for ``target`` defining ``kernel`` and its kernel descriptor."""
    machine, flags = elf_header(binary)
    assert machine == EM_AMDGPU, f"e_machine {machine}, expected EM_AMDGPU ({EM_AMDGPU})"
    assert flags & 0xFF == EF_AMDGPU_MACH[target], f"e_flags {flags:#x}: mach {flags & 0xFF:#x}, expected {target}"
    syms = symbols(binary)
    assert kernel in syms and syms[kernel][0] == "STT_FUNC" and syms[kernel][2], (kernel, sorted(syms))
    assert f"{kernel}.kd" in syms and syms[f"{kernel}.kd"][2], (kernel, sorted(syms))


def assert_cubin(binary: bytes, sm: int, kernel: str) -> None:
    """A CUDA cubin for ``sm_<sm>`` defining ``kernel``."""
    machine, flags = elf_header(binary)
    assert machine == EM_CUDA, f"e_machine {machine}, expected EM_CUDA ({EM_CUDA})"
    assert cuda_sm(flags) == sm, f"e_flags {flags:#x}: sm_{cuda_sm(flags)}, expected sm_{sm}"
    syms = symbols(binary)
    assert kernel in syms and syms[kernel][0] == "STT_FUNC" and syms[kernel][2], (kernel, sorted(syms))


def assert_host_library(binary: bytes, exported: str) -> None:
    """A shared library for this machine that exports ``exported`` as a defined global function."""
    machine, _ = elf_header(binary)
    assert EM_HOST is not None and machine == EM_HOST, (
        f"e_machine {machine}, expected {EM_HOST} for {platform.machine()}"
    )
    assert elffile(binary).header["e_type"] == "ET_DYN"
    dyn = symbols(binary, ".dynsym")
    assert dyn.get(exported) == ("STT_FUNC", "STB_GLOBAL", True), (exported, dyn.get(exported))
