"""The limits stand-ins of the runtime compilers (``std_headers.STD_HEADERS``; issue 26, item 1):
``<climits>``/``<limits.h>``, ``<cfloat>``/``<float.h>`` and ``<limits>``.

Why a module of its own: ``std::numeric_limits`` is generated, one specialization per arithmetic
type, from each type's width and sign (integers) or IEEE fields (``float``, ``double``), with the
LP64 device ABI's values that the CUDA and HIP device runtimes share; infinities and NaNs are
``__builtin_bit_cast``s of their bit patterns (EDG lacks ``__builtin_huge_valf``, both front ends
have the bit cast). The texts are part of the cache key of every request that includes them: an
edit is a new key.
"""

from __future__ import annotations

#: ``<climits>`` / ``<limits.h>``
LIMITS_H = r"""
#ifndef __HX_LIMITS_H
#define __HX_LIMITS_H
#define CHAR_BIT 8
#define MB_LEN_MAX 16
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647 - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LONG_MIN (-9223372036854775807L - 1)
#define LONG_MAX 9223372036854775807L
#define ULONG_MAX 18446744073709551615UL
#define LLONG_MIN (-9223372036854775807LL - 1)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
#endif
"""

#: ``<cfloat>`` / ``<float.h>``
FLOAT_H = r"""
#ifndef __HX_FLOAT_H
#define __HX_FLOAT_H
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define DBL_MANT_DIG 53
#define LDBL_MANT_DIG DBL_MANT_DIG
#define FLT_DIG 6
#define DBL_DIG 15
#define LDBL_DIG DBL_DIG
#define FLT_DECIMAL_DIG 9
#define DBL_DECIMAL_DIG 17
#define DECIMAL_DIG 17
#define FLT_MIN_EXP (-125)
#define DBL_MIN_EXP (-1021)
#define FLT_MIN_10_EXP (-37)
#define DBL_MIN_10_EXP (-307)
#define FLT_MAX_EXP 128
#define DBL_MAX_EXP 1024
#define FLT_MAX_10_EXP 38
#define DBL_MAX_10_EXP 308
#define FLT_MAX 3.40282347e+38F
#define DBL_MAX 1.7976931348623157e+308
#define FLT_EPSILON 1.19209290e-7F
#define DBL_EPSILON 2.2204460492503131e-16
#define FLT_MIN 1.17549435e-38F
#define DBL_MIN 2.2250738585072014e-308
#define FLT_TRUE_MIN 1.40129846e-45F
#define DBL_TRUE_MIN 4.9406564584124654e-324
#define LDBL_MAX DBL_MAX
#define LDBL_MIN DBL_MIN
#define LDBL_EPSILON DBL_EPSILON
#define FLT_EVAL_METHOD 0
#endif
"""


def _nl(T, specialized, lo, hi, lowest, digits, digits10, signed, integer, extra=""):
    return f"""template <> struct numeric_limits<{T}> {{
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = {signed}; static constexpr bool is_integer = {integer}; static constexpr bool is_exact = {integer};
  static constexpr int digits = {digits}; static constexpr int digits10 = {digits10}; static constexpr int radix = 2;
  static constexpr bool is_bounded = true;
  __host__ __device__ static constexpr {T} min() noexcept {{ return {lo}; }}
  __host__ __device__ static constexpr {T} max() noexcept {{ return {hi}; }}
  __host__ __device__ static constexpr {T} lowest() noexcept {{ return {lowest}; }}
{extra}}};
"""


def _int(T, lo, hi, bits, signed):
    digits = bits - 1 if signed else bits
    d10 = int(digits * 0.30102999566398120)
    extra = f"""  static constexpr bool is_modulo = {"false" if signed else "true"}; static constexpr bool is_iec559 = false;
  static constexpr bool has_infinity = false; static constexpr bool has_quiet_NaN = false; static constexpr bool has_signaling_NaN = false;
  static constexpr int max_digits10 = 0; static constexpr int min_exponent = 0; static constexpr int max_exponent = 0;
  static constexpr int min_exponent10 = 0; static constexpr int max_exponent10 = 0; static constexpr bool traps = false;
  static constexpr bool tinyness_before = false; static constexpr float_round_style round_style = round_toward_zero;
  static constexpr float_denorm_style has_denorm = denorm_absent; static constexpr bool has_denorm_loss = false;
  __host__ __device__ static constexpr {T} epsilon() noexcept {{ return 0; }}
  __host__ __device__ static constexpr {T} round_error() noexcept {{ return 0; }}
  __host__ __device__ static constexpr {T} infinity() noexcept {{ return 0; }}
  __host__ __device__ static constexpr {T} quiet_NaN() noexcept {{ return 0; }}
  __host__ __device__ static constexpr {T} signaling_NaN() noexcept {{ return 0; }}
  __host__ __device__ static constexpr {T} denorm_min() noexcept {{ return 0; }}
"""
    return _nl(T, True, lo, hi, lo, digits, d10, "true" if signed else "false", "true", extra)


