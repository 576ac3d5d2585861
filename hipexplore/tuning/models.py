"""The GEMMs of real models, and a perf-config candidate space, for the shipped tuning lists.

Why these: a compile cache's saving on a tuning flow depends on how often kernels repeat across
candidates, and that depends on the model's shapes. So the shipped lists (``data/tuning/lists``,
written by ``python -m hipexplore.tuning.generate``) hold the GEMMs a real tuner sees:

* **Llama-3-8B decoder layer** (hidden 4096, intermediate 14336, 32 query heads and 8 KV heads of
  128: fused QKV projection N = 4096 + 2 x 1024 = 6144): QKV (no fused tail: rotary embedding
  follows), O projection (+ residual), gate (SiLU), up (x SiLU(gate): SwiGLU), down (+ residual),
  at several token counts M (decode batches and prefill).
* **ResNet-50** (torchvision's v1.5: stride on the 3x3 convolutions, 224 x 224 input): every
  convolution as an implicit GEMM, M = batch x H_out x W_out, N = output channels,
  K = input channels x R x S, batch norm folded into a bias, with its fused tail (bias + ReLU;
  bias + residual + ReLU after each bottleneck's last 1x1; bias alone on the downsample
  projection), and the final fully connected layer (+ bias), at several batch sizes.

Problems with the same M, N, K and epilogue are tuned once (a tuner's problem cache is keyed by the
problem, as MIGraphX's is); the aliases are kept in the problem's ``meta``.

The candidate space is a list of tiles in the spirit of MIGraphX/rocMLIR perf configs: block tile,
register tile, vector width and unroll per tile, times split-K 1, 2, 4, 8, filtered per problem
the way tuners prune (small tiles for decode-sized M, split-K only while each slice keeps at
least four K tiles and the grid stays bounded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .hxgen import PerfConfig, Problem

#: (bm, bn, bk, tm, tn, vec, unroll): each tile's threads are (bm/tm)*(bn/tn)
TILES: tuple[tuple[int, int, int, int, int, int, int], ...] = (
    (16, 64, 32, 1, 4, 4, 32),
    (16, 128, 32, 1, 8, 4, 8),
    (32, 32, 32, 2, 2, 4, 32),
    (32, 64, 16, 2, 4, 4, 16),
    (64, 32, 16, 4, 2, 4, 16),
    (64, 64, 16, 4, 4, 4, 4),
    (64, 64, 32, 8, 4, 4, 8),
    (128, 64, 16, 8, 4, 4, 16),
    (64, 128, 16, 4, 8, 4, 16),
    (128, 128, 16, 8, 8, 4, 4),
)
SPLITS: tuple[int, ...] = (1, 2, 4, 8)
#: largest number of workgroups a split-K candidate may launch (tuners skip larger grids)
MAX_SPLIT_GRID = 4096
#: split-K is for long reductions: none below this K
MIN_SPLIT_K = 1024


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def candidates_for(problem: Problem, tiles=TILES, splits=SPLITS) -> list[PerfConfig]:
    """The perf configs tried for one problem, in the order a tuner walks them (tiles outer)."""
    m, n, k = problem.shape
    out = []
    for bm, bn, bk, tm, tn, vec, unroll in tiles:
        if m <= 16 and bm > 32:  # decode-sized M: a 64-row tile is mostly padding
            continue
        if m > 64 and bm < 32:  # the GEMV tiles only for small M
            continue
        if bn > max(n, 16) or bm > max(m, 16) or bk > max(k // 2, 16):  # a tile wider than the matrix
            continue
        for s in splits:
            if s > 1 and (k < MIN_SPLIT_K or k // s < 4 * bk or cdiv(m, bm) * cdiv(n, bn) * s > MAX_SPLIT_GRID):
                continue
            out.append(PerfConfig(bm, bn, bk, tm, tn, vec, s, unroll))
    return out


@dataclass
class ModelList:
    """One shipped list before it is written: header fields and (problem, configs, meta) rows."""

    name: str
    model: str
    description: str
    rows: list[tuple[Problem, list[PerfConfig], dict[str, Any]]] = field(default_factory=list)

    def add(self, problem: Problem, meta: dict[str, Any]) -> None:
        for p, _, m in self.rows:
            if (p.m, p.n, p.k, p.epilogue) == (problem.m, problem.n, problem.k, problem.epilogue):
                m.setdefault("aliases", []).append(problem.name)  # one problem, tuned once
                return
        self.rows.append((problem, candidates_for(problem), meta))


#: Llama-3-8B: hidden, intermediate, query heads, KV heads, head dim
LLAMA3_8B = {"hidden": 4096, "intermediate": 14336, "heads": 32, "kv_heads": 8, "head_dim": 128}
LLAMA_TOKENS = (1, 16, 64, 256, 1024, 4096, 8192)


def llama3_8b(tokens=LLAMA_TOKENS) -> ModelList:
    h, f = LLAMA3_8B["hidden"], LLAMA3_8B["intermediate"]
    qkv = h + 2 * LLAMA3_8B["kv_heads"] * LLAMA3_8B["head_dim"]
    ml = ModelList(
        "llama3-8b",
        "Llama-3-8B decoder layer (hidden 4096, intermediate 14336, 32 query / 8 KV heads of 128), fp32",
        "QKV, O, gate, up and down projections of one decoder layer at M = "
        + ", ".join(str(t) for t in tokens)
        + " tokens; fused tails: O and down + residual, gate SiLU, "
        "up x SiLU(gate) (SwiGLU); QKV none (rotary embedding follows)",
    )
    for t in tokens:
        for name, n, k, epi in (
            ("qkv", qkv, h, "none"),
            ("o_proj", h, h, "add"),
            ("gate_proj", f, h, "silu"),
            ("up_proj", f, h, "mul"),
            ("down_proj", h, f, "add"),
        ):
            ml.add(Problem(f"m{t}.{name}", t, n, k, epi), {"layer": name, "tokens": t})
    return ml


#: ResNet-50 bottleneck stages: (blocks, mid channels, out channels, input spatial size, stride)
RESNET50_STAGES = ((3, 64, 256, 56, 1), (4, 128, 512, 56, 2), (6, 256, 1024, 28, 2), (3, 512, 2048, 14, 2))
RESNET_BATCHES = (1, 16)


def resnet50_convs() -> list[dict[str, Any]]:
    """Every convolution of ResNet-50 (and the fc layer), in network order, with its implicit-GEMM
    sizes per image: rows = H_out x W_out, N = output channels, K = C x R x S."""
    layers: list[dict[str, Any]] = [
        {"name": "conv1", "c": 3, "n": 64, "r": 7, "stride": 2, "hw_in": 224, "hw_out": 112, "epilogue": "bias_relu"}
    ]
    c_in = 64
    for stage, (blocks, mid, out, hw, stride) in enumerate(RESNET50_STAGES, start=1):
        hw_out = hw // stride
        for b in range(blocks):
            s = stride if b == 0 else 1
            hw_b = hw if b == 0 else hw_out
            pre = f"layer{stage}.{b}"
            layers.append(
                {
                    "name": f"{pre}.conv1",
                    "c": c_in,
                    "n": mid,
                    "r": 1,
                    "stride": 1,
                    "hw_in": hw_b,
                    "hw_out": hw_b,
                    "epilogue": "bias_relu",
                }
            )
            layers.append(
                {
                    "name": f"{pre}.conv2",
                    "c": mid,
                    "n": mid,
                    "r": 3,
                    "stride": s,
                    "hw_in": hw_b,
                    "hw_out": hw_b // s,
                    "epilogue": "bias_relu",
                }
            )
            layers.append(
                {
                    "name": f"{pre}.conv3",
                    "c": mid,
                    "n": out,
                    "r": 1,
                    "stride": 1,
                    "hw_in": hw_out,
                    "hw_out": hw_out,
                    "epilogue": "bias_add_relu",
                }
            )
            if b == 0:
                layers.append(
                    {
                        "name": f"{pre}.downsample",
                        "c": c_in,
                        "n": out,
                        "r": 1,
                        "stride": s,
                        "hw_in": hw_b,
                        "hw_out": hw_out,
                        "epilogue": "bias",
                    }
                )
            c_in = out
    layers.append(
        {"name": "fc", "c": 2048, "n": 1000, "r": 1, "stride": 1, "hw_in": 1, "hw_out": 1, "epilogue": "bias"}
    )
    return layers


def resnet50(batches=RESNET_BATCHES) -> ModelList:
    ml = ModelList(
        "resnet50",
        "ResNet-50 v1.5 (torchvision), 224 x 224, every convolution as an implicit GEMM, fp32",
        "convolutions as implicit GEMM (M = batch x H_out x W_out, N = output channels, K = C x R x S; batch norm "
        "folded into a bias) and the fc layer, at batch " + ", ".join(str(b) for b in batches) + "; fused tails: "
        "bias + ReLU, bias + residual + ReLU after each bottleneck, bias on the downsample projections and fc; "
        "convolutions with equal GEMM sizes and tail are one problem (aliases in meta)",
    )
    for batch in batches:
        for layer in resnet50_convs():
            m = batch * layer["hw_out"] ** 2
            k = layer["c"] * layer["r"] ** 2
            meta = {
                "layer": layer["name"],
                "batch": batch,
                "conv": f"{layer['c']}->{layer['n']} {layer['r']}x{layer['r']}/{layer['stride']} "
                f"{layer['hw_in']}->{layer['hw_out']}",
            }
            ml.add(Problem(f"b{batch}.{layer['name']}", m, layer["n"], k, layer["epilogue"]), meta)
    return ml


#: name -> builder of every shipped list
MODELS = {"llama3-8b": llama3_8b, "resnet50": resnet50}

__all__ = ["MODELS", "ModelList", "SPLITS", "TILES", "candidates_for", "llama3_8b", "resnet50", "resnet50_convs"]
