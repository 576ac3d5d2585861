"""Inputs of a compile that are not in its source text: the environment each compiler reads,
options and directives that pull in files by other means, and the clock.

Why: the cache key is only as complete as the list of what changes a compile's output. An attack
on the cache found keys that missed ``CPATH``, ``SOURCE_DATE_EPOCH``, ``-Wp,-I<dir>``,
``-specs=<file>``, ``.incbin`` and ``__DATE__`` (a disk-hit with the old binary). Each input is
now either keyed or refused with one line naming it:

* ``*_ENV``: the variables each compiler reads that change its output, checked against the
  libraries' own strings (gcc/clang driver docs; ``strings libamd_comgr.so``; NVRTC reads none
  that change output: ``NVRTC_DISABLE_PCH``/``NVRTC_PCH_HEAP_SIZE`` only change speed). Their
  values enter the compiler identity (``env_identity``). The content of headers found through
  ``CPATH`` & co is keyed by compile/implicit.py (``cc -M``); the variables' values are keyed here.
* ``refused_option``: options that read files the key cannot see (beyond ``-I``/``-include``,
  which request.py refuses): preprocessor pass-through (``-Wp,``, ``-Xpreprocessor``), long forms
  (``--include-directory=``), prefix includes (``-iprefix``/``-iwithprefix*``), spec files, plugins,
  profiles, linker scripts and libraries, response files.
* ``refused_text``: ``.incbin`` (assembler) and ``#embed`` (C23) read files at compile time.
* ``clock_record``: ``__DATE__``/``__TIME__``/``__TIMESTAMP__`` make the output depend on when it
  was compiled. The key gets the date (and the time, to the second, for ``__TIME__``) that the
  compiler will see: ``SOURCE_DATE_EPOCH`` where the compiler honours it (gcc/clang for the host
  compiler), else the wall clock; a hit is then a binary with the same expansion.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import replace
from typing import Iterable

from ..errors import ConfigError

#: Read by the host C compiler driver (gcc and clang) and changing what it builds.
HOST_ENV = (
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "OBJC_INCLUDE_PATH",
    "GCC_EXEC_PREFIX",
    "COMPILER_PATH",
    "LIBRARY_PATH",
    "SOURCE_DATE_EPOCH",
    "GCC_COMPARE_DEBUG",
    "DEPENDENCIES_OUTPUT",
    "SUNPRO_DEPENDENCIES",
    "CCC_OVERRIDE_OPTIONS",
    "COLLECT_GCC_OPTIONS",
    "GCC_ROOT",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
)
#: Read by hiprtc/comgr (strings of libamd_comgr.so.2 and libamdhip64.so.5; newer ROCm adds the
#: *_APPEND option variables) and by the clang driver comgr runs.
HIPRTC_ENV = (
    "HIP_PATH",
    "ROCM_PATH",
    "HIP_DEVICE_LIB_PATH",
    "LLVM_PATH",
    "HIPRTC_COMPILE_OPTIONS_APPEND",
    "HIPRTC_LINK_OPTIONS_APPEND",
    "AMD_COMGR_EMIT_VERBOSE_LOGS",
    # comgr runs clang's driver in-process, and the driver reads these (checked: a header
    # found only through CPATH or CPLUS_INCLUDE_PATH compiles with hiprtc here)
    "CPATH",
    "CPLUS_INCLUDE_PATH",
    "C_INCLUDE_PATH",
    "OBJC_INCLUDE_PATH",
    "OBJCPLUS_INCLUDE_PATH",
    "CCC_OVERRIDE_OPTIONS",
)
#: NVRTC: none of the variables in libnvrtc.so changes the output.
NVRTC_ENV: tuple[str, ...] = ()
ENV = {"host": HOST_ENV, "hiprtc": HIPRTC_ENV, "nvrtc": NVRTC_ENV}

#: Option prefixes that make a compiler read a file or directory the key does not hold.
REFUSED_PREFIXES = (
    "-Wp,",
    "-Xpreprocessor",
    "-Xclang",
    "--include-directory",
    "--include-with-prefix",
    "--include-prefix",
    "--include-barrier",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-iframework",
    "-isysroot",
    "-imultilib",
    "-cxx-isystem",
    "--embed-dir",
    "-F",
    "-specs",
    "--specs",
    "-B",
    "--prefix",
    "-fplugin",
    "-load",
    "-fprofile-use",
    "-fprofile-sample-use",
    "-fauto-profile",
    "-fsanitize-blacklist",
    "-fsanitize-ignorelist",
    "-fprofile-list",
    "-include-pch",
    "-fmodule-file",
    "-fmodules",
    "-T",
    "-Wl,",
    "-Xlinker",
    "-Xassembler",
    "-Wa,",
    "-L",
    "--library-directory",
    "--pch-dir",
    "-pch",
    "--use-pch",
    "--create-pch",
    "-mlink-builtin-bitcode",
    "-fprofile-instr-use",
    "-fsave-optimization-record",
    "-time",
    # pass-through to a compiler's inner tools, and options naming files or folders it reads
    # (NVRTC's front end -Xcudafe can add include folders or pre-includes; clang's VFS overlays,
    # config files, resource/toolchain/ROCm folders, module maps, profile and sanitizer lists)
    "-Xcudafe",
    "--preinclude",
    "-Xarch",
    "-Xoffload",
    "-ivfsoverlay",
    "--config",
    "-resource-dir",
    "--rocm-path",
    "--hip-path",
    "--hip-device-lib-path",
    "--rocm-device-lib-path",
    "--cuda-path",
    "--gcc-toolchain",
    "--gcc-install-dir",
    "-fmodule-map-file",
    "-fprebuilt-module-path",
    "-fmodules-cache-path",
    "-fprofile-remapping-file",
    "-fxray-attr-list",
    "-fxray-always-instrument",
    "-fxray-never-instrument",
    "-fsanitize-coverage-allowlist",
    "-fsanitize-coverage-ignorelist",
    "-fthinlto-index",
    "-fbasic-block-sections=list",
    "--embed-dir",
    "-fembed-dir",
    # programs the driver would run instead of the ones the identity names
    "-wrapper",
    "-fuse-ld",
    "--ld-path",
    "-fintegrated-as",
    "-no-integrated-as",
    "-fno-integrated-as",
)
_EXACT_OK = frozenset({"-fPIC", "-fPIE", "-fpic", "-fpie", "-ffast-math"})
#: Per compiler, options that match a refused prefix but read no file of the user's: NVRTC's
#: automatic PCH (``-pch``: its precompiled headers live in a temp folder of its own, checked
#: against the headers they were made from; the option is keyed like any other).
_COMPILER_OK = {"nvrtc": frozenset({"-pch", "--pch"})}


def refused_option(option: str, compiler: str = "") -> str:
    """Why ``option`` is refused for ``compiler`` ("" when it is fine)."""
    if option in _EXACT_OK or option in _COMPILER_OK.get(compiler, ()):
        return ""
    for prefix in REFUSED_PREFIXES:
        if option == prefix or option.startswith(prefix):
            return (
                f"option {option!r} makes the compiler read files or programs the cache key cannot see "
                f"({prefix}...); pass headers as CompileRequest(headers=...) or `hipexplore compile --header FILE`"
            )
    return ""


_INCBIN = re.compile(r"\.incbin\b")
_EMBED = re.compile(r"^[ \t]*#[ \t]*embed\b|__has_embed\b", re.M)
_CLOCK = re.compile(r"\b__(DATE|TIME|TIMESTAMP)__\b")


def refused_text(name: str, text: str) -> str:
    """Why a source or header text is refused ("" when fine): file-reading directives."""
    if _INCBIN.search(text):
        return (
            f"{name!r} uses the assembler directive .incbin, which reads a file the cache key cannot see; "
            "put the bytes into the source (an array initializer) instead"
        )
    if _EMBED.search(text):
        return (
            f"{name!r} uses #embed, which reads a file the cache key cannot see; "
            "put the bytes into the source (an array initializer) instead"
        )
    return ""


def check_texts(texts: Iterable[tuple[str, str]]) -> None:
    for name, text in texts:
        why = refused_text(name, text)
        if why:
            raise ConfigError(why)


def uses_clock(texts: Iterable[str]) -> frozenset[str]:
    """Which of DATE/TIME/TIMESTAMP the texts use."""
    found: set[str] = set()
    for text in texts:
        found.update(_CLOCK.findall(text))
    return frozenset(found)


def clock_record(compiler: str, used: frozenset[str], now: float | None = None) -> dict:
    """The expansion of the clock macros the compiler will see, for the key ({} when unused)."""
    if not used:
        return {}
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip() if compiler == "host" else ""
    if epoch:
        try:
            t = int(epoch)
        except ValueError:
            raise ConfigError(
                f"environment variable SOURCE_DATE_EPOCH={epoch!r} is invalid: expected an integer"
            ) from None
        source = "SOURCE_DATE_EPOCH"
        tm = time.gmtime(t)
    else:
        t = int(time.time() if now is None else now)
        source = "clock"
        tm = time.localtime(t)
    record = {"source": source, "date": time.strftime("%Y-%m-%d", tm)}
    if used & {"TIME", "TIMESTAMP"}:
        record["time"] = time.strftime("%H:%M:%S", tm)
    return record


_ENCODED = {c: tuple((n, os.environ.encodekey(n)) for n in names) for c, names in ENV.items()}
_ENC_KEYS = {c: tuple(e for _, e in pairs) for c, pairs in _ENCODED.items()}


def _raw(compiler: str) -> tuple | None:
    """The raw (encoded) values of the compiler's variables, None where unset: one C-level pass."""
    data = getattr(os.environ, "_data", None)
    if data is None:  # pragma: no cover - not CPython's os._Environ
        return tuple(os.environ.get(n) for n in ENV.get(compiler, ()))
    return tuple(map(data.get, _ENC_KEYS.get(compiler, ())))


