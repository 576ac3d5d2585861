// hx/kernels/math.hpp - math functions overloaded for every arithmetic type and for vectors,
// plus the activations MIGraphX fuses after GEMMs and convolutions (relu, gelu, silu, sigmoid, ...).
#ifndef HX_KERNELS_MATH_HPP
#define HX_KERNELS_MATH_HPP
#include <hx/kernels/vec.hpp>
#include <hx/kernels/lowp.hpp>

namespace hx {

#define HX_MATH_UNARY_FOR(name, T, fn)                                                            \
    HX_INLINE auto name(T x) { return fn(x); }

#define HX_MATH_UNARY(name, ffn, dfn)                                                             \
    HX_MATH_UNARY_FOR(name, float, ffn)                                                           \
    HX_MATH_UNARY_FOR(name, double, dfn)                                                          \
    HX_INLINE auto name(bfloat16 x) { return bfloat16(ffn(float(x))); }                          \
    HX_INLINE auto name(fp8e4m3 x) { return fp8e4m3(ffn(float(x))); }                           \
    template <class T, HX_REQUIRES(is_integral<T>{})>                                             \
    HX_INLINE auto name(T x) { return dfn(static_cast<double>(x)); }                              \
    template <class T, index_int N>                                                               \
    HX_INLINE auto name(const vec<T, N>& x)                                                       \
    {                                                                                             \
        return vec_transform([](auto y) { return name(y); }, x);                                  \
    }

HX_MATH_UNARY(exp, ::expf, ::exp)
HX_MATH_UNARY(exp2, ::exp2f, ::exp2)
HX_MATH_UNARY(expm1, ::expm1f, ::expm1)
HX_MATH_UNARY(log, ::logf, ::log)
HX_MATH_UNARY(log2, ::log2f, ::log2)
HX_MATH_UNARY(log1p, ::log1pf, ::log1p)
HX_MATH_UNARY(sqrt, ::sqrtf, ::sqrt)
HX_MATH_UNARY(rsqrt, ::rsqrtf, ::rsqrt)
HX_MATH_UNARY(cbrt, ::cbrtf, ::cbrt)
HX_MATH_UNARY(sin, ::sinf, ::sin)
HX_MATH_UNARY(cos, ::cosf, ::cos)
HX_MATH_UNARY(tan, ::tanf, ::tan)
HX_MATH_UNARY(asin, ::asinf, ::asin)
HX_MATH_UNARY(acos, ::acosf, ::acos)
HX_MATH_UNARY(atan, ::atanf, ::atan)
HX_MATH_UNARY(sinh, ::sinhf, ::sinh)
HX_MATH_UNARY(cosh, ::coshf, ::cosh)
HX_MATH_UNARY(tanh, ::tanhf, ::tanh)
HX_MATH_UNARY(asinh, ::asinhf, ::asinh)
HX_MATH_UNARY(acosh, ::acoshf, ::acosh)
HX_MATH_UNARY(atanh, ::atanhf, ::atanh)
HX_MATH_UNARY(erf, ::erff, ::erf)
HX_MATH_UNARY(erfc, ::erfcf, ::erfc)
HX_MATH_UNARY(floor, ::floorf, ::floor)
HX_MATH_UNARY(ceil, ::ceilf, ::ceil)
HX_MATH_UNARY(round, ::roundf, ::round)
HX_MATH_UNARY(trunc, ::truncf, ::trunc)
HX_MATH_UNARY(fabs, ::fabsf, ::fabs)

#define HX_MATH_BINARY(name, ffn, dfn)                                                            \
    HX_INLINE float name(float x, float y) { return ffn(x, y); }                                 \
    HX_INLINE double name(double x, double y) { return dfn(x, y); }                              \
    template <class T, class U, HX_REQUIRES(is_arithmetic<T>{} and is_arithmetic<U>{} and not is_same<T, U>{})> \
    HX_INLINE auto name(T x, U y) { using R = common_type_t<T, U, float>; return name(R(x), R(y)); } \
    template <class T, index_int N, class U>                                                      \
    HX_INLINE auto name(const vec<T, N>& x, const U& y)                                           \
    {                                                                                             \
        return vec_transform([](auto a, auto b) { return name(a, b); }, x, y);                    \
    }

HX_MATH_BINARY(pow, ::powf, ::pow)
HX_MATH_BINARY(fmod, ::fmodf, ::fmod)
HX_MATH_BINARY(atan2, ::atan2f, ::atan2)
HX_MATH_BINARY(hypot, ::hypotf, ::hypot)
HX_MATH_BINARY(fmin, ::fminf, ::fmin)
HX_MATH_BINARY(fmax, ::fmaxf, ::fmax)

template <class T, class U>
HX_DEVICE_CONSTEXPR auto max(const T& a, const U& b) { return a < b ? b : a; }
template <class T, class U>
HX_DEVICE_CONSTEXPR auto min(const T& a, const U& b) { return a < b ? a : b; }
template <class T, class U, class V>
HX_DEVICE_CONSTEXPR auto clamp(const T& x, const U& lo, const V& hi) { return min(max(x, lo), hi); }
template <class T>
HX_DEVICE_CONSTEXPR T abs(T x) { return x < T(0) ? -x : x; }
template <class T>
HX_INLINE bool isnan(T x) { return x != x; }
template <class T>
HX_INLINE bool isinf(T x) { return x == numeric_limits<T>::infinity() or -x == numeric_limits<T>::infinity(); }
template <class T>
HX_INLINE T fma(T a, T b, T c) { return a * b + c; }
HX_INLINE float fma(float a, float b, float c) { return ::fmaf(a, b, c); }

// activations: generic over scalars and vectors
template <class T>
HX_INLINE auto relu(const T& x) { return vec_transform([](auto y) { return max(y, decltype(y)(0)); }, x); }
template <class T>
HX_INLINE auto leaky_relu(const T& x, float alpha = 0.01f)
{
    return vec_transform([=](auto y) { return y > decltype(y)(0) ? y : decltype(y)(alpha * y); }, x);
}
template <class T>
HX_INLINE auto sigmoid(const T& x) { return vec_transform([](auto y) { return decltype(y)(1) / (decltype(y)(1) + exp(-y)); }, x); }
template <class T>
HX_INLINE auto silu(const T& x) { return vec_transform([](auto y) { return y / (decltype(y)(1) + exp(-y)); }, x); }
template <class T>
HX_INLINE auto gelu_erf(const T& x)
{
    return vec_transform([](auto y) { return decltype(y)(0.5f) * y * (decltype(y)(1) + erf(y * decltype(y)(0.70710678118654752f))); }, x);
}
template <class T>
HX_INLINE auto gelu_tanh(const T& x)
{
    return vec_transform([](auto y) {
        using V = decltype(y);
        return V(0.5f) * y * (V(1) + tanh(V(0.7978845608028654f) * (y + V(0.044715f) * y * y * y)));
    }, x);
}
template <class T>
HX_INLINE auto mish(const T& x) { return vec_transform([](auto y) { return y * tanh(log1p(exp(y))); }, x); }
template <class T>
HX_INLINE auto hardswish(const T& x)
{
    return vec_transform([](auto y) { using V = decltype(y); return y * clamp(y + V(3), V(0), V(6)) / V(6); }, x);
}

}  // namespace hx
#endif  // HX_KERNELS_MATH_HPP
