"""Stand-ins for the C/C++ standard headers the runtime compilers lack (issue 26, item 1).

NVRTC 13 ships no standard header (``#include <cstdint>``: "could not open source file"; its
built-ins are the global ``size_t``/``ptrdiff_t`` and the math functions); ROCm 5.2's hiprtc has a
few ``std::`` names in its preamble and fails on the host's libstdc++ headers. Real kernels use
``std::int32_t``, ``std::numeric_limits``, ``std::is_same``..., so ``includes.BUILTIN_HEADERS``
supplies these texts under the standard spellings when no file of the user's has that name.
They declare what the CUDA/HIP device runtimes provide, with the LP64 device ABI's sizes and
limits, in ``std::`` and at global scope, using only what both front ends have (EDG lacks
``__is_arithmetic``/``__builtin_huge_valf``; both have ``__builtin_bit_cast``), and skip under
``__HIPCC_RTC__`` what hiprtc's preamble already defines (a second definition is an error).

This module holds the table (``STD_HEADERS``) and the small texts; the two large ones have modules
of their own: ``std_type_traits`` (``<type_traits>``) and ``std_limits`` (``<climits>``, ``<cfloat>``,
the generated ``std::numeric_limits``). Every text is part of the key of a request that includes it.
"""

from __future__ import annotations

from .std_limits import FLOAT_H, LIMITS_H, NUMERIC_LIMITS
from .std_type_traits import TYPE_TRAITS

