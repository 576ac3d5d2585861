// hx/kernels/types.hpp - fixed-width integers, limits and the integral-constant machinery.
#ifndef HX_KERNELS_TYPES_HPP
#define HX_KERNELS_TYPES_HPP
#include <hx/kernels/config.hpp>

namespace hx {

using int8_t = signed char;
using uint8_t = unsigned char;
using int16_t = short;
using uint16_t = unsigned short;
using int32_t = int;
using uint32_t = unsigned int;
using int64_t = long long;
using uint64_t = unsigned long long;
using size_t = decltype(sizeof(0));
using ptrdiff_t = decltype(static_cast<int*>(nullptr) - static_cast<int*>(nullptr));
using nullptr_t = decltype(nullptr);
using index_int = uint32_t;
using diff_int = int32_t;
using half_bits = uint16_t;

template <class T, T V>
struct integral_constant {
    static constexpr T value = V;
    using value_type = T;
    using type = integral_constant;
    HX_HD_CONSTEXPR operator value_type() const noexcept { return value; }
    HX_HD_CONSTEXPR value_type operator()() const noexcept { return value; }
    HX_DEVICE_CONSTEXPR static value_type to() { return value; }
};

template <bool B>
using bool_constant = integral_constant<bool, B>;
using true_type = bool_constant<true>;
using false_type = bool_constant<false>;

template <index_int N>
using index_constant = integral_constant<index_int, N>;

template <auto V>
static constexpr auto _c = integral_constant<decltype(V), V>{};

#define HX_INTEGRAL_CONSTANT_BINARY_OP(op)                                                        \
    template <class T, T V, class U, U W>                                                         \
    HX_DEVICE_CONSTEXPR auto operator op(integral_constant<T, V>, integral_constant<U, W>)        \
    {                                                                                             \
        return _c<(V op W)>;                                                                      \
    }

#define HX_INTEGRAL_CONSTANT_UNARY_OP(op)                                                         \
    template <class T, T V>                                                                       \
    HX_DEVICE_CONSTEXPR auto operator op(integral_constant<T, V>)                                 \
    {                                                                                             \
        return _c<(op V)>;                                                                        \
    }

HX_INTEGRAL_CONSTANT_BINARY_OP(+)
HX_INTEGRAL_CONSTANT_BINARY_OP(-)
HX_INTEGRAL_CONSTANT_BINARY_OP(*)
HX_INTEGRAL_CONSTANT_BINARY_OP(/)
HX_INTEGRAL_CONSTANT_BINARY_OP(%)
HX_INTEGRAL_CONSTANT_BINARY_OP(>>)
HX_INTEGRAL_CONSTANT_BINARY_OP(<<)
HX_INTEGRAL_CONSTANT_BINARY_OP(>)
HX_INTEGRAL_CONSTANT_BINARY_OP(<)
HX_INTEGRAL_CONSTANT_BINARY_OP(<=)
HX_INTEGRAL_CONSTANT_BINARY_OP(>=)
HX_INTEGRAL_CONSTANT_BINARY_OP(==)
HX_INTEGRAL_CONSTANT_BINARY_OP(!=)
HX_INTEGRAL_CONSTANT_BINARY_OP(&)
HX_INTEGRAL_CONSTANT_BINARY_OP(^)
HX_INTEGRAL_CONSTANT_BINARY_OP(|)
HX_INTEGRAL_CONSTANT_BINARY_OP(&&)
HX_INTEGRAL_CONSTANT_BINARY_OP(||)
HX_INTEGRAL_CONSTANT_UNARY_OP(!)
HX_INTEGRAL_CONSTANT_UNARY_OP(~)
HX_INTEGRAL_CONSTANT_UNARY_OP(+)
HX_INTEGRAL_CONSTANT_UNARY_OP(-)

template <class T, class U>
HX_DEVICE_CONSTEXPR auto cdiv(T x, U y) { return (x + y - 1) / y; }
template <class T, class U>
HX_DEVICE_CONSTEXPR auto round_up(T x, U y) { return cdiv(x, y) * y; }
template <class T>
HX_DEVICE_CONSTEXPR bool is_power_of_2(T x) { return x > 0 and (x & (x - 1)) == 0; }
template <class T>
HX_DEVICE_CONSTEXPR T log2_floor(T x) { T r = 0; while(x > 1) { x >>= 1; ++r; } return r; }

template <class T>
struct numeric_limits;

template <>
struct numeric_limits<float> {
    static constexpr bool is_specialized = true;
    static constexpr bool is_signed = true;
    static constexpr bool is_integer = false;
    static constexpr int digits = 24;
    HX_DEVICE_CONSTEXPR static float min() { return 1.17549435e-38f; }
    HX_DEVICE_CONSTEXPR static float max() { return 3.40282347e+38f; }
    HX_DEVICE_CONSTEXPR static float lowest() { return -3.40282347e+38f; }
    HX_DEVICE_CONSTEXPR static float epsilon() { return 1.19209290e-07f; }
    HX_INLINE static float infinity() { union { uint32_t u; float f; } x{0x7f800000u}; return x.f; }
    HX_INLINE static float quiet_NaN() { union { uint32_t u; float f; } x{0x7fc00000u}; return x.f; }
};
template <>
struct numeric_limits<double> {
    static constexpr bool is_specialized = true;
    static constexpr bool is_signed = true;
    static constexpr bool is_integer = false;
    static constexpr int digits = 53;
    HX_DEVICE_CONSTEXPR static double min() { return 2.2250738585072014e-308; }
    HX_DEVICE_CONSTEXPR static double max() { return 1.7976931348623157e+308; }
    HX_DEVICE_CONSTEXPR static double lowest() { return -1.7976931348623157e+308; }
    HX_DEVICE_CONSTEXPR static double epsilon() { return 2.2204460492503131e-16; }
    HX_INLINE static double infinity() { union { uint64_t u; double f; } x{0x7ff0000000000000ull}; return x.f; }
    HX_INLINE static double quiet_NaN() { union { uint64_t u; double f; } x{0x7ff8000000000000ull}; return x.f; }
};
#define HX_INTEGER_LIMITS(T, lo, hi, sgn, dig)                                                    \
    template <>                                                                                   \
    struct numeric_limits<T> {                                                                    \
        static constexpr bool is_specialized = true;                                              \
        static constexpr bool is_signed = sgn;                                                    \
        static constexpr bool is_integer = true;                                                  \
        static constexpr int digits = dig;                                                        \
        HX_DEVICE_CONSTEXPR static T min() { return lo; }                                         \
        HX_DEVICE_CONSTEXPR static T max() { return hi; }                                         \
        HX_DEVICE_CONSTEXPR static T lowest() { return lo; }                                      \
        HX_DEVICE_CONSTEXPR static T epsilon() { return 0; }                                      \
    };
HX_INTEGER_LIMITS(bool, false, true, false, 1)
HX_INTEGER_LIMITS(signed char, -128, 127, true, 7)
HX_INTEGER_LIMITS(unsigned char, 0, 255, false, 8)
HX_INTEGER_LIMITS(short, -32768, 32767, true, 15)
HX_INTEGER_LIMITS(unsigned short, 0, 65535, false, 16)
HX_INTEGER_LIMITS(int, -2147483647 - 1, 2147483647, true, 31)
HX_INTEGER_LIMITS(unsigned int, 0u, 4294967295u, false, 32)
HX_INTEGER_LIMITS(long long, -9223372036854775807ll - 1, 9223372036854775807ll, true, 63)
HX_INTEGER_LIMITS(unsigned long long, 0ull, 18446744073709551615ull, false, 64)

}  // namespace hx
#endif  // HX_KERNELS_TYPES_HPP
