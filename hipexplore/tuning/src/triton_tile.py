"""The one split-K GEMM tile in Triton (read as text by hipexplore, compiled in workers).

Why a file of its own: both Triton kernel files compute the same thing per program, one output tile's
partial product over one K slice (triton_splitk.py's ``matmul_splitk`` for the split-K list,
triton_models.py's ``matmul_fused`` for the real-model lists), and differ only in where the tile goes.
One body means a fix to the masks or the pointer steps reaches both. hipexplore's ast walk carries
this file as a generated module beside each GEMM kernel, so its text is in both GEMMs' keys and in
no tail's.
"""

import triton
import triton.language as tl


@triton.jit
def splitk_tile(
    a_ptr,
    b_ptr,
    M: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    """(acc, rm, rn): A[rm, slice] @ B[slice, rn] in fp32 for the output tile program_id(0) and the K
    slice s = program_id(1) (its BLOCK_K-wide pieces s, s + SPLIT_K, ...); A is M x K, B is K x N,
    row-major; rows and columns past M, N, K read as zeros."""
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * K + rk[None, :]
    b = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        k_left = K - k * BLOCK_K * SPLIT_K
        av = tl.load(a, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        bv = tl.load(b, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(av, bv)
        a += BLOCK_K * SPLIT_K
        b += BLOCK_K * SPLIT_K * N
    return acc, rm, rn
