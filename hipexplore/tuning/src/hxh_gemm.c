/* Host twin of the generated hx GEMM (hxgen.py): C = epilogue(A @ B) for SPLIT == 1, else
 * C += A[:, slice] @ B[slice, :] for every K slice (C zeroed first by hxh_fill), walked in
 * BM x BN x BK blocks as the GPU kernel tiles it. -D: GEMM_M GEMM_N GEMM_K BM BN BK SPLIT UNROLL EPI
 * (EPI numbered as hxgen.EPILOGUES: 0 none, 1 bias, 2 bias_relu, 3 bias_gelu, 4 add,
 * 5 bias_add_relu, 6 silu, 7 mul; e0 = bias or the M x N input, e1 = the residual of 5). */
#include "hxh_epilogue.h"
#define HXH_STR(x) #x
#define HXH_PRAGMA(x) _Pragma(HXH_STR(x))
#define HXH_UNROLL(n) HXH_PRAGMA(GCC unroll n)
#define KCHUNK ((((GEMM_K + SPLIT - 1) / SPLIT) + BK - 1) / BK * BK)

void hx_gemm(const float* a, const float* b, float* c, const float* e0, const float* e1)
{
    for (long z = 0; z < SPLIT; ++z) {
        long kbeg = z * KCHUNK, kend = kbeg + KCHUNK < GEMM_K ? kbeg + KCHUNK : GEMM_K;
        for (long r0 = 0; r0 < GEMM_M; r0 += BM)
            for (long c0 = 0; c0 < GEMM_N; c0 += BN)
                for (long r = r0; r < r0 + BM && r < GEMM_M; ++r)
                    for (long col = c0; col < c0 + BN && col < GEMM_N; ++col) {
                        float acc = 0.0f;
                        HXH_UNROLL(UNROLL)
                        for (long k = kbeg; k < kend; ++k) acc += a[r * GEMM_K + k] * b[k * GEMM_N + col];
                        if (SPLIT == 1) c[r * GEMM_N + col] = hxh_epilogue(acc, e0, e1, r, col, GEMM_N);
                        else c[r * GEMM_N + col] += acc;
                    }
    }
}
