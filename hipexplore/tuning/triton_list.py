"""The Triton split-K tuning list: the same transformer-layer GEMMs as ``lists.py``, candidates
that are Triton autotune configs (BLOCK_M/N/K, SPLIT_K, num_warps, num_stages), and the tails
(zero fill, split-K reduction, bias + activation) written in Triton too (tuning/src/triton_splitk.py).

Why its own list: a Triton tuner's candidate differs from a HIP one in what it varies (warps and
software-pipelining stages instead of register tiles), but the repetition is the same: only the
GEMM depends on the configuration, so the tails' requests (and keys) repeat across candidates and
``unique_kernels`` is the floor no cache can beat. The result is a ``TuningList`` the replay runs
unchanged (``compiler="triton"``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable, Sequence

from ..compile.request import CompileRequest
from ..compile.triton_source import triton_request
from ..errors import ConfigError
from .gemm import ACTIVATIONS
from .hxgen import MAX_SPLIT
from .lists import GemmProblem, ListEntry, TuningList, transformer_problems

#: role -> the @triton.jit function in triton_splitk.py
KERNELS = {"fill": "zero_fill", "gemm": "matmul_splitk", "reduce": "splitk_reduce", "pointwise": "bias_act"}
TAIL_BLOCK = 1024
TAIL_WARPS = 4
#: the largest value of each TritonConfig field: a block of 1024 (Triton's tensors hold at most 2**20
#: elements: 1024 x 1024), hxgen's split-K bound, a block of 32 warps (1024 threads), 16 stages
_MOST = {"block_m": 1024, "block_n": 1024, "block_k": 1024, "split_k": MAX_SPLIT, "num_warps": 32, "num_stages": 16}


@dataclass(frozen=True)
class TritonConfig:
    """One Triton autotune candidate."""

    block_m: int = 64
    block_n: int = 64
    block_k: int = 32
    split_k: int = 1
    num_warps: int = 4
    num_stages: int = 2

    def __post_init__(self) -> None:
        for attr in ("block_m", "block_n", "block_k", "split_k", "num_warps", "num_stages"):
            v = getattr(self, attr)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= _MOST[attr]:
                raise ConfigError(f"TritonConfig.{attr} must be an integer in 1..{_MOST[attr]}; got {v!r}")
        for attr in ("block_m", "block_n", "block_k", "num_warps"):
            v = getattr(self, attr)
            if v & (v - 1):
                raise ConfigError(f"TritonConfig.{attr} must be a power of two (Triton block shapes are); got {v}")
        if min(self.block_m, self.block_n, self.block_k) < 16:
            raise ConfigError(f"tl.dot needs blocks of at least 16; got {self.block_m}x{self.block_n}x{self.block_k}")

    @property
    def split(self) -> int:  # the name lists.py's callers use
        return self.split_k

    @property
    def name(self) -> str:
        return f"b{self.block_m}x{self.block_n}x{self.block_k}_s{self.split_k}_w{self.num_warps}_st{self.num_stages}"


#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) tried by the default list
DEFAULT_TILES: tuple[tuple[int, int, int, int, int], ...] = (
    (64, 64, 32, 4, 2),
    (128, 64, 32, 4, 2),
    (64, 128, 32, 8, 2),
    (32, 32, 64, 2, 3),
)
DEFAULT_SPLITS: tuple[int, ...] = (1, 2, 4)


def default_candidates(
    tiles: Sequence[tuple[int, int, int, int, int]] = DEFAULT_TILES, splits: Sequence[int] = DEFAULT_SPLITS
) -> tuple[TritonConfig, ...]:
    if not tiles or not splits:
        raise ConfigError(f"need at least one tile and one split; got {len(tiles)} tiles, {len(splits)} splits")
    return tuple(TritonConfig(bm, bn, bk, s, w, st) for (bm, bn, bk, w, st), s in itertools.product(tiles, splits))


def roles_for(config: TritonConfig) -> tuple[str, ...]:
    return ("fill", "gemm", "reduce", "pointwise") if config.split_k > 1 else ("fill", "gemm", "pointwise")


@lru_cache(maxsize=1)
def kernel_file() -> Path:
    """The Triton kernel file shipped with hipexplore (package data)."""
    return Path(str(resources.files("hipexplore.tuning").joinpath("src", "triton_splitk.py")))


def role_request(
    role: str, target: str, problem: GemmProblem, config: TritonConfig, label: str = "", path: str | Path | None = None
) -> CompileRequest:
    """The compile request of one role of one candidate."""
    m, n, k = problem.shape.m, problem.shape.n, problem.shape.k
    if role == "gemm":
        sig = "a_ptr:*fp32,b_ptr:*fp32,ws_ptr:*fp32"
        consts = {
            "M": m,
            "N": n,
            "K": k,
            "BLOCK_M": config.block_m,
            "BLOCK_N": config.block_n,
            "BLOCK_K": config.block_k,
            "SPLIT_K": config.split_k,
        }
        opts = {"num_warps": config.num_warps, "num_stages": config.num_stages}
    elif role == "fill":
        sig, consts = "ws_ptr:*fp32", {"N": config.split_k * m * n, "BLOCK": TAIL_BLOCK}
        opts = {"num_warps": TAIL_WARPS}
    elif role == "reduce":
        if config.split_k < 2:
            raise ConfigError(f"the reduce kernel exists only for SPLIT_K > 1; got {config.split_k}")
        sig, consts = "ws_ptr:*fp32,c_ptr:*fp32", {"MN": m * n, "SPLIT_K": config.split_k, "BLOCK": TAIL_BLOCK}
        opts = {"num_warps": TAIL_WARPS}
    elif role == "pointwise":
        sig = "c_ptr:*fp32,bias_ptr:*fp32,out_ptr:*fp32"
        consts = {"M": m, "N": n, "ACT": ACTIVATIONS[problem.activation], "BLOCK": TAIL_BLOCK}
        opts = {"num_warps": TAIL_WARPS}
    else:
        raise ConfigError(f"role must be one of {', '.join(KERNELS)}; got {role!r}")
    return triton_request(path or kernel_file(), KERNELS[role], sig, target, consts, opts, label=label)


def build_triton_list(
    target: str,
    problems: Iterable[GemmProblem] | None = None,
    candidates: Iterable[TritonConfig] | None = None,
    limit: int | None = None,
) -> TuningList:
    """Problems x Triton candidates -> list entries (launch order within each candidate)."""
    probs = tuple(problems) if problems is not None else transformer_problems()
    cands = tuple(candidates) if candidates is not None else default_candidates()
    if not probs or not cands:
        raise ConfigError(f"a tuning list needs problems and candidates; got {len(probs)} and {len(cands)}")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"limit must be a positive integer (candidates per problem); got {limit!r}")
        cands = cands[:limit]
    memo: dict[tuple, CompileRequest] = {}
    entries: list[ListEntry] = []
    for prob in probs:
        for cand in cands:
            for role in roles_for(cand):
                label = f"{prob.name}/{cand.name}/{role}"
                base = memo.get((role, prob, cand))
                if base is None:  # one ast walk per distinct request, not per entry
                    base = memo[(role, prob, cand)] = role_request(role, target, prob, cand)
                entries.append(ListEntry(len(entries), prob.name, cand.name, role, base.with_(label=label)))
    return TuningList("triton", target, probs, cands, tuple(entries))  # type: ignore[arg-type]


def warm_up_requests(target: str, tag: str) -> list[CompileRequest]:
    """One tiny kernel of every role, with a module-level salt ``tag`` so none is in any list."""
    from dataclasses import replace

    from .gemm import GemmShape

    prob, cfg = GemmProblem("warm", GemmShape(16, 16, 16), "gelu"), TritonConfig(16, 16, 16, 2, 1, 1)
    out = []
    for role in ("fill", "gemm", "reduce", "pointwise"):
        req = role_request(role, target, prob, cfg, label=f"warm-up {tag} {role}")
        out.append(req.with_(source=replace(req.source, text=req.source.text + f"\nhx_warmup_{tag} = 0\n")))
    return out
