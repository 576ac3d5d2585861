"""The role check: one launch per (kernel, size) that tests what ``--args`` says each buffer is.

Why: a user kernel's roles are a claim the harness otherwise never tests, and a wrong claim still
times *something*. ``--args 'in:in:f32[n], out:out:f32[n], ...'`` for ``stencil2d(float* out, const
float* in, ...)`` ran with exit 0 and timed a stencil that overwrote its input; without a
reference the output check had nothing to compare (``rel_l2_error=nan``). So, before a (kernel,
size) is timed and whether or not the kernel has a reference, one launch on set 0 checks:

- an ``in`` buffer is never written (its bytes after the launch are those put in before it);
- every ``out`` element is written: each ``out`` is poisoned first (every byte ``0xff``, a NaN, for
  floats; ``0x7f`` for integers) and an element still holding the poison is unwritten. A kernel may
  legitimately store the poison's value (an int8 saturating at 127), so elements found holding it
  are checked once more with a second poison (``0xa5`` bytes): only an element that held both is
  counted as never written;
- an ``inout`` buffer is changed (at least one element).

A violation is a ``ConfigError`` (exit 2 from the CLI) of one line naming each argument, what was
seen (how many elements of how many, the first unwritten index), the C signature when the source
shows it, and the way out (``--no-verify``). It runs where the reference check runs, per (kernel,
size) before that size is timed, so a sweep whose first size breaks a role times nothing. For a
kernel with a reference, unwritten ``out`` elements alone are raised after the reference check,
which names the worst element and its expected value. The comparisons are on the bytes, so a NaN
compares equal to itself. Every buffer of set 0 is restored afterwards, so the reference check
that follows (``bench.check``) and every set see the data they would have seen.

Only the device's members are used (``memset``, ``launch``, ``synchronize``, ``copy_to_host``,
``copy_to_device``): the same code runs on the host device and on CUDA/HIP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..devices.base import Device
from ..errors import ConfigError
from ..kernels.spec import DTYPE_ALIASES, Arg, KernelSpec

#: the poison's byte (first pass, second pass) by whether the dtype is floating
_POISON = {True: (0xFF, 0xA5), False: (0x7F, 0xA5)}
_SHORT = {v: k for k, v in reversed(DTYPE_ALIASES.items()) if len(k) <= 3}


def applies(spec: KernelSpec) -> bool:
    """Whether ``spec`` gets the role check: a kernel (not a callable) that declares buffers and
    has not opted out (the catalog's own kernels: their reference checks every output)."""
    return spec.call is None and spec.role_check and bool(spec.buffers())


def _bits(arr: np.ndarray) -> np.ndarray:
    return arr.reshape(-1).view(f"u{arr.dtype.itemsize}")


def _pattern(byte: int, itemsize: int) -> int:
    return int.from_bytes(bytes([byte]) * itemsize, "little")


def _floating(a: Arg) -> bool:
    return bool(np.issubdtype(np.dtype(a.dtype), np.floating))


@dataclass
class _Finding:
    """One argument that broke its role: what the message says of it."""

    index: int
    arg: Arg
    elements: int
    count: int  # elements changed (in), unwritten (out); 0 for an unchanged inout
    first: int = -1  # first unwritten element (out)

    def text(self, entry: str) -> str:
        a = self.arg
        what = f"argument {self.index + 1} {a.name!r} ({a.role}:{_SHORT.get(a.dtype, a.dtype)}[{a.count}])"
        if a.role == "in":
            return (
                f"{what} was written by {entry}: {self.count} of {self.elements} elements changed; "
                f"an 'in' buffer must be read only"
            )
        if a.role == "out":
            floating = _floating(a)
            poison = ("NaN " if floating else "") + f"0x{_pattern(_POISON[floating][0], np.dtype(a.dtype).itemsize):x}"
            return (
                f"{what} was not written by {entry}: {self.count} of {self.elements} elements were left unwritten "
                f"(still the poison {poison} put there before the launch; the first at index {self.first}); "
                f"every 'out' element must be written"
            )
        return (
            f"{what} was not changed by {entry}: none of its {self.elements} elements differ after the launch; "
            f"an 'inout' buffer is read and written (one only read is 'in')"
        )


def c_signature(spec: KernelSpec) -> str:
    """``stencil2d(float* out, const float* in, int nx, int ny)`` as the source defines the entry
    (whitespace collapsed); "" when no source shows it (a code object, a macro-made entry)."""
    base = spec.entry.split("<", 1)[0].strip()
    for text in (spec.host_source, spec.gpu_source):
        if not text or not base:
            continue
        m = re.search(rf"(?<![A-Za-z0-9_]){re.escape(base)}\s*\(([^(){{}};]*)\)\s*\{{", text)
        if m:
            return f"{base}(" + " ".join(m.group(1).split()) + ")"
    return ""


def _launch(device: Device, kernel: Any, grid: tuple[int, int, int], block: tuple[int, int, int], args: Any) -> None:
    device.synchronize()
    device.launch(kernel, grid, block, args)
    device.synchronize()


def _read(device: Device, buf: Any, like: np.ndarray) -> np.ndarray:
    got = np.empty_like(like)
    device.copy_to_host(buf, got)
    return got


def _restore(device: Device, buffers: dict[str, Any], pristine: dict[str, np.ndarray], names: list[str]) -> None:
    for name in names:
        device.copy_to_device(buffers[name], pristine[name])
    device.synchronize()


def _unwritten(
    device: Device,
    spec: KernelSpec,
    sets: Any,
    kernel: Any,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    suspects: dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """Of the ``out`` elements that held the first poison, those that hold the second one too after
    a second launch (on restored inputs): the ones the kernel never wrote."""
    bufs, pristine = sets.buffers[0], sets.pristine
    byname = {a.name: a for a in spec.buffers()}
    _restore(device, bufs, pristine, [a.name for a in spec.buffers() if a.role != "out"])
    for a in spec.buffers():
        if a.role == "out":
            device.memset(bufs[a.name], _POISON[_floating(a)][1])
    _launch(device, kernel, grid, block, sets.args[0])
    out = {}
    for name, mask in suspects.items():
        a = byname[name]
        second = _pattern(_POISON[_floating(a)][1], np.dtype(a.dtype).itemsize)
        out[name] = mask & (_bits(_read(device, bufs[name], pristine[name])) == second)
    return out


def check_roles(
    device: Device,
    spec: KernelSpec,
    sets: Any,
    kernel: Any,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    *,
    where: str = "",
    defer_unwritten: bool = False,
) -> str:
    """The role check of ``spec`` on set 0 of ``sets`` (``BufferSets``), module docstring;
    ``ConfigError`` naming every argument that broke its role. ``where``: the size, for the message.

    ``defer_unwritten`` (a kernel with a reference): when the only findings are unwritten ``out``
    elements, their message is returned instead of raised, for the caller to raise after the
    reference check, which names the worst element, expected value and configuration (an output
    the reference does not return is compared by nobody else). "" when every role holds."""
    bufs, pristine = sets.buffers[0], sets.pristine
    buffers = [(i, a) for i, a in enumerate(spec.args) if a.kind == "buffer"]
    for _, a in buffers:
        if a.role == "out":
            device.memset(bufs[a.name], _POISON[_floating(a)][0])
    _launch(device, kernel, grid, block, sets.args[0])
    findings: list[_Finding] = []
    suspects: dict[str, np.ndarray] = {}
    for i, a in buffers:
        got = _bits(_read(device, bufs[a.name], pristine[a.name]))
        if a.role == "out":
            mask = got == _pattern(_POISON[_floating(a)][0], got.dtype.itemsize)
            if mask.any():
                suspects[a.name] = mask
            continue
        changed = int(np.count_nonzero(got != _bits(pristine[a.name])))
        if (a.role == "in" and changed) or (a.role == "inout" and not changed):
            findings.append(_Finding(i, a, got.size, changed))
    if suspects:
        left = _unwritten(device, spec, sets, kernel, grid, block, suspects)
        for i, a in buffers:
            if a.name in left and left[a.name].any():
                mask = left[a.name]
                findings.append(_Finding(i, a, mask.size, int(np.count_nonzero(mask)), int(np.argmax(mask))))
    _restore(device, bufs, pristine, [a.name for _, a in buffers])
    if not findings:
        return ""
    text = _message(spec, sorted(findings, key=lambda f: f.index), where)
    if defer_unwritten and all(f.arg.role == "out" for f in findings):
        return text
    raise ConfigError(text)


def _message(spec: KernelSpec, findings: list[_Finding], where: str) -> str:
    """One line: each broken role, then what to check and how to opt out."""
    entry = spec.entry.split("<", 1)[0].strip() or spec.name
    roles = {f.arg.role for f in findings}
    hints = []
    sig = c_signature(spec)
    if "in" in roles and ("out" in roles or "inout" in roles):
        hints.append(
            "swapped roles? "
            + (f"The C signature is {sig}" if sig else "--args lists the arguments in the kernel's order")
        )
    elif sig:
        hints.append(f"the C signature is {sig}")
    if "out" in roles and "in" not in roles:
        hints.append(
            "a kernel that leaves part of a buffer untouched on purpose declares it 'inout' (filled before "
            "each launch), or check its count"
        )
    at = f" {where}" if where else ""
    said = "; ".join(hints)
    return (
        f"{'; '.join(f.text(entry) for f in findings)}. {said[:1].upper() + said[1:] + '. ' if hints else ''}"
        f"Seen in one checked launch before timing{at}; --no-verify skips this check"
    )


__all__ = ["applies", "c_signature", "check_roles"]
