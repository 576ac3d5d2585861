"""A unit's outcome as checked JSON data: a ``bench.outcome.ConfigurationResult`` and its parts, a
``Rebiased``, and a counting unit's manifest entry (``bench.counters.phase``), each way.

Why data and never objects: these cross from a process that runs the user's kernel (a sweep worker,
a cluster unit) to the one that trusts it. A result travels as its configuration and each of its
parts (identity, plan, floor, bias, the named summaries, a ``CounterSummary`` among them) as an
object of exactly that part's fields, each of its declared type (text, integer, number or null for
NaN, boolean: ``dataclasses.fields`` of the part, so a new field travels typed without a line
here); its samples travel as a table (``bench.wire_tables``) and its ``Measurement`` is made again
from them by the reader. A counted entry has its own declared keys (``COUNTED_INTS``,
``COUNTED_TEXTS``, its launches as [set, position] pairs, its counters by name).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Mapping

from ..errors import ConfigError
from ..schema import Configuration, Timer
from ..untrusted import shown
from .outcome import SUMMARIES, Bias, ConfigurationResult, Floor, Identity, Part, Rebiased, Rotation, Samples
from .wire_values import (
    MAX_KEY,
    WireError,
    bool_of,
    clean,
    finite,
    int_of,
    list_of,
    number_of,
    object_of,
    text_of,
)

RESULT_KEYS = ("configuration", "unit", "identity", "plan", "floor", "bias", "summaries", "warning")


# -- a result's parts -----------------------------------------------------------------------------
def part_out(part: Part) -> dict[str, Any]:
    """A part's fields by their declared types (text cleaned, NaN as null)."""
    out: dict[str, Any] = {}
    for f in fields(part):  # type: ignore[arg-type]
        v = getattr(part, f.name)
        out[f.name] = (
            clean(v)
            if f.type == "str"
            else int(v)
            if f.type == "int"
            else bool(v)
            if f.type == "bool"
            else finite(float(v))
        )
    return out


def part_in(cls: type[Part], value: Any, what: str) -> Any:
    """A part from a frame: exactly its fields, each of its declared type."""
    e = object_of(value, what, cls.names())
    got: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        v, name = e[f.name], f"{what} {f.name}"
        got[f.name] = (
            text_of(v, name)
            if f.type == "str"
            else int_of(v, name)
            if f.type == "int"
            else bool_of(v, name)
            if f.type == "bool"
            else number_of(v, name)
        )
    return cls(**got)


def configuration_out(c: Configuration) -> dict[str, Any]:
    return {
        "kernel": clean(c.kernel, MAX_KEY),
        "size": int(c.size),
        **{k: clean(getattr(c, k), MAX_KEY) for k in ("rotating", "flush", "timer")},
    }


def configuration_in(value: Any, what: str) -> Configuration:
    e = object_of(value, what, ("kernel", "size", "rotating", "flush", "timer"))
    texts = {k: text_of(e[k], f"{what} {k}", MAX_KEY) for k in ("kernel", "rotating", "flush", "timer")}
    try:
        timer = Timer.of(texts["timer"])
    except ConfigError as exc:
        raise WireError(str(exc)) from None
    return Configuration(
        texts["kernel"], int_of(e["size"], f"{what} size", 0), texts["rotating"], texts["flush"], timer
    )


# -- a result, and one filled in again ------------------------------------------------------------
def result_out(r: ConfigurationResult) -> dict[str, Any]:
    """A result's header object (its samples travel as the frame's table)."""
    return {
        "configuration": configuration_out(r.configuration),
        "unit": int(r.unit),
        "identity": part_out(r.identity),
        "plan": part_out(r.plan),
        "floor": part_out(r.floor),
        "bias": part_out(r.bias),
        "summaries": {s.NAME: part_out(s) for s in r.summaries},
        "warning": clean(r.warning),
    }


