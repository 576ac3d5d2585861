"""Triton kernels of the real-model tuning lists (read as text by hipexplore, compiled in workers).

The Triton twins of the hx kernels (hxgen.py): ``matmul_fused`` is a split-K GEMM whose epilogue
(a constexpr EPI, numbered as hxgen.EPILOGUES) is fused when SPLIT_K == 1; with SPLIT_K > 1 each K
slice adds its partial sums into the zeroed output atomically (the tile is triton_tile.py's, shared
with triton_splitk.py). ``fill_zero`` zeroes the output and ``pointwise_epilogue`` applies the
epilogue afterwards. Shapes are constexprs, so only the GEMM depends on the tuning candidate and
the two tails repeat across candidates.
EPI: 0 none, 1 bias, 2 bias_relu, 3 bias_gelu, 4 add, 5 bias_add_relu, 6 silu, 7 mul.
"""

import triton
import triton.language as tl
from triton_tile import splitk_tile


@triton.jit
def _erf(x):
    # Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): tl has no erf on every backend
    s = tl.where(x < 0.0, -1.0, 1.0)
    a = tl.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t * tl.exp(-a * a)
    return s * y


@triton.jit
def _epilogue(x, e0, e1, EPI: tl.constexpr):
    if EPI == 1:
        x = x + e0
    elif EPI == 2:
        x = tl.maximum(x + e0, 0.0)
    elif EPI == 3:
        v = x + e0
        x = 0.5 * v * (1.0 + _erf(v * 0.7071067811865476))
    elif EPI == 4:
        x = x + e0
    elif EPI == 5:
        x = tl.maximum(x + e0 + e1, 0.0)
    elif EPI == 6:
        x = x / (1.0 + tl.exp(-x))
    elif EPI == 7:
        x = x * e0
    return x


@triton.jit
def _extra(e0_ptr, e1_ptr, rm, rn, mask, N: tl.constexpr, EPI: tl.constexpr):
    """The epilogue's extra inputs at (rm, rn): a bias per column for 1, 2, 3, 5; an M x N tensor
    (residual, or SwiGLU's other half) for 4, 7 and as the second input of 5."""
    if EPI == 1 or EPI == 2 or EPI == 3 or EPI == 5:
        e0 = tl.load(e0_ptr + rn, mask=mask, other=0.0)
    elif EPI == 4 or EPI == 7:
        e0 = tl.load(e0_ptr + rm * N + rn, mask=mask, other=0.0)
    else:
        e0 = 0.0
    if EPI == 5:
        e1 = tl.load(e1_ptr + rm * N + rn, mask=mask, other=0.0)
    else:
        e1 = 0.0
    return e0, e1


@triton.jit
def matmul_fused(
    a_ptr,
    b_ptr,
    c_ptr,
    e0_ptr,
    e1_ptr,
    M: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
    EPI: tl.constexpr,
):
    """C = epilogue(A @ B) (SPLIT_K == 1) or C += A[:, slice] @ B[slice, :] (SPLIT_K > 1, slice =
    program_id(1)); A is M x K, B is K x N, row-major."""
    acc, rm, rn = splitk_tile(a_ptr, b_ptr, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    c = c_ptr + rm[:, None] * N + rn[None, :]
    if SPLIT_K == 1:
        e0, e1 = _extra(e0_ptr, e1_ptr, rm[:, None], rn[None, :], mask, N, EPI)
        tl.store(c, _epilogue(acc, e0, e1, EPI), mask=mask)
    else:
        tl.atomic_add(c, acc, mask=mask)


@triton.jit
def fill_zero(c_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < N)


@triton.jit
def pointwise_epilogue(
    x_ptr, e0_ptr, e1_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr, EPI: tl.constexpr, BLOCK: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    e0, e1 = _extra(e0_ptr, e1_ptr, offs // N, offs % N, mask, N, EPI)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, _epilogue(x, e0, e1, EPI), mask=mask)
