"""``hipexplore.bench.wire_values``: what one value of a frame may be. The writer's cleaning gives
text the reader takes (control characters escaped, cut to its bound); the reader takes each value
only as its declared type (a boolean is no integer, 0 is no boolean, NaN travels as null), objects
only with exactly their keys, and every refusal is one ``WireError`` line naming the value."""

from __future__ import annotations

import math

import pytest

from hipexplore.bench.wire_values import (
    MAX_ITEMS,
    MAX_KEY,
    WireError,
    bool_of,
    clean,
    finite,
    int_of,
    list_of,
    number_of,
    object_of,
    strings_of,
    text_of,
)


def test_what_the_writer_cleans_the_reader_takes():
    for raw in ("\x1b[31mred", "two\nlines", "\u202eevil", "ok", "x" * (MAX_KEY + 100)):
        out = clean(raw, MAX_KEY)
        assert text_of(out, "a name", MAX_KEY) == out and len(out) <= MAX_KEY
    assert clean("a\nb\tc", lines=True) == "a\nb\tc" and clean("a\nb") == "a\\nb"
    assert text_of("a\nb", "a warning", lines=True) == "a\nb"


@pytest.mark.parametrize(
    "call, why",
    [
        (lambda: text_of("\x1b[31m", "a name"), "escape"),
        (lambda: text_of("a\nb", "a name"), "a name"),
        (lambda: text_of(5, "a name"), "must be text"),
        (lambda: text_of("", "a name", empty=False), "a name"),
        (lambda: int_of(True, "n"), "must be an integer"),
        (lambda: int_of(1.0, "n"), "must be an integer"),
        (lambda: int_of(-1, "n", 0), r"in \[0, "),
        (lambda: number_of("1", "x"), "must be a number or null"),
        (lambda: number_of(False, "x"), "must be a number or null"),
        (lambda: bool_of(0, "stopped"), "must be true or false"),
        (lambda: object_of([], "a part", ("a",)), "must be an object"),
        (lambda: object_of({"a": 1, "b": 2}, "a part", ("a",)), "has keys"),
        (lambda: object_of({}, "a part", ("a",), ("b",)), r"optional \['b'\]"),
        (lambda: list_of(list(range(MAX_ITEMS + 1)), "a list"), "at most 4096 items"),
        (lambda: strings_of({"k": 1}, "entries"), "must be text"),
        (lambda: strings_of({"": "v"}, "entries"), "entries key"),
    ],
)
def test_a_value_not_of_its_declared_type_is_one_line(call, why):
    with pytest.raises(WireError, match=why) as err:
        call()
    assert "\n" not in str(err.value)


def test_nan_travels_as_null_and_numbers_keep_their_value():
    assert finite(math.nan) is None and finite(math.inf) is None and finite(1.5) == 1.5 and finite(3) == 3
    assert math.isnan(number_of(None, "x")) and number_of(2, "x") == 2.0
    assert object_of({"a": 1}, "a part", ("a",), ("b",)) == {"a": 1}
    assert strings_of({"k": "v"}, "entries") == {"k": "v"}
