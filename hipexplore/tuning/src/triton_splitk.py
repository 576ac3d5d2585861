"""Triton split-K GEMM family for tuning lists (read as text by hipexplore, compiled in workers).

The Triton twin of gemm.cu and its tails: zero_fill clears the split-K workspace, matmul_splitk
writes one partial product per K slice (the tile is triton_tile.py's, shared with triton_models.py),
splitk_reduce sums the slices, bias_act adds the bias and applies the activation. Shapes are
constexprs (as MIGraphX bakes them in), so only matmul_splitk depends on the tile configuration and
the tails repeat across candidates.
"""

import triton
import triton.language as tl
from triton_tile import splitk_tile


@triton.jit
def _gelu(x):
    # tanh approximation, written out (tl has no tanh on every backend)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))


@triton.jit
def _activate(x, ACT: tl.constexpr):
    if ACT == 1:
        x = tl.maximum(x, 0.0)
    elif ACT == 2:
        x = _gelu(x)
    return x


@triton.jit
def zero_fill(ws_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ws_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < N)


@triton.jit
def matmul_splitk(
    a_ptr,
    b_ptr,
    ws_ptr,
    M: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    """ws[s] = A[:, slice s] @ B[slice s, :] for K slice s = program_id(1) (the one tile: triton_tile.py)."""
    acc, rm, rn = splitk_tile(a_ptr, b_ptr, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K)
    pid_k = tl.program_id(1)
    ws = ws_ptr + pid_k * M * N + rm[:, None] * N + rn[None, :]
    tl.store(ws, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def splitk_reduce(ws_ptr, c_ptr, MN: tl.constexpr, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(SPLIT_K):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc, mask=mask)


@triton.jit
def bias_act(c_ptr, bias_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    x = tl.load(c_ptr + offs, mask=mask, other=0.0) + tl.load(bias_ptr + offs % N, mask=mask, other=0.0)
    tl.store(out_ptr + offs, _activate(x, ACT), mask=mask)
