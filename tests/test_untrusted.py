"""hipexplore.untrusted: bounded JSON and printable names (what run files, tuning lists and
settings read through it). Each refusal is one ConfigError line naming the value and what was
expected; these pin the bounds themselves, which the CLI tests reach only through one reader."""

from __future__ import annotations

import json
import time

import pytest

from hipexplore.errors import ConfigError
from hipexplore.untrusted import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_NAME,
    check_name,
    escaped,
    load_json,
    nesting_depth,
    shown,
)


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and "\x1b" not in text
    return text


@pytest.mark.timeout(30)
def test_shown_escapes_and_cuts_text_and_sizes_containers():
    assert shown("a\nb\x1b[31m") == ascii("a\nb\x1b[31m") and "\n" not in shown("a\nb")
    long = "x" * 200
    assert shown(long) == f"{ascii('x' * 80)}... (200 characters)"
    assert shown([1, 2, 3]) == "an array of 3 item(s)" and shown({"a": 1}) == "an object of 1 key(s)"
    assert shown(10**23) == repr(10**23)
    assert shown(10**30) == "an integer of about 31 digits"
    assert shown(True) == "True" and shown(None) == "None" and shown(1.5) == "1.5"
    assert shown(b"x") == "a bytes"


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "bad, said",
    [
        ("a\nb", "a newline (U+000A) at character 2"),
        ("ok\x1b[2J", "an escape (U+001B; ANSI terminal sequences start with it) at character 3"),
        ("x\x00", "a NUL (U+0000) at character 2"),
        ("\ud800", "a lone surrogate (U+D800"),
        ("ab\u202ecd", "a bidirectional control (U+202E"),
        ("\x7f", "a control character (U+007F)"),
        ("\ufeffname", "a byte-order mark (U+FEFF) at character 1"),
    ],
)
def test_check_name_refuses_unprintable_characters_by_name_and_place(bad, said):
    with pytest.raises(ConfigError) as exc:
        check_name(bad, "problem name")
    text = one_line(exc)
    assert text.startswith("problem name ") and said in text and "expected printable text" in text


@pytest.mark.timeout(30)
def test_escaped_shows_text_as_it_reads_with_every_control_written_out():
    """Text another process wrote (a worker's warning, its stderr): no escape, line break or
    bidirectional override reaches the terminal; printable text, accents included, is left as it is."""
    assert escaped("\x1b[1;32mok\r\nnext \u202eevil\ud800 µs") == "\\x1b[1;32mok\\r\\nnext \\u202eevil\\ud800 µs"
    assert escaped("a\nb\tc\x07", keep="\n\t") == "a\nb\tc\\x07"
    assert escaped("x" * 100, limit=10) == "x" * 10 + "... (90 more characters)"
    check_name(escaped("\x00\x1b\x9b\u2028\ufeff"), "escaped text")  # what comes out is printable


def test_check_name_bounds_type_emptiness_and_length():
    assert check_name("gemm_4096", "name") == "gemm_4096"
    assert check_name("", "tag", allow_empty=True) == ""
    assert check_name("é ü 漢字", "name") == "é ü 漢字"  # printable non-ASCII is fine
    with pytest.raises(ConfigError, match=r"^name must be text; got 5$"):
        check_name(5, "name")
    with pytest.raises(ConfigError, match=r"^name is empty; expected a name$"):
        check_name("", "name")
    assert check_name("y" * MAX_NAME, "name")
    with pytest.raises(ConfigError, match=rf"is longer than {MAX_NAME} characters$"):
        check_name("y" * (MAX_NAME + 1), "name")
    with pytest.raises(ConfigError, match="is longer than 4 characters"):
        check_name("abcde", "name", limit=4)


@pytest.mark.timeout(30)
def test_nesting_depth_skips_strings_and_stops_early():
    assert nesting_depth('{"a": [1, [2, {"b": 3}]]}') == 4
    assert nesting_depth('{"a": "[[[[[[[[[[{{{{"}') == 1  # brackets inside strings do not count
    assert nesting_depth('["\\"[[["]') == 1  # an escaped quote does not end the string
    assert nesting_depth("[" * 100 + "]" * 100, stop_after=5) == 6  # one past the bound, then it stops
    assert nesting_depth("[" * 5000 + "]" * 5000) == 5000  # the NumPy path (more than 4096 brackets)
    assert nesting_depth("[]" * 3000) == 1


@pytest.mark.timeout(30)
def test_load_json_within_bounds_is_json_loads():
    doc = {"a": [1, -2, 3.5, True, None, "x"], "b": {"c": 2**63 - 1, "d": -(10**18)}}
    text = json.dumps(doc)
    assert load_json(text, "f.json") == json.loads(text) == doc
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert load_json(ok, "f.json") == json.loads(ok)


@pytest.mark.timeout(30)
def test_load_json_refuses_deep_nesting_in_linear_time_without_recursion():
    t0 = time.process_time()
    with pytest.raises(ConfigError) as exc:
        load_json("[" * 100_000 + "]" * 100_000, "run.json line 3")
    assert one_line(exc) == (
        f"run.json line 3: JSON nested more than {MAX_DEPTH} levels deep; expected at most {MAX_DEPTH}"
    )
    assert time.process_time() - t0 < 5  # not a RecursionError after a long parse (CPU time: the host is shared)
    deeper = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with pytest.raises(ConfigError, match="nested more than"):
        load_json(deeper, "f")
    assert load_json(deeper, "f", max_depth=MAX_DEPTH + 1)


@pytest.mark.timeout(30)
def test_load_json_refuses_huge_integers_and_non_finite_numbers_naming_where():
    big = "1" * (MAX_INT_DIGITS + 1)
    with pytest.raises(ConfigError) as exc:
        load_json(f'{{"meta": {{"a": [0, 1, 2, {big}]}}}}', "list.json")
    text = one_line(exc)
    assert text.startswith("list.json: 'meta' -> 'a' -> [3]: an integer of 20 digits") and "expected at most 19" in text
    assert load_json("9" * MAX_INT_DIGITS, "f") == int("9" * MAX_INT_DIGITS)
    assert load_json("-" + "9" * MAX_INT_DIGITS, "f") == -int("9" * MAX_INT_DIGITS)  # the sign is not a digit
    with pytest.raises(ConfigError, match=r"^f: \[1\]: NaN, not a JSON number; expected a finite number$"):
        load_json("[1, NaN]", "f")
    with pytest.raises(ConfigError, match=r"^f: 'x': Infinity, not a JSON number"):
        load_json('{"x": Infinity}', "f")
    with pytest.raises(ConfigError, match=r"^f: '1e999', not a finite number; expected a finite number$"):
        load_json("1e999", "f")
    huge = "7" * 5000  # beyond Python's own int-digits limit: still this line, not its ValueError
    with pytest.raises(ConfigError, match="an integer of 5000 digits"):
        load_json(huge, "f")


@pytest.mark.timeout(30)
def test_load_json_syntax_error_is_one_line_with_the_hint():
    with pytest.raises(ConfigError) as exc:
        load_json('{"a": 1,,}', "s.json", hint="write the list with hipexplore tune --save")
    text = one_line(exc)
    assert text.startswith("s.json: not JSON (") and "at column" in text
    assert text.endswith("; write the list with hipexplore tune --save")