def env_values(compiler: str) -> tuple[tuple[str, str], ...]:
    """(name, value) of the variables ``compiler`` reads that are set, in a fixed order."""
    return _decode(compiler, _raw(compiler))


def _decode(compiler: str, raw: tuple) -> tuple[tuple[str, str], ...]:
    names = ENV.get(compiler, ())
    return tuple(
        (n, v if isinstance(v, str) else os.environ.decodevalue(v)) for n, v in zip(names, raw) if v is not None
    )


_env_memo: dict[tuple, object] = {}
_env_last: dict[str, tuple] = {}


def env_identity(identity, compiler: str | None = None):
    """``identity`` with the values of the variables its compiler reads added to ``extra``
    (memoized: the usual call, same identity object and same values, is one comparison)."""
    name = compiler or identity.name
    raw = _raw(name)  # called on every lookup (memory hits too): compare the raw values, decode on change
    last = _env_last.get(name)
    if last is not None and last[0] is identity and last[1] == raw:
        return last[2]
    values = _decode(name, raw)
    if not values:
        result = identity
    else:
        memo_key = (identity, values)
        result = _env_memo.get(memo_key)
        if result is None:
            if len(_env_memo) > 256:
                _env_memo.clear()
            result = _env_memo[memo_key] = replace(identity, extra=(*identity.extra, ("env", repr(values))))
    _env_last[name] = (identity, raw, result)
    return result
