/* Host C twin of gemm_tile.cu: the same blocking (BM x BN x BK tiles, SPLIT K slices, UNROLL on the
 * inner k loop) so that the same compile-time parameters mean the same computation.
 * C[z] += A[M,K] x B[K,N] over the z-th K slice (destination zeroed by gemm_fill first). */
#define HX_STR(x) #x
#define HX_PRAGMA(x) _Pragma(HX_STR(x))
#define HX_UNROLL(n) HX_PRAGMA(GCC unroll n)
#define KCHUNK ((GEMM_K + SPLIT - 1) / SPLIT)

void gemm_tile(const float* restrict A, const float* restrict B, float* restrict C)
{
    for (int z = 0; z < SPLIT; ++z) {
        const int kbeg = z * KCHUNK;
        const int kend = (kbeg + KCHUNK < GEMM_K) ? kbeg + KCHUNK : GEMM_K;
        float* out = C + (long)z * GEMM_M * GEMM_N;
        for (int row0 = 0; row0 < GEMM_M; row0 += BM) {
            const int rows = (GEMM_M - row0 < BM) ? GEMM_M - row0 : BM;
            for (int col0 = 0; col0 < GEMM_N; col0 += BN) {
                const int cols = (GEMM_N - col0 < BN) ? GEMM_N - col0 : BN;
                float acc[BM][BN];
                for (int r = 0; r < rows; ++r)
                    for (int c = 0; c < cols; ++c) acc[r][c] = 0.0f;
                for (int k0 = kbeg; k0 < kend; k0 += BK) {
                    const int depth = (kend - k0 < BK) ? kend - k0 : BK;
                    for (int r = 0; r < rows; ++r) {
                        const float* a_row = A + (long)(row0 + r) * GEMM_K + k0;
                        HX_UNROLL(UNROLL)
                        for (int kk = 0; kk < depth; ++kk) {
                            const float a = a_row[kk];
                            const float* b_row = B + (long)(k0 + kk) * GEMM_N + col0;
                            for (int c = 0; c < cols; ++c) acc[r][c] += a * b_row[c];
                        }
                    }
                }
                for (int r = 0; r < rows; ++r)
                    for (int c = 0; c < cols; ++c) out[(long)(row0 + r) * GEMM_N + col0 + c] += acc[r][c];
            }
        }
    }
}