def _flt(T, suffix, ibits, digits, digits10, maxd10, minexp, maxexp, min10, max10, mn, mx, eps, inf, qnan, snan, den):
    extra = f"""  static constexpr bool is_modulo = false; static constexpr bool is_iec559 = true;
  static constexpr bool has_infinity = true; static constexpr bool has_quiet_NaN = true; static constexpr bool has_signaling_NaN = true;
  static constexpr int max_digits10 = {maxd10}; static constexpr int min_exponent = {minexp}; static constexpr int max_exponent = {maxexp};
  static constexpr int min_exponent10 = {min10}; static constexpr int max_exponent10 = {max10}; static constexpr bool traps = false;
  static constexpr bool tinyness_before = false; static constexpr float_round_style round_style = round_to_nearest;
  static constexpr float_denorm_style has_denorm = denorm_present; static constexpr bool has_denorm_loss = false;
  __host__ __device__ static constexpr {T} epsilon() noexcept {{ return {eps}; }}
  __host__ __device__ static constexpr {T} round_error() noexcept {{ return 0.5{suffix}; }}
  __host__ __device__ static constexpr {T} infinity() noexcept {{ return __builtin_bit_cast({T}, {inf}); }}
  __host__ __device__ static constexpr {T} quiet_NaN() noexcept {{ return __builtin_bit_cast({T}, {qnan}); }}
  __host__ __device__ static constexpr {T} signaling_NaN() noexcept {{ return __builtin_bit_cast({T}, {snan}); }}
  __host__ __device__ static constexpr {T} denorm_min() noexcept {{ return __builtin_bit_cast({T}, {den}); }}
"""
    return _nl(T, True, mn, mx, "-" + mx, digits, digits10, "true", "false", extra)


_NUMERIC = "".join(
    [
        _int("bool", "false", "true", 1, False).replace("digits = 1;", "digits = 1;"),
        _int("char", "(-127 - 1)", "127", 8, True),
        _int("signed char", "(-127 - 1)", "127", 8, True),
        _int("unsigned char", "0", "255", 8, False),
        _int("wchar_t", "(-2147483647 - 1)", "2147483647", 32, True),
        _int("char16_t", "0", "65535", 16, False),
        _int("char32_t", "0", "4294967295U", 32, False),
        _int("short", "(-32767 - 1)", "32767", 16, True),
        _int("unsigned short", "0", "65535", 16, False),
        _int("int", "(-2147483647 - 1)", "2147483647", 32, True),
        _int("unsigned int", "0", "4294967295U", 32, False),
        _int("long", "(-9223372036854775807L - 1)", "9223372036854775807L", 64, True),
        _int("unsigned long", "0", "18446744073709551615UL", 64, False),
        _int("long long", "(-9223372036854775807LL - 1)", "9223372036854775807LL", 64, True),
        _int("unsigned long long", "0", "18446744073709551615ULL", 64, False),
        _flt(
            "float",
            "f",
            32,
            24,
            6,
            9,
            -125,
            128,
            -37,
            38,
            "1.17549435e-38f",
            "3.40282347e+38f",
            "1.19209290e-7f",
            "0x7f800000u",
            "0x7fc00000u",
            "0x7fa00000u",
            "0x00000001u",
        ),
        _flt(
            "double",
            "",
            64,
            53,
            15,
            17,
            -1021,
            1024,
            -307,
            308,
            "2.2250738585072014e-308",
            "1.7976931348623157e+308",
            "2.2204460492503131e-16",
            "0x7ff0000000000000ull",
            "0x7ff8000000000000ull",
            "0x7ff4000000000000ull",
            "0x0000000000000001ull",
        ),
    ]
)

#: ``std::numeric_limits`` (``<limits>`` is ``LIMITS_H + FLOAT_H + NUMERIC_LIMITS``)
NUMERIC_LIMITS = (
    r"""
#ifndef __HX_LIMITS
#define __HX_LIMITS
namespace std {
enum float_round_style { round_indeterminate = -1, round_toward_zero = 0, round_to_nearest = 1, round_toward_infinity = 2,
                         round_toward_neg_infinity = 3 };
enum float_denorm_style { denorm_indeterminate = -1, denorm_absent = 0, denorm_present = 1 };
template <class T> struct numeric_limits {
  static constexpr bool is_specialized = false;
  __host__ __device__ static constexpr T min() noexcept { return T(); }
  __host__ __device__ static constexpr T max() noexcept { return T(); }
  __host__ __device__ static constexpr T lowest() noexcept { return T(); }
};
template <class T> struct numeric_limits<const T> : numeric_limits<T> {};
template <class T> struct numeric_limits<volatile T> : numeric_limits<T> {};
template <class T> struct numeric_limits<const volatile T> : numeric_limits<T> {};
"""
    + _NUMERIC
    + """}
#endif
"""
)
