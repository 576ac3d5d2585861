"""hipexplore.compile.triton_args: a Triton request's target, signature and constexpr values from
the command line, each refusal one line naming the value and what was expected."""

from __future__ import annotations

import pytest

from hipexplore.compile.triton_args import SCALAR_TYPES, check_target, parse_assignments, parse_signature, parse_value
from hipexplore.errors import ConfigError


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "target", ["gfx942", "gfx950", "gfx90a", "gfx1100", "gfx1030", "sm_90", "sm_100", "sm_90a", "sm_120f"]
)
def test_targets_that_look_like_amd_or_nvidia_pass(target):
    assert check_target(target) == target


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "target",
    [
        "",
        "gfx9",
        "gfx9q0",
        "gfxxyz",
        "GFX942",
        "sm90",
        "sm_9",
        "sm_1000",
        "gfx942 ",
        "gfx942:xnack+",
        "cuda",
        None,
        942,
    ],
)
def test_other_targets_are_one_line_naming_them(target):
    with pytest.raises(ConfigError) as exc:
        check_target(target)
    assert str(exc.value) == f"triton target must look like 'gfx942', 'gfx950', 'gfx90a' or 'sm_90'; got {target!r}"


@pytest.mark.timeout(30)
def test_signature_text_and_mapping():
    assert parse_signature("x_ptr:*fp32, y_ptr : *bf16 ,n:i32,") == {"x_ptr": "*fp32", "y_ptr": "*bf16", "n": "i32"}
    assert parse_signature({"a": "**fp16", "_b1": "u8"}) == {"a": "**fp16", "_b1": "u8"}
    assert all(parse_signature(f"v:{t}") == {"v": t} for t in SCALAR_TYPES)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "text, shown",
    [
        ("x_ptr:*float32", "x_ptr:'*float32'"),
        ("n", "n:''"),
        ("1x:i32", "1x:'i32'"),
        ("a-b:i32", "a-b:'i32'"),
        ("n:int", "n:'int'"),
    ],
)
def test_a_bad_signature_entry_names_itself_and_the_types(text, shown):
    with pytest.raises(ConfigError) as exc:
        parse_signature(text)
    msg = str(exc.value)
    assert (
        msg.startswith(f"signature entry {shown} is not NAME:TYPE with TYPE one of i1, ")
        and "e.g. 'x_ptr:*fp32,n:i32'" in msg
    )


@pytest.mark.timeout(30)
def test_an_empty_signature_is_refused():
    for text in ("", " , ", {}):
        with pytest.raises(ConfigError, match="is empty; expected e.g. 'x_ptr:\\*fp32,n:i32'"):
            parse_signature(text)


@pytest.mark.timeout(30)
def test_values_are_bool_int_float_else_text():
    assert parse_value("True") is True and parse_value("false") is False
    assert parse_value("256") == 256 and isinstance(parse_value("256"), int)
    assert parse_value("-3") == -3 and parse_value("0x10") == "0x10"
    assert parse_value("2.5") == 2.5 and parse_value("1e3") == 1000.0 and isinstance(parse_value("1e3"), float)
    assert parse_value("TRUE") == "TRUE" and parse_value("ieee") == "ieee"


@pytest.mark.timeout(30)
def test_assignments_from_items_or_mapping():
    assert parse_assignments(None, "--constexpr") == {}
    assert parse_assignments(["BLOCK=256", " num_warps = 4", "mode=fast", "X=a=b"], "--constexpr") == {
        "BLOCK": 256,
        "num_warps": 4,
        "mode": "fast",
        "X": "a=b",
    }
    assert parse_assignments({"BLOCK": 64, "EVEN": True}, "--option") == {"BLOCK": 64, "EVEN": True}
    with pytest.raises(ConfigError, match=r"^--constexpr 'BLOCK' is not NAME=VALUE \(e.g. BLOCK=256\)$"):
        parse_assignments(["BLOCK"], "--constexpr")
    with pytest.raises(
        ConfigError, match=r"^--option 9x=1: expected an identifier and an int, float, bool or string value$"
    ):
        parse_assignments(["9x=1"], "--option")
    with pytest.raises(ConfigError, match=r"^--option B=\[1\]: expected an identifier"):
        parse_assignments({"B": [1]}, "--option")
