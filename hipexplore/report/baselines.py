"""What the compile cache saved beyond the compiler's own cache, in the report's sentences (issue 45).

Why apart from ``headline``: the sentences need the replay's passes in rounds (``tuning.savings``),
and the headline's other sentences do not; ``headline.cache_sentences`` appends these.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..readable import format_number

#: how the report names each compiler's own cache
OWN = {
    "nvrtc": "NVRTC's own cache",
    "hiprtc": "COMGR's own cache",
    "triton": "Triton's own cache",
    "host": "the host compiler's own cache",
}


def _interval(c: Mapping[str, Any]) -> str:
    ci = c.get("seconds_ci")
    text = f"{format_number(c['seconds'])} s"
    text += f" [{format_number(ci[0])}, {format_number(ci[1])}]" if ci else " (one pass a side: no interval)"
    ratio = c.get("ratio_ci")
    text += f", time ×{c['ratio']:.3f}" + (f" [{ratio[0]:.3f}, {ratio[1]:.3f}]" if ratio else "")
    return text + f" over {c['passes'][0]}+{c['passes'][1]} passes"


def own_cache_sentences(replay: Any) -> list[str]:
    """The compiler's own cache in the replay, and what the cache's pass saved against every cache off
    (``cold``) and beyond the compiler's own cache (``compiler-cache``), each with its 95% interval
    ("beyond NVRTC's own cache: X s [lo, hi]"), and memory / ideal with its interval."""
    found: Mapping[str, Any] = getattr(replay, "savings", None) or {}
    compiler = str(getattr(replay, "compiler", "") or "")
    own = OWN.get(compiler, "the compiler's own cache")
    label = str(getattr(replay, "own_cache", "") or "")
    out = [f"The compiler's own cache in this replay: {label}."] if label else []
    beyond, cold, ideal = (found.get(k) for k in ("saved_beyond_compiler_cache", "saved_vs_cold", "memory_vs_ideal"))
    if beyond:
        out.append(
            f"Beyond {own}: {_interval(beyond)} ('{beyond['scenario']}' against '{beyond['base']}': the compiler's "
            f"own cache on and warm, hipexplore's off)."
        )
    else:
        out.append(f"Beyond {own}: not measured (a replay in rounds measures it: `hipexplore tune-replay --passes 3`).")
    warm = found.get("warm_beyond_compiler_cache")
    if warm:
        out.append(
            f"Beyond {own}, both warm: {_interval(warm)} ('{warm['scenario']}' against '{warm['base']}': "
            f"hipexplore's disk tier filled by an earlier pass, as the compiler's cache was)."
        )
    if cold:
        out.append(f"Against every compiler cache off ('cold'): {_interval(cold)}.")
    if ideal and ideal.get("ratio_ci"):
        lo, hi = ideal["ratio_ci"]
        out.append(
            f"Memory pass / ideal: {ideal['ratio']:.3f} [{lo:.3f}, {hi:.3f}] over {ideal['passes'][0]}+"
            f"{ideal['passes'][1]} passes."
        )
    return out


__all__ = ["OWN", "own_cache_sentences"]
