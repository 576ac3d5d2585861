// hx/kernels/functional.hpp - compile-time sequences, packs, folds and argument transforms.
#ifndef HX_KERNELS_FUNCTIONAL_HPP
#define HX_KERNELS_FUNCTIONAL_HPP
#include <hx/kernels/type_traits.hpp>

namespace hx {

template <index_int... Ns>
struct seq {
    static constexpr index_int size = sizeof...(Ns);
    using type = seq;
};

namespace detail {
template <class S1, class S2> struct merge_seq;
template <index_int... Xs, index_int... Ys>
struct merge_seq<seq<Xs...>, seq<Ys...>> { using type = seq<Xs..., (sizeof...(Xs) + Ys)...>; };
template <index_int N> struct gens : merge_seq<typename gens<N / 2>::type, typename gens<N - N / 2>::type> {};
template <> struct gens<0> : seq<> {};
template <> struct gens<1> : seq<0> {};
}  // namespace detail

template <index_int N>
using make_seq = typename detail::gens<N>::type;

template <class F, index_int... Ns>
HX_DEVICE_CONSTEXPR auto sequence_impl(F&& f, seq<Ns...>) { return f(index_constant<Ns>{}...); }

// f(_c<0>, ..., _c<N-1>)
template <index_int N, class F>
HX_DEVICE_CONSTEXPR auto sequence_c(F&& f) { return sequence_impl(f, make_seq<N>{}); }

template <class F, index_int... Ns>
HX_DEVICE_CONSTEXPR void repeat_impl(F&& f, seq<Ns...>) { (f(index_constant<Ns>{}), ...); }

// f(_c<i>) for i in [0, N), unrolled at compile time
template <index_int N, class F>
HX_DEVICE_CONSTEXPR void repeat_c(F&& f) { repeat_impl(f, make_seq<N>{}); }

template <class F>
HX_DEVICE_CONSTEXPR void repeat(index_int n, F&& f) { for(index_int i = 0; i < n; ++i) f(i); }

template <class... Fs> struct overloaded : Fs... { using Fs::operator()...; };
template <class... Fs> __device__ __host__ overloaded(Fs...) -> overloaded<Fs...>;

template <class F, class... Ts>
HX_DEVICE_CONSTEXPR auto invoke(F&& f, Ts&&... xs) HX_RETURNS(static_cast<F&&>(f)(static_cast<Ts&&>(xs)...))

template <class... Ts>
HX_DEVICE_CONSTEXPR auto pack(Ts... xs)
{
    return [=](auto f) HX_RETURNS(f(xs...));
}

template <class F, class G>
HX_DEVICE_CONSTEXPR auto by(F f, G g)
{
    return [=](auto&&... xs) { return f(g(HX_FWD(xs))...); };
}

template <class F>
HX_DEVICE_CONSTEXPR auto compose(F f) { return f; }
template <class F, class G, class... Gs>
HX_DEVICE_CONSTEXPR auto compose(F f, G g, Gs... gs)
{
    return [=](auto&&... xs) { return f(compose(g, gs...)(HX_FWD(xs)...)); };
}

template <class F, class T>
HX_DEVICE_CONSTEXPR auto fold_impl(F&&, T&& x) { return static_cast<T&&>(x); }
template <class F, class T, class U, class... Ts>
HX_DEVICE_CONSTEXPR auto fold_impl(F&& f, T&& x, U&& y, Ts&&... xs)
{
    return fold_impl(f, f(static_cast<T&&>(x), static_cast<U&&>(y)), static_cast<Ts&&>(xs)...);
}
template <class F>
HX_DEVICE_CONSTEXPR auto fold(F f)
{
    return [=](auto&&... xs) { return fold_impl(f, HX_FWD(xs)...); };
}

template <index_int N, class T, class... Ts>
HX_DEVICE_CONSTEXPR auto&& nth_arg(T&& x, Ts&&... xs)
{
    if constexpr(N == 0)
        return static_cast<T&&>(x);
    else
        return nth_arg<N - 1>(static_cast<Ts&&>(xs)...);
}

// last argument first: f(xs[n-1], xs[0], ..., xs[n-2])
HX_DEVICE_CONSTEXPR auto rotate_last()
{
    return [](auto... xs) {
        return [=](auto f) {
            return sequence_c<sizeof...(xs)>([&](auto... is) {
                constexpr index_int n = sizeof...(xs);
                return f(nth_arg<(is + n - 1) % n>(xs...)...);
            });
        };
    };
}

// apply each transform to the argument pack in turn, then call the continuation
template <class T>
HX_DEVICE_CONSTEXPR auto transform_args(T t) { return t; }
template <class T, class... Ts>
HX_DEVICE_CONSTEXPR auto transform_args(T t, Ts... ts)
{
    return [=](auto... xs) { return t(xs...)([=](auto... ys) { return transform_args(ts...)(ys...); }); };
}

HX_DEVICE_CONSTEXPR auto id_transform()
{
    return [](auto... xs) { return [=](auto f) { return f(xs...); }; };
}

template <class F>
HX_DEVICE_CONSTEXPR auto each_arg(F f)
{
    return [=](auto&&... xs) { (f(HX_FWD(xs)), ...); };
}

template <class... Ts>
HX_DEVICE_CONSTEXPR bool all_of_args(Ts... bs) { return (true and ... and bool(bs)); }
template <class... Ts>
HX_DEVICE_CONSTEXPR bool any_of_args(Ts... bs) { return (false or ... or bool(bs)); }

template <class T, T... Xs>
struct integer_list {
    static constexpr index_int size = sizeof...(Xs);
    template <index_int I>
    HX_DEVICE_CONSTEXPR static T at()
    {
        constexpr T values[] = {Xs...};
        return values[I];
    }
};

// the N-th argument as a transform: arg_c<1>()(a, b, c) == b
template <index_int N>
HX_DEVICE_CONSTEXPR auto arg_c()
{
    return [](auto&&... xs) -> decltype(auto) { return nth_arg<N>(HX_FWD(xs)...); };
}

}  // namespace hx
#endif  // HX_KERNELS_FUNCTIONAL_HPP