# --- stand-ins for the C/C++ standard headers the runtime compilers lack ---------------------------
# hiprtc (ROCm 5.2) already declares in its built-in preamble: ::int32_t/int64_t/uint32_t/uint64_t
# (and std:: using-declarations), std::size_t, integral_constant, bool_constant, true_type,
# false_type, enable_if, is_integral, is_arithmetic, is_floating_point, is_signed, is_same,
# is_scalar, is_convertible; those are skipped under __HIPCC_RTC__ (a second definition is an error).
_STDINT = r"""
#ifndef __HX_STDINT
#define __HX_STDINT
typedef signed char int8_t; typedef short int16_t; typedef unsigned char uint8_t; typedef unsigned short uint16_t;
#ifndef __HIPCC_RTC__
typedef int int32_t; typedef long long int64_t; typedef unsigned int uint32_t; typedef unsigned long long uint64_t;
#endif
typedef int8_t int_least8_t; typedef int16_t int_least16_t; typedef int32_t int_least32_t; typedef int64_t int_least64_t;
typedef uint8_t uint_least8_t; typedef uint16_t uint_least16_t; typedef uint32_t uint_least32_t; typedef uint64_t uint_least64_t;
typedef int8_t int_fast8_t; typedef long int_fast16_t; typedef long int_fast32_t; typedef int64_t int_fast64_t;
typedef uint8_t uint_fast8_t; typedef unsigned long uint_fast16_t; typedef unsigned long uint_fast32_t; typedef uint64_t uint_fast64_t;
typedef long intptr_t; typedef unsigned long uintptr_t; typedef long long intmax_t; typedef unsigned long long uintmax_t;
#define INT8_MIN (-127 - 1)
#define INT16_MIN (-32767 - 1)
#define INT32_MIN (-2147483647 - 1)
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT8_MAX 127
#define INT16_MAX 32767
#define INT32_MAX 2147483647
#define INT64_MAX 9223372036854775807LL
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
#define UINT64_MAX 18446744073709551615ULL
#define INT_LEAST8_MIN INT8_MIN
#define INT_LEAST16_MIN INT16_MIN
#define INT_LEAST32_MIN INT32_MIN
#define INT_LEAST64_MIN INT64_MIN
#define INT_LEAST8_MAX INT8_MAX
#define INT_LEAST16_MAX INT16_MAX
#define INT_LEAST32_MAX INT32_MAX
#define INT_LEAST64_MAX INT64_MAX
#define UINT_LEAST8_MAX UINT8_MAX
#define UINT_LEAST16_MAX UINT16_MAX
#define UINT_LEAST32_MAX UINT32_MAX
#define UINT_LEAST64_MAX UINT64_MAX
#define INT_FAST8_MIN INT8_MIN
#define INT_FAST16_MIN (-9223372036854775807L - 1)
#define INT_FAST32_MIN (-9223372036854775807L - 1)
#define INT_FAST64_MIN INT64_MIN
#define INT_FAST8_MAX INT8_MAX
#define INT_FAST16_MAX 9223372036854775807L
#define INT_FAST32_MAX 9223372036854775807L
#define INT_FAST64_MAX INT64_MAX
#define UINT_FAST8_MAX UINT8_MAX
#define UINT_FAST16_MAX 18446744073709551615UL
#define UINT_FAST32_MAX 18446744073709551615UL
#define UINT_FAST64_MAX UINT64_MAX
#define INTPTR_MIN (-9223372036854775807L - 1)
#define INTPTR_MAX 9223372036854775807L
#define UINTPTR_MAX 18446744073709551615UL
#define INTMAX_MIN INT64_MIN
#define INTMAX_MAX INT64_MAX
#define UINTMAX_MAX UINT64_MAX
#ifndef SIZE_MAX
#define SIZE_MAX 18446744073709551615UL
#endif
#define PTRDIFF_MIN (-9223372036854775807L - 1)
#define PTRDIFF_MAX 9223372036854775807L
#define INT8_C(c) c
#define INT16_C(c) c
#define INT32_C(c) c
#define INT64_C(c) c ## LL
#define UINT8_C(c) c
#define UINT16_C(c) c
#define UINT32_C(c) c ## U
#define UINT64_C(c) c ## ULL
#define INTMAX_C(c) c ## LL
#define UINTMAX_C(c) c ## ULL
#ifdef __cplusplus
namespace std {
using ::int8_t; using ::int16_t; using ::uint8_t; using ::uint16_t;
#ifndef __HIPCC_RTC__
using ::int32_t; using ::int64_t; using ::uint32_t; using ::uint64_t;
#endif
using ::int_least8_t; using ::int_least16_t; using ::int_least32_t; using ::int_least64_t;
using ::uint_least8_t; using ::uint_least16_t; using ::uint_least32_t; using ::uint_least64_t;
using ::int_fast8_t; using ::int_fast16_t; using ::int_fast32_t; using ::int_fast64_t;
using ::uint_fast8_t; using ::uint_fast16_t; using ::uint_fast32_t; using ::uint_fast64_t;
using ::intptr_t; using ::uintptr_t; using ::intmax_t; using ::uintmax_t;
}
#endif
#endif
"""

_STDDEF = r"""
#ifndef __HX_STDDEF
#define __HX_STDDEF
#ifndef NULL
#define NULL 0
#endif
#ifndef offsetof
#define offsetof(type, member) __builtin_offsetof(type, member)
#endif
#ifdef __HIPCC_RTC__
typedef decltype((int*)0 - (int*)0) ptrdiff_t;
#endif
#ifdef __cplusplus
namespace std {
#ifndef __HIPCC_RTC__
using ::size_t;
#endif
using ::ptrdiff_t;
typedef decltype(nullptr) nullptr_t;
typedef double max_align_t;
#if __cplusplus >= 201703L
enum class byte : unsigned char {};
#endif
}
#endif
#endif
"""


