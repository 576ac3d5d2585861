"""Precompiled code objects: ``--code-object FILE --entry NAME``.

Why check before loading: a ``.hsaco`` dumped by MIGraphX for gfx942 handed to a gfx90a, or an
sm_90 cubin handed to an sm_80, fails inside the driver with an unhelpful status (or, for HIP,
can abort the process). So the file is read first and its target compared with the device's:

* AMD code object (ELF, ``e_machine`` 224 = EM_AMDGPU): the gfx name from ``e_flags & 0xff``
  (``EF_AMDGPU_MACH``); it must equal the device's (``gfx90a`` vs ``gfx90a:sramecc+:xnack-``:
  the feature suffix is not compared). A clang offload bundle lists its targets in its entry ids.
* CUDA cubin (ELF, ``e_machine`` 190 = EM_CUDA): sm from ``e_flags`` (bits 8-15 from ELF ABI
  version 8 on, bits 0-7 before); runs on the same major with a minor at least the cubin's.
* fatbin (magic ``0xBA55ED50``): every embedded cubin/PTX and its sm; one must fit.
* PTX (text with ``.target sm_XY``): JIT-compiled by the driver for any sm >= XY.
* host: a shared library whose ``e_machine`` is this machine's.
"""

from __future__ import annotations

import platform
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compile.base import ObjectCode
from ..errors import ConfigError

EM_X86_64, EM_AARCH64, EM_CUDA, EM_AMDGPU = 62, 183, 190, 224
FATBIN_MAGIC = 0xBA55ED50
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"

#: EF_AMDGPU_MACH values (llvm/BinaryFormat/ELF.h) -> gfx names
AMDGPU_MACH = {
    0x2C: "gfx900",
    0x2D: "gfx902",
    0x2E: "gfx904",
    0x2F: "gfx906",
    0x30: "gfx908",
    0x31: "gfx909",
    0x32: "gfx90c",
    0x33: "gfx1010",
    0x34: "gfx1011",
    0x35: "gfx1012",
    0x36: "gfx1030",
    0x37: "gfx1031",
    0x38: "gfx1032",
    0x39: "gfx1033",
    0x3D: "gfx1035",
    0x3E: "gfx1034",
    0x3F: "gfx90a",
    0x40: "gfx940",
    0x41: "gfx1100",
    0x42: "gfx1013",
    0x43: "gfx1150",
    0x44: "gfx1103",
    0x45: "gfx1036",
    0x46: "gfx1101",
    0x47: "gfx1102",
    0x48: "gfx1200",
    0x4A: "gfx1151",
    0x4B: "gfx941",
    0x4C: "gfx942",
    0x4E: "gfx1201",
    0x4F: "gfx950",
}
_HOST_MACHINE = {"x86_64": EM_X86_64, "amd64": EM_X86_64, "aarch64": EM_AARCH64, "arm64": EM_AARCH64}


@dataclass(frozen=True)
class CodeObjectInfo:
    """What a code object file is: its kind, the targets it holds, the compiler family that loads it."""

    kind: str  # amdgpu-elf, offload-bundle, cubin, fatbin, ptx, host-elf
    targets: tuple[str, ...]
    compiler: str  # hiprtc, nvrtc, host

    def describe(self) -> str:
        return f"{self.kind} for {', '.join(self.targets) or 'an unknown target'}"