def result_in(value: Any, samples: Samples) -> ConfigurationResult:
    """A result from its header object and its decoded ``samples``; its ``Measurement`` made from them."""
    what = "an add frame's result"
    e = object_of(value, what, RESULT_KEYS)
    c = configuration_in(e["configuration"], f"{what} configuration")
    named = e["summaries"]
    if not isinstance(named, dict) or any(k not in SUMMARIES for k in named):
        raise WireError(f"{what} has summaries {shown(named, 200)}; expected some of {sorted(SUMMARIES)}")
    summaries = tuple(part_in(SUMMARIES[k], v, f"{what} summary {k}") for k, v in named.items())
    m = samples.measurement(" ".join(map(str, c))) if samples.n else None
    return ConfigurationResult(
        c,
        int_of(e["unit"], f"{what} unit", 0),
        part_in(Identity, e["identity"], f"{what} identity"),
        part_in(Rotation, e["plan"], f"{what} plan"),
        samples,
        m,
        part_in(Floor, e["floor"], f"{what} floor"),
        part_in(Bias, e["bias"], f"{what} bias"),
        summaries,
        text_of(e["warning"], f"{what} warning"),
    )


def rebiased_out(r: Rebiased) -> dict[str, Any]:
    return {"configuration": configuration_out(r.configuration), "bias": part_out(r.bias), "warning": clean(r.warning)}


def rebiased_in(value: Any, what: str = "an update frame's result") -> Rebiased:
    e = object_of(value, what, ("configuration", "bias", "warning"))
    return Rebiased(
        configuration_in(e["configuration"], f"{what} configuration"),
        part_in(Bias, e["bias"], f"{what} bias"),
        text_of(e["warning"], f"{what} warning"),
    )


# -- a counting unit's entry ----------------------------------------------------------------------
COUNTED_INTS = ("size_bytes", "n", "rotating", "warmup", "count", "timed", "input_bytes", "footprint_bytes")
COUNTED_TEXTS = ("kernel", "entry", "rotating_requested", "flush", "marker", "marker_status", "plan_note")


def counted_out(entry: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: int(entry[k]) for k in COUNTED_INTS}
    out.update({k: clean(entry[k], MAX_KEY) for k in COUNTED_TEXTS})
    out["launches"] = [[int(s), int(p)] for s, p in entry["launches"]]
    if entry.get("values") is not None:
        out["values"] = [{clean(k, MAX_KEY): finite(float(v)) for k, v in d.items()} for d in entry["values"]]
    return out


def counted_in(value: Any) -> dict[str, Any]:
    e = object_of(value, "a counted entry", (*COUNTED_INTS, *COUNTED_TEXTS, "launches"), ("values",))
    out: dict[str, Any] = {k: int_of(e[k], f"counted {k}", 0) for k in COUNTED_INTS}
    out.update({k: text_of(e[k], f"counted {k}", MAX_KEY) for k in COUNTED_TEXTS})
    pairs = list_of(e["launches"], "counted launches", 1 << 20)
    out["launches"] = [
        (int_of(p[0], "a launch's set", -1), int_of(p[1], "a launch's position", -1))
        if isinstance(p, list) and len(p) == 2
        else int_of(None, "a launch (a [set, position] pair)")
        for p in pairs
    ]
    if "values" in e:
        out["values"] = [
            {
                text_of(k, "a counter's name", MAX_KEY, empty=False): number_of(v, f"counter {shown(k)}")
                for k, v in (d.items() if isinstance(d, dict) else object_of(d, "counted values", ()).items())
            }
            for d in list_of(e["values"], "counted values", 1 << 20)
        ]
    return out


__all__ = [
    "COUNTED_INTS",
    "COUNTED_TEXTS",
    "RESULT_KEYS",
    "configuration_in",
    "configuration_out",
    "counted_in",
    "counted_out",
    "part_in",
    "part_out",
    "rebiased_in",
    "rebiased_out",
    "result_in",
    "result_out",
]
