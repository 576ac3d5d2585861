"""What a Triton request names on the command line: its target, signature and constexpr values,
each checked (one line naming the value and what was expected)."""

from __future__ import annotations

import re
from typing import Mapping

from ..errors import ConfigError


#: a Python identifier: an argument or constexpr name (triton_source reads compile-option names with it too)
NAME_RX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: arg types Triton's signature accepts (pointers are ``*`` + a scalar type)
SCALAR_TYPES = (
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "u1",
    "u8",
    "u16",
    "u32",
    "u64",
    "fp8e4nv",
    "fp8e5",
    "fp8e4b8",
    "fp8e5b16",
    "fp16",
    "bf16",
    "fp32",
    "fp64",
)
_TARGET_RX = re.compile(r"^(gfx[0-9a-f]{3,4}[a-z]?|sm_[0-9]{2,3}[af]?)$")


def check_target(target: str) -> str:
    if not isinstance(target, str) or not _TARGET_RX.match(target):
        raise ConfigError(f"triton target must look like 'gfx942', 'gfx950', 'gfx90a' or 'sm_90'; got {target!r}")
    return target


def parse_signature(text: str | Mapping[str, str]) -> dict[str, str]:
    """``'x_ptr:*fp32,n:i32'`` (or a mapping) -> {"x_ptr": "*fp32", "n": "i32"}, checked."""
    items = (
        list(text.items())
        if isinstance(text, Mapping)
        else [tuple(p.split(":", 1)) if ":" in p else (p, "") for p in str(text).split(",") if p.strip()]
    )
    out: dict[str, str] = {}
    for name, ty in items:
        name, ty = name.strip(), ty.strip()
        if not NAME_RX.match(name) or ty.lstrip("*") not in SCALAR_TYPES:
            raise ConfigError(
                f"signature entry {name}:{ty!r} is not NAME:TYPE with TYPE one of {', '.join(SCALAR_TYPES)} "
                f"or a pointer '*TYPE' (e.g. 'x_ptr:*fp32,n:i32')"
            )
        out[name] = ty
    if not out:
        raise ConfigError(f"signature {text!r} is empty; expected e.g. 'x_ptr:*fp32,n:i32'")
    return out


def parse_value(text: str) -> int | float | bool | str:
    """A constexpr/option value from the command line: int, float, bool, else the string."""
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_assignments(items: Mapping[str, object] | list[str] | tuple[str, ...] | None, what: str) -> dict[str, object]:
    """``["BLOCK=256", ...]`` (or a mapping) -> {"BLOCK": 256}; a bad item names itself."""
    if items is None:
        return {}
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        pairs = []
        for item in items:
            if "=" not in str(item):
                raise ConfigError(f"{what} {item!r} is not NAME=VALUE (e.g. BLOCK=256)")
            k, v = str(item).split("=", 1)
            pairs.append((k.strip(), parse_value(v.strip())))
    for k, v in pairs:
        if not NAME_RX.match(str(k)) or not isinstance(v, (int, float, bool, str)):
            raise ConfigError(f"{what} {k}={v!r}: expected an identifier and an int, float, bool or string value")
    return dict(pairs)


__all__ = ["SCALAR_TYPES", "check_target", "parse_signature", "parse_value", "parse_assignments"]
