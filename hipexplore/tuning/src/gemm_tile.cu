// Tiled fp32 GEMM with split-K, one text for hiprtc (HIP) and NVRTC (CUDA).
// C[z] += A[M,K] (row-major) x B[K,N] (row-major) over the z-th K slice, z = blockIdx.z < SPLIT.
// The destination must be zeroed first (the fill kernel): SPLIT == 1 accumulates into C, SPLIT > 1
// into a workspace of SPLIT x M x N that the reduce kernel sums.
// Compile-time parameters (-D): GEMM_M GEMM_N GEMM_K, block tile BM x BN x BK, per-thread tile
// TM x TN, SPLIT (K slices), UNROLL (unroll factor of the inner k loop).
#define HX_STR(x) #x
#define HX_PRAGMA(x) _Pragma(HX_STR(x))
#define HX_UNROLL(n) HX_PRAGMA(unroll n)
#define NTHREADS ((BM / TM) * (BN / TN))
#define KCHUNK ((GEMM_K + SPLIT - 1) / SPLIT)

extern "C" __global__ void __launch_bounds__(NTHREADS)
gemm_tile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ float As[BK][BM + 1];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN);
    const int ty = tid / (BN / TN);
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    const int kbeg = blockIdx.z * KCHUNK;
    const int kend = (kbeg + KCHUNK < GEMM_K) ? kbeg + KCHUNK : GEMM_K;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = kbeg; k0 < kend; k0 += BK) {
        for (int e = tid; e < BM * BK; e += NTHREADS) {
            const int r = e / BK, c = e % BK;
            const int gr = row0 + r, gc = k0 + c;
            As[c][r] = (gr < GEMM_M && gc < kend) ? A[(long)gr * GEMM_K + gc] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += NTHREADS) {
            const int r = e / BN, c = e % BN;
            const int gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < kend && gc < GEMM_N) ? B[(long)gr * GEMM_N + gc] : 0.0f;
        }
        __syncthreads();
        HX_UNROLL(UNROLL)
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + i * (BM / TM)];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx + j * (BN / TN)];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    float* out = C + (long)blockIdx.z * GEMM_M * GEMM_N;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + ty + i * (BM / TM);
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int c = col0 + tx + j * (BN / TN);
            if (r < GEMM_M && c < GEMM_N) out[(long)r * GEMM_N + c] += acc[i][j];
        }
    }
}
