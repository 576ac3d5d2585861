"""hipexplore.cli.bench_values: how ``hipexplore bench`` reads each option's text. Each type returns
the value the sweep takes, or refuses with a message that says what was expected (argparse alone
says only "invalid value"). The same refusals through the real command line, one line and exit status
2: tests/cli/test_inputs.py and tests/cli/test_messages.py."""

from __future__ import annotations

import argparse

import pytest

from hipexplore.bench.spec import options
from hipexplore.cli import bench_values as bv


def test_csv_items_drops_empty_parts_and_spaces():
    assert bv.csv_items(" 1MiB, ,16MiB,") == ["1MiB", "16MiB"] and bv.csv_items(" , ") == []


@pytest.mark.parametrize("text, value", [("auto", None), (" ON ", True), ("off", False)])
def test_floor_mode_reads_auto_on_off(text, value):
    assert bv.floor_mode(text) is value


def test_floor_mode_refuses_anything_else():
    with pytest.raises(argparse.ArgumentTypeError, match="expected auto, on or off, got 'yes'"):
        bv.floor_mode("yes")


def test_lead_count_is_random_or_a_count_up_to_the_maximum():
    assert bv.lead_count(" Random ") == "random" and bv.lead_count("0") == 0
    assert bv.lead_count(str(bv.MAX_UNTIMED)) == bv.MAX_UNTIMED
    with pytest.raises(argparse.ArgumentTypeError, match="expected random or an integer >= 0, got '-1'"):
        bv.lead_count("-1")
    with pytest.raises(argparse.ArgumentTypeError, match=f"1025 is more than the maximum, {bv.MAX_UNTIMED:,}"):
        bv.lead_count("1025")


def test_a_very_long_number_is_shortened_in_the_message():
    with pytest.raises(argparse.ArgumentTypeError) as got:
        bv.trail_count("9" * 500)
    assert str(got.value) == f"{'9' * 20}... (500 digits) is more than the maximum, 1,024"


def test_trail_count_is_an_integer_from_zero():
    assert bv.trail_count(" 0 ") == 0 and bv.trail_count("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="expected an integer >= 0, got 'x'"):
        bv.trail_count("x")


def test_positive_count_takes_underscores_and_keeps_to_its_maximum():
    parse = bv.positive_count("--iterations", bv.MAX_ITERATIONS)
    assert parse("1_000") == 1000 and parse(str(bv.MAX_ITERATIONS)) == bv.MAX_ITERATIONS
    for bad in ("0", "-3", "1.5", "many"):
        with pytest.raises(argparse.ArgumentTypeError, match=f"expected a positive integer, got '{bad}'"):
            parse(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="is more than the maximum, 1,000,000"):
        parse("1000001")
    assert bv.positive_count("--chunk")("99999999") == 99999999  # no maximum: any positive count


def test_launch_dims_checks_plain_numbers_and_leaves_expressions_to_the_kernel():
    parse = bv.launch_dims("--grid")
    assert parse("ceil(n/256)") == "ceil(n/256)" and parse("cols/32,rows/32") == "cols/32,rows/32"
    assert parse("32,32") == "32,32"
    with pytest.raises(argparse.ArgumentTypeError, match="expected a positive integer, got '0'"):
        parse("32,0")
    with pytest.raises(argparse.ArgumentTypeError):  # an unbalanced bracket: the geometry's own message
        parse("min(n,")


def test_size_bytes_reads_units_and_says_what_a_size_looks_like():
    parse = bv.size_bytes("--llc-bytes")
    assert parse("32MiB") == 32 << 20 and parse("4096") == 4096
    with pytest.raises(argparse.ArgumentTypeError, match="expected a positive size such as 32MiB"):
        parse("big")


def test_mode_factors_reads_mode_factor_pairs():
    assert bv.mode_factors("l2-read=3, l2-write=1.5") == {"l2-read": 3.0, "l2-write": 1.5}
    with pytest.raises(argparse.ArgumentTypeError, match="expected MODE=FACTOR pairs"):
        bv.mode_factors("l2-read")


@pytest.mark.parametrize(
    "value, text", [(True, "on"), (False, "off"), (None, "auto"), (("events",), "events"), ((), "none"), (48, "48")]
)
def test_shown_is_how_the_help_writes_a_default(value, text):
    assert bv.shown(value) == text


def test_every_sweepspec_option_has_a_type_that_reads_its_own_default_text():
    """Each field's command-line form, from its annotation: the text ``--help`` shows as the default
    (``shown``) reads back to that default, so a new kind of field cannot go unnoticed."""
    by_name = {f.name: f for f in options()}
    assert bv.field_type(by_name["floor"]) is bv.floor_mode and bv.field_type(by_name["chunk_lead"]) is bv.lead_count
    assert bv.field_type(by_name["chunk_trail"]) is bv.trail_count and bv.field_type(by_name["timers"]) is bv.csv_items
    assert bv.field_type(by_name["flush_factors"]) is bv.mode_factors and bv.field_type(by_name["warmup_s"]) is float
    reads = bv.field_type(by_name["reference_samples"])
    assert reads("48") == 48
    with pytest.raises(argparse.ArgumentTypeError, match="is more than the maximum"):
        reads(str(by_name["reference_samples"].metadata["most"] + 1))
    for f in options():
        if str(f.type) in ("bool", "tuple[tuple[str, float], ...]") or f.metadata.get("check") is not None:
            continue  # a --no- flag; pairs shown as "none"; a field that reads its own text (below)
        if f.default is None and str(f.type) != "bool | None":
            continue  # a number left unset when not given (--clock-warmup-s): "auto" is shown, not typed
        read = bv.field_type(f)(bv.shown(f.default))
        assert read == (list(f.default) if isinstance(f.default, tuple) else f.default), f.name
    units = bv.field_type(by_name["units"])
    assert units("auto") == "auto" and units("3") == 3
    with pytest.raises(argparse.ArgumentTypeError):  # the field's own check, its message kept
        units("lots")