def _elf(data: bytes, what: str) -> CodeObjectInfo:
    if len(data) < 52:
        raise ConfigError(f"{what} is a truncated ELF file ({len(data)} bytes)")
    little = data[5] == 1
    fmt = "<" if little else ">"
    machine = struct.unpack_from(fmt + "H", data, 18)[0]
    flags_off = 48 if data[4] == 2 else 36
    flags = struct.unpack_from(fmt + "I", data, flags_off)[0]
    if machine == EM_AMDGPU:
        mach = flags & 0xFF
        return CodeObjectInfo("amdgpu-elf", (AMDGPU_MACH.get(mach, f"unknown EF_AMDGPU_MACH {mach:#x}"),), "hiprtc")
    if machine == EM_CUDA:
        sm = (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF
        return CodeObjectInfo("cubin", (f"sm_{sm}",), "nvrtc")
    names = {EM_X86_64: "x86-64", EM_AARCH64: "aarch64"}
    return CodeObjectInfo("host-elf", (names.get(machine, f"e_machine {machine}"),), "host")


def _fatbin(data: bytes, what: str) -> CodeObjectInfo:
    targets: list[str] = []
    try:
        _, _, head, size = struct.unpack_from("<IHHQ", data, 0)
        off, end = head, min(len(data), head + size)
        while off + 32 <= end:
            kind, _, ehead, payload = struct.unpack_from("<HHIQ", data, off)
            arch = struct.unpack_from("<I", data, off + 28)[0]
            targets.append(f"sm_{arch}" + (" (PTX)" if kind == 1 else ""))
            if ehead == 0:
                break
            off += ehead + payload
    except struct.error:
        pass
    if not targets:
        raise ConfigError(f"{what} has the fatbin magic but no readable entries")
    return CodeObjectInfo("fatbin", tuple(targets), "nvrtc")


def inspect(data: bytes, what: str = "code object") -> CodeObjectInfo:
    """Read the kind and targets of a code object's bytes (``ConfigError`` if it is none we know)."""
    if data[:4] == b"\x7fELF":
        return _elf(data, what)
    if len(data) >= 4 and struct.unpack_from("<I", data, 0)[0] == FATBIN_MAGIC:
        return _fatbin(data, what)
    if data.startswith(BUNDLE_MAGIC):
        ids = re.findall(rb"hipv4-amdgcn-amd-amdhsa--(gfx[0-9a-f]+)", data[:4096]) + re.findall(
            rb"hip-amdgcn-amd-amdhsa-(gfx[0-9a-f]+)", data[:4096]
        )
        return CodeObjectInfo("offload-bundle", tuple(sorted({i.decode() for i in ids})), "hiprtc")
    head = data[:65536].decode("utf-8", "replace")
    m = re.search(r"^\s*\.target\s+(sm_\w+)", head, re.MULTILINE)
    if m and ".version" in head:
        return CodeObjectInfo("ptx", (m.group(1),), "nvrtc")
    raise ConfigError(
        f"{what} is not a code object hipexplore knows (AMD ELF code object, offload bundle, "
        f"CUDA cubin, fatbin, PTX, or a host shared library); first bytes {data[:8]!r}"
    )


def _sm(target: str) -> tuple[int, int, bool]:
    m = re.match(r"sm_(\d+?)(\d)(a?)", target.split()[0])
    if not m:
        return (-1, -1, False)
    return int(m.group(1)), int(m.group(2)), bool(m.group(3))


def fits(info: CodeObjectInfo, device_compiler: str, device_target: str) -> bool:
    if info.compiler != device_compiler:
        return False
    if info.compiler == "hiprtc":
        return device_target.split(":")[0] in info.targets
    if info.compiler == "host":
        return _HOST_MACHINE.get(platform.machine().lower()) == {"x86-64": EM_X86_64, "aarch64": EM_AARCH64}.get(
            info.targets[0]
        )
    dmaj, dmin, _ = _sm(device_target)
    for t in info.targets:
        maj, mnr, arch_specific = _sm(t)
        if info.kind == "ptx" or t.endswith("(PTX)"):
            if (maj, mnr) <= (dmaj, dmin) and not (arch_specific and (maj, mnr) != (dmaj, dmin)):
                return True
        elif maj == dmaj and mnr <= dmin:
            return True
    return False


def check_target(info: CodeObjectInfo, device: Any, path: str) -> None:
    """``ConfigError`` naming the file, what it holds and what the device needs, unless it fits."""
    if not fits(info, device.compiler, device.target):
        family = {
            "hiprtc": "an AMD code object (hsaco/co)",
            "nvrtc": "a CUDA cubin, fatbin or PTX",
            "host": "a host shared library",
        }[device.compiler]
        raise ConfigError(
            f"code object {path!r} is {info.describe()}, but {device.kind} device {device.name!r} "
            f"needs {family} for {device.target}"
        )


def read_code_object(path: str | Path) -> tuple[bytes, CodeObjectInfo]:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read code object {str(path)!r}: {exc.strerror or exc}") from None
    return data, inspect(data, f"code object {str(path)!r}")


def load_code_object(device: Any, path: str | Path, entry: str) -> tuple[Any, Any, ObjectCode]:
    """Read, check against ``device``'s target, load; the (module, function, ObjectCode)."""
    data, info = read_code_object(path)
    check_target(info, device, str(path))
    if info.kind == "ptx" and not data.endswith(b"\0"):
        data += b"\0"  # cuModuleLoadData reads PTX as a C string
    code = ObjectCode(
        binary=data,
        compiler=info.compiler,
        target=device.target,
        mode=info.kind,
        log=f"precompiled {info.describe()} from {path}",
        lowered_names={entry: entry},
    )
    module = device.load(code)
    return module, device.kernel(module, entry), code


__all__ = ["CodeObjectInfo", "check_target", "fits", "inspect", "load_code_object", "read_code_object"]
