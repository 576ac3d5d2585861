// hx/kernels/tuple.hpp - a device tuple (get, apply, transform, fold) for argument packs.
#ifndef HX_KERNELS_TUPLE_HPP
#define HX_KERNELS_TUPLE_HPP
#include <hx/kernels/functional.hpp>

namespace hx {
namespace detail {
template <index_int I, class T>
struct tuple_leaf {
    T value;
    HX_DEVICE_CONSTEXPR T& get_leaf() { return value; }
    HX_DEVICE_CONSTEXPR const T& get_leaf() const { return value; }
};
template <class Seq, class... Ts> struct tuple_impl;
template <index_int... Is, class... Ts>
struct tuple_impl<seq<Is...>, Ts...> : tuple_leaf<Is, Ts>... {
    tuple_impl() = default;
    HX_DEVICE_CONSTEXPR tuple_impl(Ts... xs) : tuple_leaf<Is, Ts>{xs}... {}
};
template <index_int I, class T>
HX_DEVICE_CONSTEXPR T& leaf_get(tuple_leaf<I, T>& l) { return l.value; }
template <index_int I, class T>
HX_DEVICE_CONSTEXPR const T& leaf_get(const tuple_leaf<I, T>& l) { return l.value; }
}  // namespace detail

template <class... Ts>
struct tuple : detail::tuple_impl<make_seq<sizeof...(Ts)>, Ts...> {
    using base = detail::tuple_impl<make_seq<sizeof...(Ts)>, Ts...>;
    using base::base;
    HX_DEVICE_CONSTEXPR static index_constant<sizeof...(Ts)> size() { return {}; }
    template <index_int I>
    HX_DEVICE_CONSTEXPR auto& operator[](index_constant<I>) { return detail::leaf_get<I>(*this); }
    template <index_int I>
    HX_DEVICE_CONSTEXPR const auto& operator[](index_constant<I>) const { return detail::leaf_get<I>(*this); }
    template <class F>
    HX_DEVICE_CONSTEXPR auto operator()(F f) const
    {
        return sequence_c<sizeof...(Ts)>([&](auto... is) { return f((*this)[is]...); });
    }
};

template <class... Ts>
__device__ __host__ tuple(Ts...) -> tuple<Ts...>;

template <index_int I, class... Ts>
HX_DEVICE_CONSTEXPR auto& get(tuple<Ts...>& t) { return detail::leaf_get<I>(t); }
template <index_int I, class... Ts>
HX_DEVICE_CONSTEXPR const auto& get(const tuple<Ts...>& t) { return detail::leaf_get<I>(t); }

template <class... Ts>
HX_DEVICE_CONSTEXPR tuple<Ts...> make_tuple(Ts... xs) { return {xs...}; }

template <class... Ts, class F>
HX_DEVICE_CONSTEXPR auto tuple_apply(const tuple<Ts...>& t, F f) { return t(f); }

template <class... Ts, class F>
HX_DEVICE_CONSTEXPR auto tuple_transform(const tuple<Ts...>& t, F f)
{
    return t([&](auto... xs) { return make_tuple(f(xs)...); });
}

template <class... Ts, class F, class T>
HX_DEVICE_CONSTEXPR auto tuple_fold(const tuple<Ts...>& t, T init, F f)
{
    return t([&](auto... xs) { return fold(f)(init, xs...); });
}

template <class... Ts, class... Us>
HX_DEVICE_CONSTEXPR auto tuple_cat(const tuple<Ts...>& a, const tuple<Us...>& b)
{
    return a([&](auto... xs) { return b([&](auto... ys) { return make_tuple(xs..., ys...); }); });
}

template <class T> struct tuple_size;
template <class... Ts> struct tuple_size<tuple<Ts...>> : index_constant<sizeof...(Ts)> {};

}  // namespace hx
#endif  // HX_KERNELS_TUPLE_HPP
