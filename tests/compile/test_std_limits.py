"""The limits stand-ins (``compile.std_limits``: ``<climits>``, ``<cfloat>``, the generated
``std::numeric_limits``) hold the LP64 device ABI's values, on both runtime compilers.

Why: a wrong limit is a silent wrong answer in a user's kernel (a clamp at the wrong maximum, an
epsilon off by a bit), not a compile error; these checks read the values the compilers folded into
the code, and every arithmetic type's specialization is asserted by the compiler itself.
"""

from __future__ import annotations

import re
import struct

import pytest

from compile.test_std_headers import compile_with_closure
from hipexplore.compile import std_limits
from hipexplore.compile.std_headers import STD_HEADERS

#: every arithmetic type the stand-in specializes: (type, is_signed, is_integer, digits, max as C++)
TYPES = [
    ("bool", "false", "true", 1, "true"),
    ("char", "true", "true", 7, "127"),
    ("signed char", "true", "true", 7, "127"),
    ("unsigned char", "false", "true", 8, "255"),
    ("wchar_t", "true", "true", 31, "2147483647"),
    ("char16_t", "false", "true", 16, "65535"),
    ("char32_t", "false", "true", 32, "4294967295U"),
    ("short", "true", "true", 15, "32767"),
    ("unsigned short", "false", "true", 16, "65535"),
    ("int", "true", "true", 31, "2147483647"),
    ("unsigned int", "false", "true", 32, "4294967295U"),
    ("long", "true", "true", 63, "9223372036854775807L"),
    ("unsigned long", "false", "true", 64, "18446744073709551615UL"),
    ("long long", "true", "true", 63, "9223372036854775807LL"),
    ("unsigned long long", "false", "true", 64, "18446744073709551615ULL"),
    ("float", "true", "false", 24, "3.40282347e+38f"),
    ("double", "true", "false", 53, "1.7976931348623157e+308"),
]


def test_limits_is_the_three_texts_and_each_type_is_specialized_once():
    assert STD_HEADERS["limits"] == std_limits.LIMITS_H + std_limits.FLOAT_H + std_limits.NUMERIC_LIMITS
    assert STD_HEADERS["climits"] is std_limits.LIMITS_H and STD_HEADERS["cfloat"] is std_limits.FLOAT_H
    found = re.findall(r"template <> struct numeric_limits<([^>]+)>", std_limits.NUMERIC_LIMITS)
    assert found == [t for t, *_ in TYPES]


@pytest.mark.parametrize("name", ["nvrtc", "hiprtc"])
def test_every_specialization_says_what_the_device_abi_has(name):
    """The compiler checks each type's sign, integer-ness, digits and maximum (static_assert)."""
    checks = "".join(
        f"static_assert(std::numeric_limits<{t}>::is_specialized && std::numeric_limits<{t}>::is_signed == {signed} && "
        f"std::numeric_limits<{t}>::is_integer == {integer} && std::numeric_limits<{t}>::digits == {digits} && "
        f'std::numeric_limits<{t}>::max() == ({t})({hi}), "{t}");\n'
        for t, signed, integer, digits, hi in TYPES
    )
    text = (
        "#include <limits>\n" + checks + 'static_assert(!std::numeric_limits<void*>::is_specialized, "generic");\n'
        'extern "C" __global__ void k(int* p) { *p = std::numeric_limits<const int>::max(); }\n'
    )
    code, closure = compile_with_closure(name, text)
    assert closure.builtin == ("limits",) and code.binary


VALUES = r"""
#include <cstdint>
#include <climits>
#include <cfloat>
#include <limits>
#include <type_traits>
extern "C" __global__ void k(unsigned* p) {
    p[0] = std::numeric_limits<std::int32_t>::max() == INT32_MAX ? 0x5a5a0001u : 0u;
    p[1] = sizeof(std::int64_t) * 1000u + sizeof(std::uint16_t) * 100u + sizeof(std::intptr_t) + 0x5a5a0000u;
    p[2] = std::is_same<std::make_unsigned<std::int8_t>::type, unsigned char>::value ? 0x5a5a0003u : 0u;
    p[3] = (unsigned)std::numeric_limits<float>::digits * 100u + (unsigned)CHAR_BIT + 0x5a5a0000u;
    p[4] = std::numeric_limits<float>::infinity() > FLT_MAX && std::numeric_limits<double>::quiet_NaN() !=
           std::numeric_limits<double>::quiet_NaN() ? 0x5a5a0005u : 0u;
    p[5] = (unsigned)(std::numeric_limits<std::uint8_t>::max()) + (unsigned)(UINT16_MAX >> 8) * 0x10000u;
}
"""


@pytest.mark.parametrize("name", ["nvrtc", "hiprtc"])
def test_the_values_are_those_of_the_device_abi(name):
    """Constant-folded into the code: the sizes and limits are the LP64 device ABI's."""
    code, _ = compile_with_closure(name, VALUES, mode="ptx" if name == "nvrtc" else "")
    binary = code.binary
    expected = [
        0x5A5A0001,
        0x5A5A0000 + 8000 + 200 + 8,
        0x5A5A0003,
        0x5A5A0000 + 2400 + 8,
        0x5A5A0005,
        255 + 255 * 0x10000,
    ]
    for value in expected:
        found = (
            (
                str(value).encode() in binary
                or f"0x{value:x}".encode() in binary.lower()
                or f"{value:#010x}".encode() in binary.lower()
            )
            if name == "nvrtc"
            else struct.pack("<I", value) in binary
        )
        assert found, f"{value:#x} not in the {name} code"
