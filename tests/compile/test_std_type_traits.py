"""The ``<type_traits>`` stand-in (``compile.std_type_traits``) on both runtime compilers: what it
declares answers as the standard says, and under hiprtc it leaves alone what hiprtc's preamble has.

Why: ROCm 5.2's hiprtc declares ``integral_constant``, ``is_same``, ``is_integral``... in its built-in
preamble, and a second definition is an error there, while NVRTC has none of them; the stand-in is
one text for both. The checks are ``static_assert``s, so the compiler itself says a trait is wrong.
"""

from __future__ import annotations

import re

import pytest

from compile.test_std_headers import compile_with_closure
from hipexplore.compile import std_type_traits
from hipexplore.compile.std_headers import STD_HEADERS

#: what hiprtc's preamble (ROCm 5.2) already declares: the stand-in must not define these there
IN_HIPRTC_PREAMBLE = ("integral_constant", "enable_if", "is_same", "is_integral", "is_floating_point", "is_arithmetic")

TRAITS = r"""#include <type_traits>
struct Base { __host__ __device__ virtual ~Base() {} };
struct Derived : Base {};
enum class Color : unsigned char { red };
union U { int a; float b; };
static_assert(std::is_same<std::remove_cv_t<const volatile int>, int>::value, "remove_cv");
static_assert(std::is_same<std::remove_reference_t<int&&>, int>::value, "remove_reference");
static_assert(std::is_same<std::decay_t<const int[3]>, const int*>::value, "decay");
static_assert(std::is_same<std::make_unsigned_t<short>, unsigned short>::value, "make_unsigned");
static_assert(std::is_same<std::make_signed_t<unsigned long>, long>::value, "make_signed");
static_assert(std::is_same<std::underlying_type_t<Color>, unsigned char>::value, "underlying_type");
static_assert(std::is_same<std::conditional_t<true, int, float>, int>::value, "conditional");
static_assert(std::is_same<std::common_type_t<int, double>, double>::value, "common_type");
static_assert(std::is_integral<long long>::value && !std::is_integral<float>::value, "is_integral");
static_assert(std::is_signed<int>::value && std::is_unsigned<unsigned>::value, "sign");
static_assert(std::is_pointer<int* const>::value && !std::is_pointer<int>::value, "is_pointer");
static_assert(std::is_array<int[2]>::value && std::is_enum<Color>::value && std::is_union<U>::value, "kinds");
static_assert(std::is_base_of<Base, Derived>::value && std::is_polymorphic<Base>::value, "classes");
static_assert(std::is_trivially_copyable<U>::value && !std::is_trivially_copyable<Base>::value, "copyable");
static_assert(std::conjunction<std::true_type, std::is_integral<int>>::value, "conjunction");
static_assert(std::disjunction<std::false_type, std::true_type>::value && std::negation<std::false_type>::value, "logic");
#if __cplusplus >= 201703L
static_assert(std::is_same_v<std::type_identity_t<int>, int> && std::is_convertible_v<Derived*, Base*>, "_v");
#endif
template <class T, std::enable_if_t<std::is_floating_point<T>::value, int> = 0>
__device__ T twice(T x) { return x + x; }
extern "C" __global__ void k(float* p) { *p = twice(*p); }
"""


def test_utility_starts_with_the_traits_and_the_hiprtc_names_are_guarded():
    text = std_type_traits.TYPE_TRAITS
    assert STD_HEADERS["type_traits"] is text and STD_HEADERS["utility"].startswith(text)
    guarded = "".join(re.findall(r"#ifndef __HIPCC_RTC__\n(.*?)#endif", text, re.S))
    for name in IN_HIPRTC_PREAMBLE:
        assert re.search(rf"struct {name}\b", guarded), f"{name} is defined for hiprtc too (its preamble has it)"


@pytest.mark.parametrize("std", [(), ("-std=c++17",)], ids=["default", "c++17"])
@pytest.mark.parametrize("name", ["nvrtc", "hiprtc"])
def test_the_traits_answer_as_the_standard_says(name, std):
    code, closure = compile_with_closure(name, TRAITS, std)
    assert closure.builtin == ("type_traits",) and code.binary