_MATH_FUNCS = (
    "abs fabs fabsf fmod fmodf remainder remainderf remquo remquof fma fmaf fmax fmaxf fmin fminf fdim fdimf "
    "exp expf exp2 exp2f expm1 expm1f log logf log10 log10f log2 log2f log1p log1pf pow powf sqrt sqrtf cbrt cbrtf "
    "hypot hypotf sin sinf cos cosf tan tanf asin asinf acos acosf atan atanf atan2 atan2f sinh sinhf cosh coshf "
    "tanh tanhf asinh asinhf acosh acoshf atanh atanhf erf erff erfc erfcf tgamma tgammaf lgamma lgammaf ceil ceilf "
    "floor floorf trunc truncf round roundf lround lroundf llround llroundf nearbyint nearbyintf rint rintf lrint "
    "lrintf llrint llrintf frexp frexpf ldexp ldexpf modf modff scalbn scalbnf scalbln scalblnf ilogb ilogbf logb "
    "logbf nextafter nextafterf copysign copysignf nan nanf isnan isinf isfinite signbit labs llabs"
).split()

_CMATH = (
    r"""
#ifndef __HX_CMATH
#define __HX_CMATH
#ifndef INFINITY
#define INFINITY (__builtin_bit_cast(float, 0x7f800000u))
#endif
#ifndef NAN
#define NAN (__builtin_bit_cast(float, 0x7fc00000u))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF INFINITY
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (__builtin_bit_cast(double, 0x7ff0000000000000ull))
#endif
#ifndef M_PI
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#endif
namespace std {
"""
    + "\n".join(f"using ::{f};" for f in _MATH_FUNCS)
    + """
}
#endif
"""
)

_ALGORITHM = r"""
#ifndef __HX_ALGORITHM
#define __HX_ALGORITHM
namespace std {
template <class T> __host__ __device__ constexpr const T& min(const T& a, const T& b) { return b < a ? b : a; }
template <class T> __host__ __device__ constexpr const T& max(const T& a, const T& b) { return a < b ? b : a; }
template <class T> __host__ __device__ constexpr const T& clamp(const T& v, const T& lo, const T& hi) { return v < lo ? lo : (hi < v ? hi : v); }
template <class T> __host__ __device__ void swap(T& a, T& b) { T t(static_cast<T&&>(a)); a = static_cast<T&&>(b); b = static_cast<T&&>(t); }
}
#endif
"""

_UTILITY_EXTRA = r"""
#ifndef __HX_UTILITY
#define __HX_UTILITY
namespace std {
template <class T> __host__ __device__ void swap(T& a, T& b) { T t(static_cast<T&&>(a)); a = static_cast<T&&>(b); b = static_cast<T&&>(t); }
template <class T1, class T2> struct pair {
  typedef T1 first_type; typedef T2 second_type;
  T1 first; T2 second;
  __host__ __device__ constexpr pair() : first(), second() {}
  __host__ __device__ constexpr pair(const T1& a, const T2& b) : first(a), second(b) {}
};
template <class T1, class T2> __host__ __device__ constexpr pair<T1, T2> make_pair(T1 a, T2 b) { return pair<T1, T2>(a, b); }
}
#endif
"""
_ALGORITHM = _ALGORITHM.replace(
    "template <class T> __host__ __device__ void swap(T& a, T& b) { T t(static_cast<T&&>(a)); a = static_cast<T&&>(b); b = static_cast<T&&>(t); }\n",
    "",
)

#: The standard headers both runtime compilers lack (NVRTC 13 ships none; ROCm 5.2's hiprtc has a
#: few names built in and fails on the host's libstdc++ headers), by include spelling: what the
#: CUDA/HIP device runtime headers provide (sizes and limits of the LP64 device ABI both share).
STD_HEADERS: dict[str, str] = {
    "cstdint": _STDINT,
    "stdint.h": _STDINT,
    "cstddef": _STDDEF,
    "stddef.h": _STDDEF,
    "climits": LIMITS_H,
    "limits.h": LIMITS_H,
    "cfloat": FLOAT_H,
    "float.h": FLOAT_H,
    "type_traits": TYPE_TRAITS,
    "limits": LIMITS_H + FLOAT_H + NUMERIC_LIMITS,
    "cmath": _CMATH,
    "math.h": _CMATH,
    "utility": TYPE_TRAITS + _UTILITY_EXTRA,
    "algorithm": _ALGORITHM + _UTILITY_EXTRA,
}
