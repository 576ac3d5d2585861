"""Tuning lists: GEMM problems x candidate configurations, expanded into the compile requests a
split-K tuner issues.

Each candidate is its GEMM kernel plus a zero fill, the pointwise tail and (for split-K > 1) a
reduction, in launch order. Only the GEMM depends on the tile configuration, so the tails repeat
across candidates exactly as they do in a MIGraphX split-K tuning list; that repetition is what a
compile cache can save, and ``unique_kernels`` is the floor no cache can beat.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..compile.request import COMPILERS, CompileRequest
from ..errors import ConfigError
from ..untrusted import check_name, shown
from .gemm import ACTIVATIONS, GemmConfig, GemmShape, kernel_request, roles_for


@dataclass(frozen=True)
class GemmProblem:
    """One GEMM of a model (``act(A @ B + bias)``), named after the layer it comes from."""

    name: str
    shape: GemmShape
    activation: str = "none"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise ConfigError(f"problem name must be a non-empty string without '/'; got {shown(self.name)}")
        check_name(self.name, "problem name")  # it labels every entry and event, and is printed
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {', '.join(ACTIVATIONS)}; got {self.activation!r}")


def transformer_problems(tokens: int = 512, d_model: int = 512, ffn_mult: int = 4) -> tuple[GemmProblem, ...]:
    """The four GEMMs of one small transformer layer (batch x sequence = ``tokens`` rows).

    attn_out and mlp_down share their output shape and activation, so their pointwise tails (and
    fills) are identical across problems too, as in a real model.
    """
    for name, v in (("tokens", tokens), ("d_model", d_model), ("ffn_mult", ffn_mult)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{name} must be a positive integer; got {v!r}")
    d, f = d_model, d_model * ffn_mult
    return (
        GemmProblem("qkv", GemmShape(tokens, 3 * d, d)),
        GemmProblem("attn_out", GemmShape(tokens, d, d)),
        GemmProblem("mlp_up", GemmShape(tokens, f, d), "gelu"),
        GemmProblem("mlp_down", GemmShape(tokens, d, f)),
    )


#: Tile shapes tried by the default list: (bm, bn, bk, tm, tn, unroll).
DEFAULT_TILES: tuple[tuple[int, int, int, int, int, int], ...] = (
    (64, 64, 16, 4, 4, 4),
    (128, 64, 8, 8, 4, 8),
    (32, 32, 32, 2, 2, 8),
    (64, 32, 16, 4, 2, 16),
)
#: Split-K factors tried by the default list.
DEFAULT_SPLITS: tuple[int, ...] = (1, 2, 4)


def default_candidates(
    tiles: Sequence[tuple[int, int, int, int, int, int]] = DEFAULT_TILES,
    splits: Sequence[int] = DEFAULT_SPLITS,
) -> tuple[GemmConfig, ...]:
    """Tiles x split-K, tiles outer (the order a tuner walks them in)."""
    if not tiles or not splits:
        raise ConfigError(f"need at least one tile and one split; got {len(tiles)} tiles, {len(splits)} splits")
    return tuple(
        GemmConfig(bm=bm, bn=bn, bk=bk, tm=tm, tn=tn, split=s, unroll=u)
        for (bm, bn, bk, tm, tn, u), s in itertools.product(tiles, splits)
    )


@dataclass(frozen=True)
class ListEntry:
    """One compile a tuner issues: which problem and candidate it serves, and in which role."""

    index: int
    problem: str
    candidate: str
    role: str
    request: CompileRequest

    @property
    def label(self) -> str:
        return self.request.label


@dataclass(frozen=True)
class TuningList:
    """An expanded tuning list for one compiler and target."""

    compiler: str
    target: str
    problems: tuple[GemmProblem, ...]
    candidates: tuple[GemmConfig, ...]
    entries: tuple[ListEntry, ...] = field(repr=False)
    #: a list read from a file (listfile.py): its name and path; empty for the built-in lists
    name: str = ""
    source: str = ""

    @property
    def kernels(self) -> int:
        """Compiles a tuner without a cache issues."""
        return len(self.entries)

    @property
    def unique_requests(self) -> tuple[CompileRequest, ...]:
        """One request per distinct kernel, in first-use order (labels do not count)."""
        seen: dict[CompileRequest, CompileRequest] = {}
        for e in self.entries:
            seen.setdefault(e.request, e.request)
        return tuple(seen.values())

    @property
    def unique_kernels(self) -> int:
        return len(self.unique_requests)

    @property
    def n_candidates(self) -> int:
        """(problem, candidate) pairs the list tunes."""
        return len({(e.problem, e.candidate) for e in self.entries})

    def counts_by_role(self) -> dict[str, dict[str, int]]:
        """role -> {"kernels": n, "unique": n}: where the repetition is."""
        out: dict[str, dict[str, int]] = {}
        present = {e.role for e in self.entries}
        for role in ("gemm", "fill", "reduce", "pointwise"):
            if role == "reduce" and role not in present and self.name:  # the list families have no reduce kernel
                continue
            reqs = [e.request for e in self.entries if e.role == role]
            out[role] = {"kernels": len(reqs), "unique": len(set(reqs))}
        return out


def build_list(
    compiler: str,
    target: str,
    problems: Iterable[GemmProblem] | None = None,
    candidates: Iterable[GemmConfig] | None = None,
    limit: int | None = None,
) -> TuningList:
    """Expand problems x candidates into list entries (launch order within each candidate).

    limit: keep only the first ``limit`` candidates of each problem (to scale a run down).
    Each entry's request gets a unique label ``problem/candidate/role`` (labels never enter the
    key), so every cache event names the list entry that made it.
    """
    if compiler not in COMPILERS:
        raise ConfigError(f"compiler must be one of {', '.join(COMPILERS)}; got {compiler!r}")
    probs = tuple(problems) if problems is not None else transformer_problems()
    cands = tuple(candidates) if candidates is not None else default_candidates()
    if not probs:
        raise ConfigError("a tuning list needs at least one problem; got none")
    if not cands:
        raise ConfigError("a tuning list needs at least one candidate; got none")
    for p in probs:
        if not isinstance(p, GemmProblem):
            raise ConfigError(f"problems must be GemmProblem objects; got {p!r}")
    names = [p.name for p in probs]
    if len(set(names)) != len(names):
        raise ConfigError(f"problem names must be unique; got {names}")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"limit must be a positive integer (candidates per problem); got {limit!r}")
        if limit > len(cands):  # a limit above the candidates would silently mean all of them
            raise ConfigError(
                f"limit {limit} is above the {len(cands)} candidates per problem; "
                f"expected 1..{len(cands)} (or no limit for all)"
            )
        cands = cands[:limit]
    entries: list[ListEntry] = []
    for prob in probs:
        for cand in cands:
            for role in roles_for(cand):
                label = f"{prob.name}/{cand.name}/{role}"
                req = kernel_request(role, compiler, target, prob.shape, cand, prob.activation, label=label)
                entries.append(ListEntry(len(entries), prob.name, cand.name, role, req))
    return TuningList(compiler, target, probs, cands, tuple(entries))


def select_problems(spec: str | None, tokens: int = 512, d_model: int = 512) -> tuple[GemmProblem, ...]:
    """Problems from a CLI value: None (all four), a count ``N`` (the first N), or names
    ``qkv,mlp_up``."""
    allp = transformer_problems(tokens=tokens, d_model=d_model)
    if spec is None or spec == "":
        return allp
    spec = spec.strip()
    if spec.isdigit():
        n = int(spec)
        if not 1 <= n <= len(allp):
            raise ConfigError(f"--problems count must be 1..{len(allp)}; got {n}")
        return allp[:n]
    by_name = {p.name: p for p in allp}
    chosen = []
    for name in (s.strip() for s in spec.split(",")):
        if name not in by_name:
            raise ConfigError(f"unknown problem {name!r}; expected a count or names from {', '.join(by_name)}")
        chosen.append(by_name[name])
    return tuple(dict.fromkeys(chosen))
