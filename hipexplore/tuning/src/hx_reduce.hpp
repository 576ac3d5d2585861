// hx/kernels/reduce.hpp - block-wide reductions through shared memory (the lane/block
// reductions MIGraphX's reduce kernels are built from), usable by any tail.
#ifndef HX_KERNELS_REDUCE_HPP
#define HX_KERNELS_REDUCE_HPP
#include <hx/kernels/index.hpp>
#include <hx/kernels/algorithm.hpp>

namespace hx {

template <index_int NThreads, class Op, class T>
HX_INLINE T block_reduce(index idx, Op op, T x)
{
    static_assert(is_power_of_2(NThreads), "block_reduce needs a power-of-two block");
    __shared__ T buffer[NThreads];
    buffer[idx.local] = x;
    __syncthreads();
    repeat_c<log2_floor(NThreads)>([&](auto level) {
        constexpr index_int half = NThreads >> (level + 1);
        if(idx.local < half)
            buffer[idx.local] = op(buffer[idx.local], buffer[idx.local + half]);
        __syncthreads();
    });
    T r = buffer[0];
    __syncthreads();
    return r;
}

// reduce `n` elements read by `read(i)` over the block: every thread gets the result
template <index_int NThreads, class Op, class T, class Read>
HX_INLINE T block_reduce_range(index idx, Op op, T init, index_int n, Read read)
{
    T acc = init;
    idx.local_stride(n, [&](auto i) { acc = op(acc, read(i)); });
    return block_reduce<NThreads>(idx, op, acc);
}

}  // namespace hx
#endif  // HX_KERNELS_REDUCE_HPP
