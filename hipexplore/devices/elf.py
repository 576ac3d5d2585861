"""The functions (and data) a shared library exports, read from its ELF dynamic symbol table.

Why: ctypes can look a symbol up but cannot list them, and "kernel 'stencil' is not in the loaded
host module" said what was wrong without the names that are there (the ``--entry`` to give, or the
C++ name mangling that hid the one meant); and an ``--entry`` naming a variable was called as a
function (a segmentation fault, no word). No ``nm``: the host compiler's binutils need not be
installed, and the table is a few fixed-size records.
"""

from __future__ import annotations

import struct
from pathlib import Path

_SHT_DYNSYM = 11
_STT_FUNC = 2
_STB_GLOBAL, _STB_WEAK = 1, 2
_SHN_UNDEF = 0


#: what a symbol's ELF type says it is (STT_NOTYPE, OBJECT, FUNC, ..., TLS, GNU_IFUNC)
_KINDS = {0: "untyped", 1: "data", 2: "function", 5: "common data", 6: "thread-local data", 10: "function"}


def exported_symbols(path: str | Path) -> dict[str, str]:
    """What each symbol ``path`` (an ELF64 shared library) defines and exports is: ``function``,
    ``data`` (a variable, an array, a function pointer), ...; {} for a file that is not one (a
    caller's message then lists nothing rather than failing). The toolchain's own (``_init``,
    ``__*``) are left out."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {}
    if data[:4] != b"\x7fELF" or len(data) < 64 or data[4] != 2:  # ELF64 only: the host builds x86-64/aarch64
        return {}
    end = "<" if data[5] == 1 else ">"
    try:
        (shoff,) = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        sections = [struct.unpack_from(end + "IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        out: dict[str, str] = {}
        for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
            if kind != _SHT_DYNSYM or not entsize:
                continue
            strings = sections[link][4]
            for at in range(offset, offset + size, entsize):
                name, info, _other, shndx, _value, _size = struct.unpack_from(end + "IBBHQQ", data, at)
                if info >> 4 in (_STB_GLOBAL, _STB_WEAK) and shndx != _SHN_UNDEF and name:
                    text = data[strings + name : data.index(b"\0", strings + name)].decode("utf-8", "replace")
                    if text not in ("_init", "_fini") and not text.startswith("__"):  # the toolchain's own
                        out[text] = _KINDS.get(info & 0xF, "other")
        return out
    except (struct.error, IndexError, ValueError):
        return {}


def exported_functions(path: str | Path) -> list[str]:
    """Names of the functions ``path`` defines and exports, sorted (``exported_symbols``)."""
    return sorted(name for name, kind in exported_symbols(path).items() if kind == "function")


__all__ = ["exported_functions", "exported_symbols"]
