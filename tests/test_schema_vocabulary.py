"""hipexplore.schema's vocabulary of a configuration (issue 48 item 1): the timer as a ``Timer``
(members with their capabilities, one lookup, one error), the cold reference tested only by
``Configuration``, and the key's parts as named tuples; and, scanning the package's source like
tests/bench/test_flush.py, that no timer or reference string compare and no positional slice of a
configuration comes back outside the vocabulary."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from hipexplore import schema
from hipexplore.cli import main
from hipexplore.errors import ConfigError
from hipexplore.schema import COLD_REFERENCE, Configuration, ReferenceKey, Setup, Timer, UntimedKey

PACKAGE = Path(schema.__file__).resolve().parent
VOCABULARY = PACKAGE / "schema.py"


def _found(pattern: re.Pattern[str]) -> list[str]:
    return [
        f"{p.relative_to(PACKAGE)}:{i}: {line.strip()}"
        for p in sorted(PACKAGE.rglob("*.py"))
        if p != VOCABULARY
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]


# -- the source scans -----------------------------------------------------------------------------
_TIMER = r"""["'](?:events|in-kernel)["']"""
#: a timer name compared (== / != / in a literal tuple), or standing in for a missing timer cell
_TIMER_COMPARED = re.compile(
    rf"""(==|!=)\s*{_TIMER}|{_TIMER}\s*(==|!=)|\bin\s*\([^)]*{_TIMER}|fillna\(\s*{_TIMER}"""
    rf"""|["']timer["']\s*,\s*{_TIMER}|\btimer\s*=\s*{_TIMER}"""
)
_REF = r"""(?:COLD_REFERENCE|["']cold-reference["'])"""
#: the cold reference's sentinel compared, looked up or listed anywhere but ``Configuration``
_REFERENCE_COMPARED = re.compile(
    rf"""(==|!=)\s*{_REF}|{_REF}\s*(==|!=)|\bin\s*[(\[{{][^)\]}}]*{_REF}|isin\([^)]*{_REF}"""
    rf"""|{_REF}\s*:"""
)
#: a configuration, its column list or a groupby key over it, cut by position
_SLICED = re.compile(
    r"""COLUMNS\[\s*-?\d*\s*:|\bCONFIG\[\s*-?\d*\s*:|_KEYS\[\s*-?\d*\s*:"""
    r"""|\b(?:c|d|conf|config|configuration)\[\s*-?\d*\s*:\s*-?\d*\s*\]|Configuration\.of\([^)]*\)\["""
)


def test_no_timer_is_compared_as_a_string_outside_the_vocabulary() -> None:
    found = _found(_TIMER_COMPARED)
    assert not found, "\n".join(found)


def test_the_cold_reference_is_tested_only_by_configuration() -> None:
    found = _found(_REFERENCE_COMPARED)
    assert not found, "\n".join(found)


def test_no_positional_slice_of_a_configuration() -> None:
    found = _found(_SLICED)
    assert not found, "\n".join(found)
    assert not re.search(r"COLUMNS\[\s*-?\d*\s*:", VOCABULARY.read_text())  # the vocabulary names its parts too


@pytest.mark.parametrize(
    "line",
    [
        'if conf.timer == "in-kernel":',
        "rows[rows['timer'] != 'events']",
        'x = t if t in ("events", "nan") else None',
        'frame["timer"].fillna("events")',
        'r.get("timer", "events")',
        'c._replace(timer="events")',
    ],
)
def test_the_timer_scan_sees_each_spelling(line: str) -> None:
    assert _TIMER_COMPARED.search(line)


@pytest.mark.parametrize(
    "line",
    [
        'frame[frame["flush"] != COLD_REFERENCE]',
        'if row["flush"] == "cold-reference":',
        '{"none": "no flush", COLD_REFERENCE: "the cold reference"}.get(v)',
        'frame["flush"].isin([COLD_REFERENCE])',
        'if flush in (COLD_REFERENCE, "x"):',
    ],
)
def test_the_reference_scan_sees_each_spelling(line: str) -> None:
    assert _REFERENCE_COMPARED.search(line)


@pytest.mark.parametrize(
    "line",
    [
        "self.counters[tuple(c[:4])] = counted",
        'df.groupby(["p", *Configuration.COLUMNS[2:4]])',
        "keys = Configuration.UNTIMED_COLUMNS[1:]",
        "merged.groupby(CONFIG[1:])",
        "d[1:] == c[1:]",
        "Configuration.of(r)[:4]",
    ],
)
def test_the_slice_scan_sees_each_spelling(line: str) -> None:
    assert _SLICED.search(line)


# -- the timer ------------------------------------------------------------------------------------
def test_timer_of_finds_each_member_and_refuses_others_in_one_line() -> None:
    assert Timer.of("events") is Timer.EVENTS and Timer.of("in-kernel") is Timer.IN_KERNEL
    assert Timer.of(Timer.IN_KERNEL) is Timer.IN_KERNEL
    assert schema.TIMERS == ("events", "in-kernel")
    for bad in ("bogus", "Events", "", None, 3):
        with pytest.raises(ConfigError) as err:
            Timer.of(bad)
        text = str(err.value)
        assert "\n" not in text and repr(bad) in text and "expected one of events, in-kernel" in text, text


def test_other_tools_timers_are_read_from_files_but_not_run() -> None:
    from hipexplore.interop import nvbench_files, pyperf_files

    assert Timer.of_cell("pyperf") is Timer.PYPERF and Timer.of("nvbench-cold", imported=True) is Timer.NVBENCH_COLD
    assert pyperf_files.TIMER == Timer.PYPERF and nvbench_files.TIMER == Timer.NVBENCH_COLD
    assert all(
        t.imported and not (t.default or t.launch_floor or t.timed_kernel) for t in (Timer.PYPERF, Timer.NVBENCH_COLD)
    )
    assert Configuration("bench", 1, "-", "-", "pyperf").timer is Timer.PYPERF
    assert pickle.loads(pickle.dumps(Timer.PYPERF)) is Timer.PYPERF
    with pytest.raises(ConfigError, match="timer 'pyperf' is unknown; expected one of events, in-kernel$"):
        Timer.of("pyperf")  # what --timer and SweepSpec.timers take


def test_each_timer_carries_its_capabilities() -> None:
    e, k = Timer.EVENTS, Timer.IN_KERNEL
    assert e.default and e.launch_floor and not e.timed_kernel
    assert k.timed_kernel and not k.launch_floor and not k.default
    assert e.label and k.label and e.label != k.label
    assert e.name == "events" and type(e.name) is str and str(k) == "in-kernel" and type(str(k)) is str


def test_a_timer_is_its_string_to_sets_pickles_and_json() -> None:
    assert Timer.IN_KERNEL == "in-kernel" and hash(Timer.IN_KERNEL) == hash("in-kernel")
    assert {"events": 1}[Timer.EVENTS] == 1
    assert pickle.loads(pickle.dumps(Timer.IN_KERNEL)) is Timer.IN_KERNEL
    import json

    assert json.dumps([Timer.IN_KERNEL]) == '["in-kernel"]'


def test_a_missing_timer_cell_is_the_default_and_a_bad_one_an_error() -> None:
    for missing in (None, float("nan"), ""):
        assert Timer.of_cell(missing) is Timer.EVENTS
    with pytest.raises(ConfigError, match="timer 'x' is unknown"):
        Timer.of_cell("x")
    frame = pd.DataFrame({"timer": ["in-kernel", None, "events"]})
    assert list(Timer.of_column(frame)) == ["in-kernel", "events", "events"]
    assert list(Timer.defaults_in(frame)) == [False, True, True]
    assert list(Timer.defaults_in(frame.drop(columns=["timer"]))) == [True, True, True]


def test_the_cli_refuses_an_unknown_timer_with_status_2_and_one_line(capsys) -> None:
    try:
        rc = main(
            [
                "bench",
                "triad",
                "--device",
                "host",
                "--no-progress",
                "--size",
                "16KiB",
                "--iterations",
                "8",
                "--timer",
                "bogus",
            ]
        )
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "timer 'bogus' is unknown; expected one of events, in-kernel" in err, err


# -- the configuration ----------------------------------------------------------------------------
def test_a_configuration_holds_a_timer_however_it_is_made() -> None:
    c = Configuration("triad", 4096, "auto", "l2-read", "in-kernel")
    assert c.timer is Timer.IN_KERNEL and Configuration("triad", 4096, "1", "none").timer is Timer.EVENTS
    assert c._replace(timer="events").timer is Timer.EVENTS
    assert pickle.loads(pickle.dumps(c)).timer is Timer.IN_KERNEL
    assert c == ("triad", 4096, "auto", "l2-read", "in-kernel") and hash(c) == hash(
        ("triad", 4096, "auto", "l2-read", "in-kernel")
    )
    assert (
        Configuration.of(
            {"kernel": "triad", "size_bytes": 4096, "rotating_requested": "auto", "flush": "l2-read"}
        ).timer
        is Timer.EVENTS
    )
    with pytest.raises(ConfigError, match="timer 'fast' is unknown"):
        Configuration("triad", 4096, "1", "none", "fast")
    assert c.describe().endswith(" timer=in-kernel") and "timer" not in c._replace(timer="events").describe()


def test_the_keys_are_named_tuples_spelled_by_the_columns() -> None:
    c = Configuration("triad", 4096, "auto", "l2-read", "in-kernel")
    assert c.untimed_key == UntimedKey("triad", 4096, "auto", "l2-read") and c.untimed_key.flush == "l2-read"
    assert c.reference_key == ReferenceKey("triad", 4096, "in-kernel") == ("triad", 4096, "in-kernel")
    assert c.setup == Setup(4096, "auto", "l2-read", "in-kernel") and c.setup == c._replace(kernel="copy").setup
    column = dict(zip(Configuration._fields, Configuration.COLUMNS))
    for key in (UntimedKey, ReferenceKey, Setup):
        assert key.COLUMNS == tuple(column[f] for f in key._fields), key
    assert (
        Configuration.UNTIMED_COLUMNS == UntimedKey.COLUMNS and Configuration.REFERENCE_COLUMNS == ReferenceKey.COLUMNS
    )
    assert Configuration.SETUP_COLUMNS == Setup.COLUMNS
    assert set(Configuration.CACHE_COLUMNS) < set(Configuration.COLUMNS)
    groups = pd.DataFrame([c.columns()]).groupby(list(Configuration.COLUMNS))
    assert [Configuration.of_key(k) for k, _g in groups] == [c]


def test_the_reference_is_marked_in_a_value_a_row_a_frame_and_a_column() -> None:
    c = Configuration("triad", 4096, "auto", "l2-read")
    ref = Configuration.reference_of("triad", 4096)
    assert ref == c.reference() and ref.is_reference and not c.is_reference and ref.flush == COLD_REFERENCE
    assert Configuration.marks_reference(COLD_REFERENCE) and not Configuration.marks_reference("l2-read")
    assert Configuration.marks_reference(ref.columns()) and not Configuration.marks_reference(c.columns())
    frame = pd.DataFrame([c.columns(), ref.columns()])
    assert list(Configuration.marks_reference(frame)) == [False, True]
    assert list(Configuration.marks_reference(frame["flush"])) == [False, True]


def test_the_files_keep_their_strings(tmp_path) -> None:
    # a timer written through a frame reads back as the same plain string (the files do not change)
    c = Configuration("triad", 4096, "auto", "l2-read", Timer.IN_KERNEL)
    frame = pd.DataFrame([{**c.columns(), "median_s": 1.0}, {**c.reference().columns(), "median_s": 2.0}])
    assert all(type(v) is str for v in c.columns().values() if isinstance(v, str))
    path = tmp_path / "s.parquet"
    schema.write_parquet(frame, path, schema.SUMMARY)
    back = pq.read_table(path).to_pandas()
    assert list(back["timer"]) == ["in-kernel", "in-kernel"] and list(back["flush"]) == ["l2-read", "cold-reference"]
    assert Configuration.of_frame(back) == [c, c.reference()]
