"""Devices behind one typed interface (``Device`` in ``base.py``): ``host`` (C kernels via ctypes),
``cuda`` (cuda-python driver API) and ``hip`` (hip-python).

``get_device("auto")`` picks an AMD GPU, else an NVIDIA GPU, else the host. Asking for a device
that is absent raises ``DeviceUnavailable`` saying what was looked for.

``base``'s names (``Device``, ``DeviceBuffer``, ...) resolve lazily (``hipexplore._lazy``): parsing a
device name (the CLI) must not load numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._lazy import lazy
from ..errors import ConfigError, DeviceUnavailable

if TYPE_CHECKING:
    from .base import Device

KINDS = ("auto", "host", "cuda", "hip")


def parse_device(spec: str) -> tuple[str, int]:
    """'cuda' -> ('cuda', 0); 'cuda:1' -> ('cuda', 1)."""
    kind, _, idx = str(spec).partition(":")
    if kind not in KINDS:
        raise ConfigError(f"device {spec!r} is unknown; expected one of {', '.join(KINDS)} (optionally ':INDEX')")
    try:
        index = int(idx) if idx else 0
    except ValueError:
        raise ConfigError(f"device index in {spec!r} must be an integer") from None
    return kind, index


def get_device(
    kind: str | Device = "auto", index: int | None = None, *, llc_bytes: int | None = None, cache: Any = None
) -> Device:
    """A device by kind ('auto', 'host', 'cuda', 'hip', or 'cuda:1'); a Device passes through."""
    if not isinstance(kind, str):
        return kind
    k, idx = parse_device(kind)
    if index is not None:
        idx = index
    if k == "host":
        from .host import HostDevice

        return HostDevice(idx, llc_bytes=llc_bytes)
    if k in ("cuda", "hip"):
        try:
            if k == "cuda":
                from .cuda import CudaDevice

                return CudaDevice(idx, llc_bytes=llc_bytes, cache=cache)
            from .hip import HipDevice

            return HipDevice(idx, llc_bytes=llc_bytes, cache=cache)
        except DeviceUnavailable as exc:
            here = f"devices here: {', '.join(available())}"
            from ..extras import DeviceExtraMissing

            if isinstance(exc, DeviceExtraMissing):  # the install command stays the line's last words
                raise exc.also(here) from None
            raise DeviceUnavailable(f"{exc}; {here}") from None
    reasons = []
    for candidate in ("hip", "cuda"):
        try:
            return get_device(candidate, idx, llc_bytes=llc_bytes, cache=cache)
        except DeviceUnavailable as exc:
            reasons.append(str(exc))
        except Exception as exc:  # a binding that cannot even call the runtime (e.g. a missing symbol)
            reasons.append(f"{candidate.upper()}: {type(exc).__name__}: {exc}")
    from .host import HostDevice

    dev = HostDevice(0, llc_bytes=llc_bytes)
    dev.auto_reasons = reasons  # why no GPU was picked
    return dev


def available() -> list[str]:
    """The devices that answer here (``--device cuda (2 GPUs)``, ``--device host (this CPU)``),
    asking each GPU runtime for its count: what the refusal of an absent device offers instead."""
    out = []
    for kind in ("hip", "cuda"):
        try:
            if kind == "cuda":
                from .cuda import device_count
            else:
                from .hip import device_count
            n = device_count()
        except Exception:  # noqa: BLE001 - absent, or a binding that cannot call its runtime: not available
            continue
        if n:
            out.append(f"--device {kind} ({n} GPU{'s' if n != 1 else ''})")
    return [*out, "--device host (this CPU)"]


def device_label(device: Device) -> str:
    """'cuda:0', 'hip:0', 'host:0': the ``device`` column of the benchmark frames."""
    return f"{device.kind}:{device.index}"


_LAZY = {name: ".base" for name in ("Device", "DeviceBuffer", "DeviceProperties", "PackedArgs", "pack_args")}
__getattr__, __dir__ = lazy(__name__, _LAZY)
__all__ = ["KINDS", "available", "device_label", "get_device", "parse_device"]
__all__ += list(_LAZY)
