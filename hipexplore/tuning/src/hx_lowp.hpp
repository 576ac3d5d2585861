// hx/kernels/lowp.hpp - software low-precision types (bfloat16 and the 8-bit float formats),
// templated on their bit layout as MIGraphX's float8.hpp is; conversions go through float.
#ifndef HX_KERNELS_LOWP_HPP
#define HX_KERNELS_LOWP_HPP
#include <hx/kernels/type_traits.hpp>

namespace hx {

struct bfloat16 {
    uint16_t bits;
    HX_HD_CONSTEXPR bfloat16() : bits(0) {}
    HX_INLINE bfloat16(float f) : bits(from_float(f)) {}
    template <class T, HX_REQUIRES(is_arithmetic<T>{} and not is_same<T, float>{})>
    HX_INLINE bfloat16(T x) : bfloat16(static_cast<float>(x)) {}
    HX_INLINE operator float() const { return bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
    HX_INLINE static uint16_t from_float(float f)
    {
        uint32_t u = bit_cast<uint32_t>(f);
        if((u & 0x7fffffffu) > 0x7f800000u)
            return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
        uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);         // round to nearest even
        return static_cast<uint16_t>((u + rounding) >> 16);
    }
#define HX_BF16_OP(op)                                                                            \
    friend HX_INLINE bfloat16 operator op(bfloat16 a, bfloat16 b) { return bfloat16(float(a) op float(b)); } \
    HX_INLINE bfloat16& operator op##=(bfloat16 b) { return *this = *this op b; }
    HX_BF16_OP(+)
    HX_BF16_OP(-)
    HX_BF16_OP(*)
    HX_BF16_OP(/)
#undef HX_BF16_OP
    friend HX_INLINE bool operator<(bfloat16 a, bfloat16 b) { return float(a) < float(b); }
    friend HX_INLINE bool operator>(bfloat16 a, bfloat16 b) { return float(a) > float(b); }
    friend HX_INLINE bool operator==(bfloat16 a, bfloat16 b) { return float(a) == float(b); }
    friend HX_INLINE bool operator!=(bfloat16 a, bfloat16 b) { return float(a) != float(b); }
    friend HX_INLINE bfloat16 operator-(bfloat16 a) { bfloat16 r; r.bits = a.bits ^ 0x8000u; return r; }
};

namespace fp8 {
enum class rounding { standard, stochastic };

// an 8-bit float with E exponent bits and M mantissa bits; FNUZ: no negative zero, one NaN, no inf
template <index_int E, index_int M, bool FNUZ>
struct format {
    static_assert(E + M == 7, "an 8-bit float has one sign bit");
    static constexpr index_int exponent_bits = E;
    static constexpr index_int mantissa_bits = M;
    static constexpr bool fnuz = FNUZ;
    static constexpr int bias = FNUZ ? (1 << (E - 1)) : (1 << (E - 1)) - 1;
    static constexpr uint8_t nan_bits = FNUZ ? 0x80u : 0x7fu;
};

template <class Format, rounding R = rounding::standard>
HX_INLINE uint8_t cast_to(float f)
{
    constexpr index_int we = Format::exponent_bits, wm = Format::mantissa_bits;
    constexpr int bias = Format::bias;
    uint32_t u = bit_cast<uint32_t>(f);
    uint32_t sign = u >> 31;
    int exponent = int((u >> 23) & 0xffu) - 127;
    uint32_t mantissa = u & 0x7fffffu;
    if(((u >> 23) & 0xffu) == 0xffu)
        return Format::nan_bits;
    if(f == 0.0f)
        return Format::fnuz ? 0u : static_cast<uint8_t>(sign << 7);
    int e = exponent + bias;
    constexpr int emax = (1 << we) - (Format::fnuz ? 1 : 2);
    if(e > emax)
        return static_cast<uint8_t>((sign << 7) | (emax << wm) | ((1u << wm) - 1u));  // saturate
    uint32_t m;
    if(e <= 0)
    {  // subnormal in the target format
        int shift = 1 - e;
        uint32_t full = mantissa | 0x800000u;
        m = shift < 24 ? (full >> (23 - wm + shift)) : 0u;
        e = 0;
    }
    else
    {
        uint32_t rem = mantissa & ((1u << (23 - wm)) - 1u);
        m = mantissa >> (23 - wm);
        uint32_t half = 1u << (22 - wm);
        if(rem > half or (rem == half and (m & 1u)))
        {
            ++m;
            if(m >> wm) { m = 0; ++e; }
        }
        if(e > emax)
            return static_cast<uint8_t>((sign << 7) | (emax << wm) | ((1u << wm) - 1u));
    }
    return static_cast<uint8_t>((sign << 7) | (uint32_t(e) << wm) | m);
}

template <class Format>
HX_INLINE float cast_from(uint8_t x)
{
    constexpr index_int wm = Format::mantissa_bits;
    constexpr int bias = Format::bias;
    if(x == Format::nan_bits)
        return numeric_limits<float>::quiet_NaN();
    uint32_t sign = x >> 7;
    int e = int((x >> wm) & ((1u << Format::exponent_bits) - 1u));
    uint32_t m = x & ((1u << wm) - 1u);
    float v;
    if(e == 0)
        v = float(m) / float(1u << wm) * ::ldexpf(1.0f, 1 - bias);
    else
        v = (1.0f + float(m) / float(1u << wm)) * ::ldexpf(1.0f, e - bias);
    return sign ? -v : v;
}
}  // namespace fp8

template <class Format>
struct float8 {
    uint8_t data;
    HX_HD_CONSTEXPR float8() : data(0) {}
    HX_INLINE float8(float f) : data(fp8::cast_to<Format>(f)) {}
    template <class T, HX_REQUIRES(is_arithmetic<T>{} and not is_same<T, float>{})>
    HX_INLINE float8(T x) : float8(static_cast<float>(x)) {}
    HX_INLINE operator float() const { return fp8::cast_from<Format>(data); }
    HX_INLINE bool is_nan() const { return data == Format::nan_bits; }
#define HX_FP8_OP(op)                                                                             \
    friend HX_INLINE float8 operator op(float8 a, float8 b) { return float8(float(a) op float(b)); } \
    HX_INLINE float8& operator op##=(float8 b) { return *this = *this op b; }
    HX_FP8_OP(+)
    HX_FP8_OP(-)
    HX_FP8_OP(*)
    HX_FP8_OP(/)
#undef HX_FP8_OP
    friend HX_INLINE bool operator<(float8 a, float8 b) { return float(a) < float(b); }
    friend HX_INLINE bool operator>(float8 a, float8 b) { return float(a) > float(b); }
    friend HX_INLINE bool operator==(float8 a, float8 b) { return a.data == b.data and not a.is_nan(); }
    friend HX_INLINE bool operator!=(float8 a, float8 b) { return not(a == b); }
    friend HX_INLINE float8 operator-(float8 a) { return float8(-float(a)); }
};

using fp8e4m3 = float8<fp8::format<4, 3, false>>;
using fp8e5m2 = float8<fp8::format<5, 2, false>>;
using fp8e4m3fnuz = float8<fp8::format<4, 3, true>>;
using fp8e5m2fnuz = float8<fp8::format<5, 2, true>>;

template <class T> struct is_lowp : false_type {};
template <> struct is_lowp<bfloat16> : true_type {};
template <class F> struct is_lowp<float8<F>> : true_type {};

// the type arithmetic on T is carried out in
template <class T> struct accumulator { using type = T; };
template <> struct accumulator<bfloat16> { using type = float; };
template <class F> struct accumulator<float8<F>> { using type = float; };
template <class T> using accumulator_t = typename accumulator<T>::type;

template <class To, class From>
HX_INLINE To convert(From x)
{
    if constexpr(is_same<To, From>{})
        return x;
    else if constexpr(is_lowp<From>{})
        return To(float(x));
    else
        return To(x);
}

}  // namespace hx
#endif  // HX_KERNELS_LOWP_HPP
