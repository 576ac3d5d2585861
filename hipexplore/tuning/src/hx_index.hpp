// hx/kernels/index.hpp - where a thread is (global, local, group) and the strided loops that
// spread n items over a grid, a block or a wavefront, unrolled at compile time where n is known.
#ifndef HX_KERNELS_INDEX_HPP
#define HX_KERNELS_INDEX_HPP
#include <hx/kernels/functional.hpp>

namespace hx {

struct index {
    index_int global = 0;
    index_int local = 0;
    index_int group = 0;

    HX_INLINE index_int nglobal() const { return blockDim.x * gridDim.x; }
    HX_INLINE index_int nlocal() const { return blockDim.x; }
    HX_INLINE index_int ngroup() const { return gridDim.x; }
    HX_DEVICE_CONSTEXPR static index_int nwave() { return HX_WAVEFRONT; }
    HX_INLINE index_int wave_id() const { return local / nwave(); }
    HX_INLINE index_int lane_id() const { return local % nwave(); }

    template <class F, class N, class Stride>
    HX_INLINE static void for_stride(index_int start, N n, Stride stride, F f)
    {
        if constexpr(is_integral_constant<N>{} and is_integral_constant<Stride>{})
        {
            constexpr index_int k = cdiv(N::value, Stride::value);
            repeat_c<k>([&](auto j) {
                index_int i = start + j * Stride::value;
                if(j + 1 < k or i < N::value)
                    f(i);
            });
        }
        else
        {
            for(index_int i = start; i < index_int(n); i += index_int(stride))
                f(i);
        }
    }
    template <class F, class N>
    HX_INLINE void global_stride(N n, F f) const { for_stride(global, n, nglobal(), f); }
    template <class F, class N>
    HX_INLINE void group_stride(N n, F f) const { for_stride(group, n, ngroup(), f); }
    template <index_int NLocal, class F, class N>
    HX_INLINE void local_stride(N n, F f) const { for_stride(local, n, index_constant<NLocal>{}, f); }
    template <class F, class N>
    HX_INLINE void local_stride(N n, F f) const { for_stride(local, n, nlocal(), f); }
    template <class F, class N>
    HX_INLINE void lane_stride(N n, F f) const { for_stride(lane_id(), n, index_constant<HX_WAVEFRONT>{}, f); }
};

HX_INLINE index make_index()
{
    index r;
    r.global = blockIdx.x * blockDim.x + threadIdx.x;
    r.local = threadIdx.x;
    r.group = blockIdx.x;
    return r;
}

struct index2d {
    index_int x, y, z;
    index_int bx, by, bz;
};
HX_INLINE index2d make_index2d()
{
    return {threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z};
}

}  // namespace hx
#endif  // HX_KERNELS_INDEX_HPP
