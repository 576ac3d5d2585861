// hx/kernels/pointwise.hpp - the pointwise and fill kernels' bodies: every output element is
// f(inputs at the same index), vectorized when every shape allows it, grid-stride otherwise.
#ifndef HX_KERNELS_POINTWISE_HPP
#define HX_KERNELS_POINTWISE_HPP
#include <hx/kernels/index.hpp>
#include <hx/kernels/tensor_view.hpp>
#include <hx/kernels/ops.hpp>
#include <hx/kernels/algorithm.hpp>
#include <hx/kernels/reduce.hpp>

namespace hx {

template <index_int Vec, class... Views>
HX_DEVICE_CONSTEXPR index_int pointwise_vector_size()
{
    if constexpr(Vec <= 1)
        return 1;
    else if constexpr((Views::shape_type::template vectorizable<Vec>() and ...))
        return Vec;
    else
        return pointwise_vector_size<Vec / 2, Views...>();
}

template <index_int Vec, class F, class Out, class... Ins>
HX_INLINE void pointwise(index idx, F f, Out out, Ins... ins)
{
    static_assert(same_elements<Out, Ins...>(), "pointwise inputs and output must have the same elements");
    constexpr index_int v = pointwise_vector_size<Vec, Out, Ins...>();
    constexpr index_int n = Out::size() / v;
    idx.global_stride(n, [&](auto i) {
        auto r = vec_transform(f, ins.template load<v>(i)...);
        out.template store<v>(i, vec_transform(op::convert_to<typename Out::value_type>{}, r));
    });
}

template <index_int Vec, class Out, class T>
HX_INLINE void fill(index idx, Out out, T value)
{
    constexpr index_int v = pointwise_vector_size<Vec, Out>();
    constexpr index_int n = Out::size() / v;
    using V = typename Out::value_type;
    const auto x = [&] {
        if constexpr(v == 1)
            return convert<V>(value);
        else
            return vec<V, v>::broadcast(convert<V>(value));
    }();
    idx.global_stride(n, [&](auto i) { out.template store<v>(i, x); });
}

}  // namespace hx
#endif  // HX_KERNELS_POINTWISE_HPP
