// hx/kernels/gemm.hpp - a tiled fp32 GEMM, C[M,N] = A[M,K] @ B[K,N] (row-major), with split-K
// and a fused epilogue: a BM x BN block tile staged through shared memory BK at a time with
// vectorized global loads, a TM x TN register tile per thread, the k loop unrolled by UNROLL.
// SPLIT == 1 applies the epilogue and stores; SPLIT > 1 adds each K slice's partial sums into C
// atomically (C zeroed first by the fill kernel; the pointwise tail applies the epilogue).
#ifndef HX_KERNELS_GEMM_HPP
#define HX_KERNELS_GEMM_HPP
#include <hx/kernels/index.hpp>
#include <hx/kernels/vec.hpp>
#include <hx/kernels/ops.hpp>

namespace hx {

template <index_int BM_, index_int BN_, index_int BK_, index_int TM_, index_int TN_, index_int VEC_,
          index_int SPLIT_, index_int UNROLL_>
struct gemm_config {
    static constexpr index_int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
    static constexpr index_int VEC = VEC_, SPLIT = SPLIT_, UNROLL = UNROLL_;
    static constexpr index_int threads = (BM / TM) * (BN / TN);
    static_assert(BM % TM == 0 and BN % TN == 0, "the thread tile must divide the block tile");
    static_assert(threads >= 1 and threads <= 1024, "threads per block out of range");
    static_assert(is_power_of_2(VEC) and VEC <= 4, "vector width must be 1, 2 or 4");
};

template <index_int M_, index_int N_, index_int K_>
struct gemm_problem {
    static constexpr index_int M = M_, N = N_, K = K_;
};

template <class Cfg, class P>
struct gemm_layout {
    static constexpr index_int threads = Cfg::threads;
    // vector widths of the two tile loads: along K for A, along N for B (only where rows stay aligned)
    static constexpr index_int va = (P::K % Cfg::VEC == 0 and Cfg::BK % Cfg::VEC == 0) ? Cfg::VEC : 1;
    static constexpr index_int vb = (P::N % Cfg::VEC == 0 and Cfg::BN % Cfg::VEC == 0) ? Cfg::VEC : 1;
    static constexpr index_int a_vectors = Cfg::BM * Cfg::BK / va;
    static constexpr index_int b_vectors = Cfg::BK * Cfg::BN / vb;
    static constexpr index_int a_loads = cdiv(a_vectors, threads);
    static constexpr index_int b_loads = cdiv(b_vectors, threads);
    static constexpr index_int k_chunk = round_up(cdiv(P::K, Cfg::SPLIT), Cfg::BK);
    static constexpr bool full_m = P::M % Cfg::BM == 0;
    static constexpr bool full_n = P::N % Cfg::BN == 0;
    static constexpr bool full_k = P::K % Cfg::BK == 0 and P::K % k_chunk == 0;
    static constexpr index_int a_pad = 1;  // skews the transposed A tile across shared-memory banks
    static constexpr index_int shared_bytes = 4 * Cfg::BK * ((Cfg::BM + a_pad) + Cfg::BN);
    static_assert(shared_bytes <= 48 * 1024, "tile does not fit in 48 KiB of shared memory");
};

// A's tile, transposed into As[k][m]; B's tile into Bs[k][n]; zeros outside the matrices
template <class Cfg, class P, class L>
HX_INLINE void gemm_load_tiles(const float* __restrict__ A, const float* __restrict__ B,
                               float (&As)[Cfg::BK][Cfg::BM + L::a_pad], float (&Bs)[Cfg::BK][Cfg::BN],
                               index_int tid, index_int row0, index_int col0, index_int k0, index_int kend)
{
    repeat_c<L::a_loads>([&](auto j) {
        const index_int e = tid + j * L::threads;
        if(j + 1 < L::a_loads or e < L::a_vectors)
        {
            const index_int r = e / (Cfg::BK / L::va);
            const index_int c = (e % (Cfg::BK / L::va)) * L::va;
            const index_int gr = row0 + r, gc = k0 + c;
            vec<float, L::va> v{};
            if((L::full_m or gr < P::M) and (L::full_k or gc + L::va <= kend))
                v = load_vec<L::va>(A + gr * P::K + gc);
            else if(gr < P::M and gc < kend)
                v = load_vec_guarded<L::va>(A + gr * P::K + gc, kend - gc);
            repeat_c<L::va>([&](auto i) { As[c + i][r] = v[i]; });
        }
    });
    repeat_c<L::b_loads>([&](auto j) {
        const index_int e = tid + j * L::threads;
        if(j + 1 < L::b_loads or e < L::b_vectors)
        {
            const index_int r = e / (Cfg::BN / L::vb);
            const index_int c = (e % (Cfg::BN / L::vb)) * L::vb;
            const index_int gr = k0 + r, gc = col0 + c;
            vec<float, L::vb> v{};
            if((L::full_k or gr < kend) and (L::full_n or gc + L::vb <= P::N))
                v = load_vec<L::vb>(B + gr * P::N + gc);
            else if(gr < kend and gc < P::N)
                v = load_vec_guarded<L::vb>(B + gr * P::N + gc, P::N - gc);
            store_vec<L::vb>(&Bs[r][c], v);
        }
    });
}

// the epilogue reads its extra inputs at (row, col): a bias per column, a residual per element
struct no_extra {
    HX_INLINE float operator()(index_int, index_int) const { return 0.0f; }
};
template <index_int N>
struct column_input {
    const float* p;
    HX_INLINE float operator()(index_int, index_int c) const { return p[c]; }
};
template <index_int N>
struct element_input {
    const float* p;
    HX_INLINE float operator()(index_int r, index_int c) const { return p[r * N + c]; }
};

template <class Cfg, class P, class Epilogue, class... Extra>
HX_INLINE void gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    Epilogue epilogue, Extra... extra)
{
    using L = gemm_layout<Cfg, P>;
    constexpr index_int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::TM, TN = Cfg::TN;
    __shared__ float As[BK][BM + L::a_pad];
    __shared__ float Bs[BK][BN];
    const index_int tid = threadIdx.x;
    const index_int tx = tid % (BN / TN);
    const index_int ty = tid / (BN / TN);
    const index_int row0 = blockIdx.y * BM;
    const index_int col0 = blockIdx.x * BN;
    const index_int kbeg = blockIdx.z * L::k_chunk;
    const index_int kend = min(kbeg + L::k_chunk, P::K);

    float acc[TM][TN];
    repeat_c<TM>([&](auto i) { repeat_c<TN>([&](auto j) { acc[i][j] = 0.0f; }); });

    for(index_int k0 = kbeg; k0 < kend; k0 += BK)
    {
        gemm_load_tiles<Cfg, P, L>(A, B, As, Bs, tid, row0, col0, k0, kend);
        __syncthreads();
        HX_UNROLL_N(Cfg::UNROLL)
        for(index_int kk = 0; kk < BK; ++kk)
        {
            float a[TM], b[TN];
            repeat_c<TM>([&](auto i) { a[i] = As[kk][ty + i * (BM / TM)]; });
            repeat_c<TN>([&](auto j) { b[j] = Bs[kk][tx + j * (BN / TN)]; });
            repeat_c<TM>([&](auto i) { repeat_c<TN>([&](auto j) { acc[i][j] = fma(a[i], b[j], acc[i][j]); }); });
        }
        __syncthreads();
    }

    repeat_c<TM>([&](auto i) {
        const index_int r = row0 + ty + i * (BM / TM);
        repeat_c<TN>([&](auto j) {
            const index_int c = col0 + tx + j * (BN / TN);
            if((L::full_m or r < P::M) and (L::full_n or c < P::N))
            {
                if constexpr(Cfg::SPLIT == 1)
                    C[r * P::N + c] = epilogue(acc[i][j], extra(r, c)...);
                else
                    atomicAdd(C + r * P::N + c, acc[i][j]);
            }
        });
    });
}

}  // namespace hx
#endif  // HX_KERNELS_GEMM_HPP
