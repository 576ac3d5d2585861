"""Every ``HIPEXPLORE_*`` environment setting, declared once: name, type, default, one-line doc.

Why one module: the variables used to be read in ten files and parsed three ways, and some of them
were missing from the README. Here each one is a typed ``Setting`` whose ``get()`` reads the
environment *at use time* (never at import: tests and notebooks change variables with
``monkeypatch.setenv`` / ``os.environ`` and expect the next call to see them), and whose bad values
raise one kind of error: a ``ConfigError`` naming the variable, the value and what is allowed.
The README's settings table is generated from ``SETTINGS`` (``markdown_table()``; a test compares).

The rest of the package reads these variables only through this module. Non-``HIPEXPLORE_``
variables (``CC``, ``ROCM_PATH``, ``XDG_CACHE_HOME``) stay with the code that honours them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")

#: bounds of numeric values: an integer setting (a byte cap, an event count) at most 2**62 and of at
#: most 19 digits, read before int() (which refuses 4,300 digits with its own traceback), a size in
#: bytes at most 2**50; a worker
#: count at most 1024; seconds at most a million (11.6 days: a larger timeout overflowed the
#: C time type of a wait and ended in an OverflowError traceback)
MAX_INT = 1 << 62
MAX_BYTES = 1 << 50  # a cache size (LLC) of a petabyte
MAX_WORKERS = 1024
MAX_SECONDS = 1e6
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One environment variable. ``get()`` returns the parsed value, or the default when the
    variable is unset or blank; a value ``parse`` rejects raises ``ConfigError``."""

    name: str
    kind: str  #: int, seconds, flag, switch, path, text
    default: Any  #: the value when unset (or a zero-argument callable computing it)
    doc: str  #: one line, for the README table
    allowed: str  #: what a valid value looks like (used in the error message)
    parse: Callable[[str], Any]
    default_doc: str = ""  #: how the default reads in the README (else repr-like of default)

    def raw(self) -> str | None:
        """The variable's text, stripped; None when it is unset or blank."""
        value = os.environ.get(self.name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def is_set(self) -> bool:
        return self.raw() is not None

    def get(self) -> T:
        raw = self.raw()
        if raw is None:
            return self.default() if callable(self.default) else self.default
        try:
            return self.parse(raw)
        except (ValueError, TypeError, OverflowError):
            raise ConfigError(
                f"environment variable {self.name}={_cut(self.shown(os.environ.get(self.name) or ''))} is invalid: "
                f"expected {self.allowed}"
            ) from None

    def shown(self, value: str) -> str:
        """``value`` as a message may print it: a URL's password and a secret are never shown."""
        if self.kind == "url":
            return redacted_url(value)
        if "SECRET" in self.name:
            return "***"
        return value

    def default_text(self) -> str:
        if self.default_doc:
            return self.default_doc
        if self.default is None:
            return "unset"
        if isinstance(self.default, bool):
            return "1" if self.default else "0"
        return str(self.default)


def _cut(value: str) -> str:
    """A value as a one-line message shows it: escaped (no newline or terminal escape reaches the
    terminal) and cut short (a 100,000-character value is named, not printed)."""
    return ascii(value) if len(value) <= 80 else f"{ascii(value[:80])}... ({len(value)} characters)"


# -- parsers: each raises ValueError for a value it does not allow ------------------------------
def _int(raw: str, least: int, most: int) -> int:
    text = raw.replace("_", "")
    if len(text.lstrip("+-")) > 19:  # before int(): bounded work, and no int() message of its own
        raise ValueError(raw)
    value = int(text)
    if not least <= value <= most:
        raise ValueError(raw)
    return value


def _non_negative_int(raw: str) -> int:
    return _int(raw, 0, MAX_INT)


def _bytes(raw: str) -> int:
    return _int(raw, 1, MAX_BYTES)


def _workers(raw: str) -> int:
    return _int(raw, 1, MAX_WORKERS)


def _positive_seconds(raw: str, least: float | None = None) -> float:
    """Seconds > 0, or >= ``least`` where the setting has a lower bound; at most ``MAX_SECONDS``."""
    value = float(raw)
    low_ok = value > 0 if least is None else value >= least
    if not (math.isfinite(value) and low_ok and value <= MAX_SECONDS):
        raise ValueError(raw)
    return value


def _flag(raw: str) -> bool:
    value = raw.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(raw)


def _switch(raw: str) -> bool:
    return raw.lower() not in _FALSE  # any other non-blank value turns it on (0/false/no/off keep it off)


def _path(raw: str) -> Path:
    return Path(raw).expanduser()


def _text(raw: str) -> str:
    return raw


def _tristate(raw: str) -> str:
    """``default``, ``on`` or ``off`` (1/0, true/false, yes/no as on/off)."""
    value = raw.lower()
    if value in ("default", "on", "off"):
        return value
    if value in _TRUE:
        return "on"
    if value in _FALSE:
        return "off"
    raise ValueError(raw)


def _default_workers() -> int:
    try:  # the CPUs this process may run on (affinity, cgroup cpusets), not the host's count
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


SETTINGS: dict[str, Setting] = {}


def _shared(raw: str) -> str:
    value = raw.lower()
    if value in ("group", "private"):
        return value
    if value in _FALSE:
        return "private"
    raise ValueError(raw)


def _redis_url(raw: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(raw)
    # redis:// and rediss:// need a host (redis-py would quietly use localhost for 'redis:///0');
    # unix:// needs the socket's path
    if parts.scheme in ("redis", "rediss"):
        if not parts.hostname:
            raise ValueError(raw)
    elif parts.scheme != "unix" or parts.path in ("", "/"):
        raise ValueError(raw)
    if parts.port is not None and not 0 < parts.port < 65536:  # .port raises ValueError past 65535
        raise ValueError(raw)
    return raw


def redacted_url(url: str) -> str:
    """The URL without a password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        port = parts.port
    except ValueError:  # an unparsable port: say nothing of what follows the scheme
        return url.split("://", 1)[0] + "://***"
    netloc = f"{parts.username or ''}:***@{parts.hostname or ''}" + (f":{port}" if port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _declare(
    name: str, kind: str, default: Any, doc: str, *, default_doc: str = "", least: float | None = None
) -> Setting:
    """One setting; ``least``: the smallest value a ``seconds`` setting takes (a launch timeout of
    1e-300 s made every launch "fault")."""
    parse, allowed = {
        "shared": (_shared, "'private' (or 0/off) or 'group' (a team directory)"),
        "url": (_redis_url, "a Redis URL such as redis://host:6379/0"),
        "int": (_non_negative_int, "a non-negative integer (0 disables), at most 2**62"),
        "count": (_workers, f"a positive integer, at most {MAX_WORKERS}"),
        "bytes": (_bytes, "a positive integer number of bytes, at most 2**50"),
        "seconds": (_positive_seconds, "a positive, finite number of seconds, at most 1e6"),
        "flag": (_flag, "1/0 (or true/false, yes/no, on/off)"),
        "switch": (_switch, "any non-empty value but 0/false/no/off (on)"),
        "path": (_path, "a path"),
        "text": (_text, "a name or path"),
        "tristate": (_tristate, "default, on or off"),
    }[kind]
    if least is not None:
        if kind != "seconds":  # pragma: no cover - a declaration mistake
            raise AssertionError(f"setting {name}: a lower bound is for seconds")
        parse, allowed = (
            (lambda raw: _positive_seconds(raw, least)),
            f"a finite number of seconds from {least:g} to 1e6",
        )
    setting = Setting(name, kind, default, doc, allowed, parse, default_doc)
    if name in SETTINGS:  # pragma: no cover - a declaration mistake
        raise AssertionError(f"setting {name} declared twice")
    SETTINGS[name] = setting
    return setting


# -- compile cache ----------------------------------------------------------------------------
CACHE_DIR: Setting[Path | None] = _declare(
    "HIPEXPLORE_CACHE_DIR",
    "path",
    None,
    "directory of the on-disk compile cache",
    default_doc="the user cache dir (platformdirs), else `$XDG_CACHE_HOME/hipexplore`",
)
CACHE_DISK: Setting[bool] = _declare(
    "HIPEXPLORE_CACHE_DISK", "flag", True, "`0` turns the disk tier off (memory cache only)"
)
CACHE_MAX_ENTRIES: Setting[int] = _declare(
    "HIPEXPLORE_CACHE_MAX_ENTRIES", "int", 256, "memory tier: most entries kept (0 turns the memory tier off)"
)
CACHE_MAX_BYTES: Setting[int] = _declare(
    "HIPEXPLORE_CACHE_MAX_BYTES",
    "int",
    256 * 1024**2,
    "memory tier: most binary bytes kept (0 turns it off)",
    default_doc="268435456 (256 MiB)",
)
CACHE_DISK_MAX_BYTES: Setting[int] = _declare(
    "HIPEXPLORE_CACHE_DISK_MAX_BYTES",
    "int",
    2 * 1024**3,
    "disk tier: byte cap, oldest pruned first (0 disables the cap)",
    default_doc="2147483648 (2 GiB)",
)
CACHE_MAX_EVENTS: Setting[int] = _declare(
    "HIPEXPLORE_CACHE_MAX_EVENTS", "int", 1_000_000, "cache events kept per cache object, oldest dropped (0: unbounded)"
)
CACHE_SHARED: Setting[str] = _declare(
    "HIPEXPLORE_CACHE_SHARED",
    "shared",
    "private",
    "`group`: the cache directory is a team directory (group-writable is fine; entries need the team secret); "
    "`private`: a directory others can write to is not used",
)
CACHE_SECRET: Setting[str | None] = _declare(
    "HIPEXPLORE_CACHE_SECRET",
    "text",
    None,
    "team secret: entries are authenticated with HMAC-SHA-256 under it (needed by `group` and the Redis tier; never logged)",
)
CACHE_LOCK_TIMEOUT: Setting[float] = _declare(
    "HIPEXPLORE_CACHE_LOCK_TIMEOUT",
    "seconds",
    300.0,
    "most seconds a process waits for another one compiling the same key (then compiles itself)",
)
CACHE_FOREIGN_LOCK_WAIT: Setting[float] = _declare(
    "HIPEXPLORE_CACHE_FOREIGN_LOCK_WAIT",
    "seconds",
    3.0,
    "team directory: most seconds a process waits on a key's lock another user holds, then compiles without it "
    "(one warning names the lock and its holder; entries are still verified before use)",
)
CACHE_REMOTE: Setting[str | None] = _declare(
    "HIPEXPLORE_CACHE_REMOTE", "url", None, "Redis team tier below disk, e.g. `redis://host:6379/0` (extra `remote`)"
)
CACHE_REMOTE_TIMEOUT: Setting[float] = _declare(
    "HIPEXPLORE_CACHE_REMOTE_TIMEOUT",
    "seconds",
    0.5,
    "deadline of each Redis request as a whole (connect, send, every read); one request past it, or 3 in a row "
    "slower than half of it, turn the tier off for the process (one warning)",
)

LAUNCH_TIMEOUT: Setting[float] = _declare(
    "HIPEXPLORE_LAUNCH_TIMEOUT",
    "seconds",
    120.0,
    "seconds one host kernel launch may run in a sweep worker before the worker is stopped (a kernel that never "
    "returns is then a KernelFault naming it, not a sweep that hangs); at least 0.1",
    least=0.1,
)

# -- compilers --------------------------------------------------------------------------------
COMPILE_TIMEOUT: Setting[float] = _declare(
    "HIPEXPLORE_COMPILE_TIMEOUT", "seconds", 120.0, "seconds one compile may take before its worker is killed"
)
COMPILE_WORKERS: Setting[int] = _declare(
    "HIPEXPLORE_COMPILE_WORKERS",
    "count",
    _default_workers,
    "worker processes of an isolated compiler",
    default_doc="min(4, CPUs)",
)
HIPRTC_LIBRARY: Setting[str | None] = _declare(
    "HIPEXPLORE_HIPRTC_LIBRARY",
    "text",
    None,
    "one hiprtc library name or path instead of the search",
    default_doc="search libhiprtc.so*",
)
DUMP_DIR: Setting[Path | None] = _declare(
    "HIPEXPLORE_DUMP_DIR",
    "path",
    None,
    "where diagnostics (`dump-source`, `dump-asm`) write files",
    default_doc="one temp dir per process",
)
COMPILER_CACHE: Setting[str] = _declare(
    "HIPEXPLORE_COMPILER_CACHE",
    "tristate",
    "default",
    "the compilers' own caches (NVRTC's in the driver's compute cache, COMGR's, Triton's): `off` turns each off "
    "(NVRTC `--no-cache`), `on` uses each (Triton: its `TRITON_CACHE_DIR`); recorded in every compile event",
    default_doc="default: what each compiler does by itself (NVRTC's and COMGR's on, Triton's kept off by hipexplore)",
)
NVRTC_PCH: Setting[str] = _declare(
    "HIPEXPLORE_NVRTC_PCH",
    "tristate",
    "default",
    "NVRTC's automatic precompiled headers: `on` adds `-pch` to every NVRTC compile; `off`/`default` add nothing "
    "(a request's own `-pch` is kept and keyed)",
    default_doc="default: NVRTC's (no PCH without `-pch`)",
)
COMPILE_WORKER: Setting[bool] = _declare(
    "HIPEXPLORE_COMPILE_WORKER", "switch", False, "internal: set in isolation worker processes"
)

SWEEP_WORKER_MARK: Setting[str | None] = _declare(
    "HIPEXPLORE_SWEEP_WORKER_MARK",
    "text",
    None,
    "internal: set in a sweep worker (a random token), so every process its kernel starts is found and ended with it",
)

# -- devices ----------------------------------------------------------------------------------
SWEEP_WORKER: Setting[bool | None] = _declare(
    "HIPEXPLORE_SWEEP_WORKER",
    "flag",
    None,
    "`1`: sweeps run in a worker process (a faulting kernel kills only the worker); `0`: in the calling process",
    default_doc="a worker for GPU devices and your own host C kernels, in-process for the catalog's host kernels",
)
LLC_BYTES: Setting[int | None] = _declare(
    "HIPEXPLORE_LLC_BYTES",
    "bytes",
    None,
    "last-level cache size to use instead of the runtime's/sysfs's",
    default_doc="what the runtime reports",
)
HIP_DLL: Setting[str | None] = _declare(
    "HIPEXPLORE_HIP_DLL",
    "text",
    None,
    "the HIP runtime library the HIP device loads",
    default_doc="libamdhip64.so, .so.6, .so.5",
)
SAMPLED_CHECKS: Setting[int] = _declare(
    "HIPEXPLORE_SAMPLED_CHECKS",
    "int",
    4,
    "output checks on launches sampled across each configuration's timed run (fresh inputs, poisoned outputs; "
    "outside the timed windows); a failed one flags the row `untrusted timing` (0 turns them off)",
)
L2_RESET: Setting[bool] = _declare(
    "HIPEXPLORE_L2_RESET",
    "flag",
    True,
    "NVIDIA: clear the persisting-L2 state (set-aside, the timed stream's window, persisting lines) before every "
    "timed chunk; `0` only checks it (to measure what the reset costs)",
)
HOST_BANDWIDTH: Setting[int | None] = _declare(
    "HIPEXPLORE_HOST_BANDWIDTH",
    "bytes",
    None,
    "the host's memory bandwidth in bytes per second, for the physical floor of host timings",
    default_doc="measured: one thread's copy bandwidth times the CPU count",
)

CUPTI_LIBRARY: Setting[str | None] = _declare(
    "HIPEXPLORE_CUPTI_LIBRARY",
    "text",
    None,
    "the CUPTI library the counter pass loads on NVIDIA (`--counters cupti`)",
    default_doc="the CUDA toolkit's extras/CUPTI/lib64, then the nvidia-cuda-cupti wheel's",
)
CUPTI_RANGES: Setting[str | None] = _declare(
    "HIPEXPLORE_CUPTI_RANGES",
    "text",
    None,
    "`auto`: CUPTI makes a range per kernel launch and the counted kernel's are picked by name, instead of a range "
    "around each counted launch (`user`)",
    default_doc="user",
)

# -- results, notebooks, command line ---------------------------------------------------------
GIT_REVISION: Setting[str | None] = _declare(
    "HIPEXPLORE_GIT_REVISION",
    "text",
    None,
    "git revision recorded in provenance (for trees without `.git`)",
    default_doc="`git rev-parse HEAD`",
)
CALIBRATION_DIR: Setting[Path | None] = _declare(
    "HIPEXPLORE_CALIBRATION_DIR",
    "path",
    None,
    "where `hipexplore calibrate` keeps each device's A/A calibration (`compare` and the report cite it)",
    default_doc="`$XDG_DATA_HOME/hipexplore/calibration` (`~/.local/share/...`)",
)
NOTEBOOKS: Setting[Path | None] = _declare(
    "HIPEXPLORE_NOTEBOOKS",
    "path",
    None,
    "folder of the shipped notebooks, searched first",
    default_doc="`hipexplore/notebooks/`, then `<repo>/notebooks/`",
)
DEBUG: Setting[bool] = _declare(
    "HIPEXPLORE_DEBUG", "switch", False, "the command line shows tracebacks instead of one-line errors"
)
REQUIRE_COMPILERS: Setting[bool] = _declare(
    "HIPEXPLORE_REQUIRE_COMPILERS", "flag", False, "test suite: a missing compiler or tool fails instead of skipping"
)


def get(name: str) -> Any:
    """The value of the setting named ``name`` (``HIPEXPLORE_...``)."""
    try:
        return SETTINGS[name].get()
    except KeyError:
        raise ConfigError(f"unknown setting {name!r}; expected one of {', '.join(SETTINGS)}") from None


def check_all() -> None:
    """Read every variable that is set, so a bad value is one line before any work starts.

    Why: a setting is read where it is used, and some are used late (``HIPEXPLORE_LAUNCH_TIMEOUT``
    in the sweep worker, seconds into a run, after devices and compilers started). The command
    line calls this first; a value only a later step would have refused is refused now."""
    for setting in SETTINGS.values():
        if setting.is_set():
            setting.get()


def raw_values(*settings: Setting) -> tuple[str, ...]:
    """The raw texts of some settings ("" when unset), e.g. as part of a memo key."""
    return tuple(s.raw() or "" for s in settings)


def markdown_table() -> str:
    """The README's settings table (between ``<!-- settings:begin -->`` and ``<!-- settings:end -->``)."""
    lines = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    for s in SETTINGS.values():
        lines.append(f"| `{s.name}` | {s.kind} | {s.default_text()} | {s.doc} |")
    return "\n".join(lines)
