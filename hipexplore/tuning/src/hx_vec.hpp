// hx/kernels/vec.hpp - short vectors with elementwise arithmetic, and vectorized loads/stores
// (one 64- or 128-bit memory access for 2 or 4 floats).
#ifndef HX_KERNELS_VEC_HPP
#define HX_KERNELS_VEC_HPP
#include <hx/kernels/array.hpp>

namespace hx {

template <class T, index_int N>
struct alignas(sizeof(T) * N) vec {
    T v[N];
    using value_type = T;
    static constexpr index_int size_v = N;
    HX_DEVICE_CONSTEXPR static index_constant<N> size() { return {}; }
    HX_DEVICE_CONSTEXPR T& operator[](index_int i) { return v[i]; }
    HX_DEVICE_CONSTEXPR const T& operator[](index_int i) const { return v[i]; }
    HX_DEVICE_CONSTEXPR static vec broadcast(T x)
    {
        vec r{};
        for(index_int i = 0; i < N; i++)
            r.v[i] = x;
        return r;
    }
#define HX_VEC_OP(op)                                                                             \
    HX_DEVICE_CONSTEXPR vec& operator op##=(const vec& x)                                         \
    {                                                                                             \
        for(index_int i = 0; i < N; i++)                                                          \
            v[i] op## = x.v[i];                                                                   \
        return *this;                                                                             \
    }                                                                                             \
    HX_DEVICE_CONSTEXPR vec& operator op##=(const T& x)                                           \
    {                                                                                             \
        for(index_int i = 0; i < N; i++)                                                          \
            v[i] op## = x;                                                                        \
        return *this;                                                                             \
    }                                                                                             \
    friend HX_DEVICE_CONSTEXPR vec operator op(vec x, const vec& y) { return x op## = y; }        \
    friend HX_DEVICE_CONSTEXPR vec operator op(vec x, const T& y) { return x op## = y; }          \
    friend HX_DEVICE_CONSTEXPR vec operator op(const T& y, vec x)                                 \
    {                                                                                             \
        for(index_int i = 0; i < N; i++)                                                          \
            x.v[i] = y op x.v[i];                                                                 \
        return x;                                                                                 \
    }
    HX_VEC_OP(+)
    HX_VEC_OP(-)
    HX_VEC_OP(*)
    HX_VEC_OP(/)
#undef HX_VEC_OP
    friend HX_DEVICE_CONSTEXPR vec operator-(vec x)
    {
        for(index_int i = 0; i < N; i++)
            x.v[i] = -x.v[i];
        return x;
    }
};

template <class T> struct is_vec : false_type {};
template <class T, index_int N> struct is_vec<vec<T, N>> : true_type {};
template <class T> struct vec_size : index_constant<1> {};
template <class T, index_int N> struct vec_size<vec<T, N>> : index_constant<N> {};
template <class T> struct vec_value { using type = T; };
template <class T, index_int N> struct vec_value<vec<T, N>> { using type = T; };
template <class T> using vec_value_t = typename vec_value<remove_cvref_t<T>>::type;

template <index_int I, class T>
HX_DEVICE_CONSTEXPR auto vec_at(const T& x)
{
    if constexpr(is_vec<T>{})
        return x[I];
    else
        return x;
}

// f applied lane by lane over vectors (scalars are broadcast); a scalar when every argument is one
template <class F, class... Ts>
HX_DEVICE_CONSTEXPR auto vec_transform(F f, const Ts&... xs)
{
    constexpr index_int n = (index_int{1} * ... * vec_size<Ts>::value);
    constexpr index_int lanes = fold([](auto a, auto b) { return a > b ? a : b; })(vec_size<Ts>::value...);
    static_assert(n == 1 or n == lanes or lanes > 1, "vector lanes must agree");
    if constexpr(lanes == 1)
        return f(xs...);
    else
    {
        using R = decltype(f(vec_at<0>(xs)...));
        vec<R, lanes> r{};
        repeat_c<lanes>([&](auto i) { r[i] = f(vec_at<i>(xs)...); });
        return r;
    }
}

template <class F, class T, index_int N>
HX_DEVICE_CONSTEXPR T vec_reduce(const vec<T, N>& x, F f)
{
    T r = x[0];
    repeat_c<N - 1>([&](auto i) { r = f(r, x[i + 1]); });
    return r;
}

template <index_int N, class T>
HX_INLINE vec<T, N> load_vec(const T* p)
{
    return *reinterpret_cast<const vec<T, N>*>(p);
}
template <index_int N, class T>
HX_INLINE void store_vec(T* p, const vec<T, N>& x)
{
    *reinterpret_cast<vec<T, N>*>(p) = x;
}
template <index_int N, class T>
HX_INLINE vec<T, N> load_vec_guarded(const T* p, index_int valid)
{
    if(valid >= N)
        return load_vec<N>(p);
    vec<T, N> r{};
    for(index_int i = 0; i < N; i++)
        r[i] = i < valid ? p[i] : T(0);
    return r;
}

}  // namespace hx
#endif  // HX_KERNELS_VEC_HPP
