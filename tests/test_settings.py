"""hipexplore.settings: one declaration per HIPEXPLORE_* variable, validated, read at use time,
and the settings page's table (docs/guide/settings.md, moved there from the README) generated from it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from hipexplore import settings
from hipexplore.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


SETTINGS_PAGE = ROOT / "docs" / "guide" / "settings.md"


def _readme_block() -> str:
    """The generated table, on the docs' settings page (the README links to it)."""
    text = SETTINGS_PAGE.read_text()
    m = re.search(r"<!-- settings:begin -->\n(.*?)\n<!-- settings:end -->", text, re.S)
    assert m, "docs/guide/settings.md has no <!-- settings:begin --> ... <!-- settings:end --> block"
    return m.group(1)


def test_readme_table_is_generated_from_settings():
    assert _readme_block() == settings.markdown_table(), (
        "the settings table of docs/guide/settings.md is stale: run `python scripts/gen_docs.py` "
        "(or paste settings.markdown_table() between the markers)"
    )
    assert "docs/guide/settings.md" in (ROOT / "README.md").read_text(), "the README no longer links the settings page"


def test_every_variable_the_package_mentions_is_declared():
    mentioned = set()
    for path in (ROOT / "hipexplore").rglob("*.py"):
        mentioned |= set(re.findall(r"HIPEXPLORE_[A-Z0-9_]*[A-Z0-9]", path.read_text()))
    assert mentioned - set(settings.SETTINGS) == set()
    # and every declared one is in the settings page's table
    block = _readme_block()
    assert [n for n in settings.SETTINGS if f"`{n}`" not in block] == []


def test_only_settings_reads_the_environment_for_hipexplore_variables():
    offenders = []
    for path in (ROOT / "hipexplore").rglob("*.py"):
        if path.name == "settings.py":
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"(environ|getenv)\s*(\.get\(|\[|\()\s*[\"']HIPEXPLORE_", line):
                offenders.append(f"{path.relative_to(ROOT)}:{no}")
    assert offenders == []


@pytest.mark.parametrize(
    "setting,value",
    [
        (settings.COMPILE_TIMEOUT, "nan"),
        (settings.COMPILE_TIMEOUT, "inf"),
        (settings.COMPILE_TIMEOUT, "-1"),
        (settings.COMPILE_TIMEOUT, "0"),
        (settings.COMPILE_TIMEOUT, "abc"),
        (settings.COMPILE_WORKERS, "0"),
        (settings.COMPILE_WORKERS, "2.5"),
        (settings.CACHE_MAX_ENTRIES, "-3"),
        (settings.CACHE_MAX_EVENTS, "many"),
        (settings.CACHE_DISK, "maybe"),
        (settings.REQUIRE_COMPILERS, "2"),
        (settings.LLC_BYTES, "0"),
        (settings.LLC_BYTES, "4MiB"),
    ],
)
def test_bad_values_are_config_errors_naming_variable_value_and_allowed(monkeypatch, setting, value):
    monkeypatch.setenv(setting.name, value)
    with pytest.raises(ConfigError) as err:
        setting.get()
    msg = str(err.value)
    assert setting.name in msg and repr(value) in msg and setting.allowed in msg


@pytest.mark.parametrize(
    "setting,value,expected",
    [
        (settings.COMPILE_TIMEOUT, "7.5", 7.5),
        (settings.COMPILE_TIMEOUT, " 30 ", 30.0),
        (settings.COMPILE_WORKERS, "3", 3),
        (settings.CACHE_MAX_ENTRIES, "0", 0),
        (settings.CACHE_MAX_BYTES, "1_000", 1000),
        (settings.CACHE_DISK, "off", False),
        (settings.CACHE_DISK, "Yes", True),
        (settings.LLC_BYTES, "4194304", 4194304),
        (settings.DEBUG, "anything", True),
        (settings.HIPRTC_LIBRARY, "libhiprtc.so.6", "libhiprtc.so.6"),
        (settings.CACHE_DIR, "/tmp/x", Path("/tmp/x")),
    ],
)
def test_good_values_parse_to_their_type(monkeypatch, setting, value, expected):
    monkeypatch.setenv(setting.name, value)
    got = setting.get()
    assert got == expected and type(got) is type(expected)


def test_unset_or_blank_is_the_default_and_reads_happen_at_use_time(monkeypatch):
    monkeypatch.delenv(settings.COMPILE_TIMEOUT.name, raising=False)
    assert settings.COMPILE_TIMEOUT.get() == 120.0
    monkeypatch.setenv(settings.COMPILE_TIMEOUT.name, "  ")
    assert settings.COMPILE_TIMEOUT.get() == 120.0
    monkeypatch.setenv(settings.COMPILE_TIMEOUT.name, "5")
    assert settings.get("HIPEXPLORE_COMPILE_TIMEOUT") == 5.0  # no value captured at import
    monkeypatch.delenv(settings.COMPILE_WORKERS.name, raising=False)
    import os

    assert settings.COMPILE_WORKERS.get() == max(1, min(4, os.cpu_count() or 1))
    assert settings.CACHE_DISK.get() is True and settings.DEBUG.get() is False
    with pytest.raises(ConfigError, match="HIPEXPLORE_NOPE"):
        settings.get("HIPEXPLORE_NOPE")


def test_bad_timeout_reaches_the_compiler_registry_as_config_error(monkeypatch):
    from hipexplore.compile import registry

    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "nan")
    with pytest.raises(ConfigError, match="HIPEXPLORE_COMPILE_TIMEOUT='nan'"):
        registry.get_compiler("host")


def test_cli_shows_one_line_error_for_a_bad_setting(monkeypatch, tmp_path):
    import sys

    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "HIPEXPLORE_CACHE_DIR": str(tmp_path),
        "HIPEXPLORE_CACHE_DISK_MAX_BYTES": "lots",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "hipexplore", "cache", "stats"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert "HIPEXPLORE_CACHE_DISK_MAX_BYTES='lots'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "value, ok", [("1e-300", False), ("0.05", False), ("0.1", True), ("2", True), ("abc", False), ("1e7", False)]
)
def test_the_launch_timeout_is_bounded_below(monkeypatch, value, ok):
    """``HIPEXPLORE_LAUNCH_TIMEOUT=1e-300`` was taken, and every launch then "faulted" (issue 47.4)."""
    monkeypatch.setenv("HIPEXPLORE_LAUNCH_TIMEOUT", value)
    if ok:
        assert settings.LAUNCH_TIMEOUT.get() == float(value)
        return
    with pytest.raises(ConfigError) as err:
        settings.LAUNCH_TIMEOUT.get()
    assert str(err.value) == (
        f"environment variable HIPEXPLORE_LAUNCH_TIMEOUT={value!r} is invalid: expected a finite "
        f"number of seconds from 0.1 to 1e6"
    )


def test_check_all_reads_every_variable_that_is_set(monkeypatch):
    """What the command line calls first: one bad variable among good ones is named."""
    for name in settings.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    settings.check_all()
    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "30")
    monkeypatch.setenv("HIPEXPLORE_CACHE_MAX_EVENTS", "many")
    with pytest.raises(ConfigError, match=r"HIPEXPLORE_CACHE_MAX_EVENTS='many' is invalid"):
        settings.check_all()
