"""Complete keys (issue 12, "Keys miss inputs"): each case the attack found served a disk-hit with
the old binary. Now each is a miss (the input is keyed) or a refused input (one clear error).
Real host compiles; the libraries built are loaded and called, so "stale" means the wrong answer.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
from pathlib import Path

import pytest

from hipexplore.cli import main
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.host import HostCompiler
from hipexplore.compile.inputs import ENV, HIPRTC_ENV, HOST_ENV, clock_record
from hipexplore.errors import ConfigError


@pytest.fixture(autouse=True)
def _host():
    from conftest import require_compiler

    require_compiler("host")


def call(binary: bytes, tmp_path: Path, fn: str = "answer", restype=ctypes.c_int):
    lib = tmp_path / f"lib{hashlib.sha256(binary).hexdigest()[:12]}.so"
    if not lib.exists():  # never rewrite a loaded library in place
        lib.write_bytes(binary)
    f = getattr(ctypes.CDLL(str(lib)), fn)
    f.restype = restype
    return f()


def disk_only(root: Path) -> CompileCache:
    """A fresh process's view: memory tier off, the disk tier at ``root``."""
    return CompileCache(disk_dir=root, max_entries=0)


INCLUDES_CFG = CompileRequest(Source("k.c", '#include "cfg.h"\nint answer(void) { return VALUE; }\n'), "host", "host")


@pytest.mark.parametrize("var", ["CPATH", "C_INCLUDE_PATH"])
def test_host_include_path_variables_are_keyed(tmp_path, monkeypatch, var):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, v in ((a, 1), (b, 2)):
        d.mkdir()
        (d / "cfg.h").write_text(f"#define VALUE {v}\n")
    root = tmp_path / "cache"
    monkeypatch.setenv(var, str(a))
    first = disk_only(root).get_or_compile(INCLUDES_CFG)
    assert first.outcome == "compiled" and call(first.binary, tmp_path) == 1
    assert disk_only(root).get_or_compile(INCLUDES_CFG).outcome == "disk-hit"  # same inputs: still a cache
    monkeypatch.setenv(var, str(b))
    second = disk_only(root).get_or_compile(INCLUDES_CFG)
    assert second.outcome == "compiled" and call(second.binary, tmp_path) == 2


def test_every_host_driver_variable_changes_the_identity(monkeypatch):
    c = HostCompiler()
    base = c.identity()
    for var in (
        "GCC_EXEC_PREFIX",
        "COMPILER_PATH",
        "CPLUS_INCLUDE_PATH",
        "LIBRARY_PATH",
        "SOURCE_DATE_EPOCH",
        "CCC_OVERRIDE_OPTIONS",
    ):
        assert var in HOST_ENV
        monkeypatch.setenv(var, "/nonexistent-for-the-key")
        assert c.identity() != base, var
        monkeypatch.delenv(var)
    assert c.identity() == base


def test_hiprtc_variables_change_its_identity(monkeypatch):
    from conftest import require_compiler

    comp = require_compiler("hiprtc")
    base = comp.identity()
    for var in ("HIP_PATH", "LLVM_PATH", "HIPRTC_COMPILE_OPTIONS_APPEND"):
        assert var in HIPRTC_ENV
        monkeypatch.setenv(var, "x")
        assert comp.identity() != base, var
        monkeypatch.delenv(var)
    assert comp.identity() == base and ENV["nvrtc"] == ()


DATED = CompileRequest(Source("d.c", 'const char* stamp(void) { return __DATE__ " " __TIME__; }\n'), "host", "host")


def test_source_date_epoch_and_the_clock_macros_are_keyed(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    first = disk_only(root).get_or_compile(DATED)
    assert call(first.binary, tmp_path, "stamp", ctypes.c_char_p) == b"Jan  1 1970 00:00:00"
    assert disk_only(root).get_or_compile(DATED).outcome == "disk-hit"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(400 * 86400 + 3661))
    second = disk_only(root).get_or_compile(DATED)
    assert second.outcome == "compiled"
    assert call(second.binary, tmp_path, "stamp", ctypes.c_char_p) == b"Feb  5 1971 01:01:01"


def test_without_source_date_epoch_the_clock_is_in_the_key(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert DATED.clock == {"DATE", "TIME"}
    assert clock_record("host", DATED.clock, now=0) != clock_record("host", DATED.clock, now=1)  # __TIME__: per second
    only_date = frozenset({"DATE"})
    assert clock_record("host", only_date, now=0) == clock_record("host", only_date, now=60)
    cache = CompileCache(disk_dir=False)
    k1 = cache.key_for(DATED)
    assert "clock" in k1.record and k1.record["clock"]["source"] == "clock"
    plain = CompileRequest(Source("p.c", "int f(void) { return 1; }\n"), "host", "host")
    assert "clock" not in cache.key_for(plain).record  # other keys are unchanged
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "not-a-number")
    with pytest.raises(ConfigError, match="SOURCE_DATE_EPOCH='not-a-number'"):
        cache.key_for(DATED)


@pytest.mark.parametrize(
    "text,what",
    [
        (
            '__asm__(".section .rodata\\n.incbin \\"/etc/hostname\\"\\n.previous");\nint answer(void) { return 1; }\n',
            ".incbin",
        ),
        ('static const char data[] = {\n#embed "/etc/hostname"\n};\nint answer(void) { return data[0]; }\n', "#embed"),
    ],
)
def test_sources_that_pull_in_files_are_refused(text, what):
    with pytest.raises(ConfigError, match=what):
        CompileRequest(Source("k.c", text), "host", "host")
    with pytest.raises(ConfigError, match=what):  # in a header too
        CompileRequest(Source("k.c", '#include "h.h"\n'), "host", "host", headers=[("h.h", text)])


@pytest.mark.parametrize(
    "options",
    [
        ("-Wp,-I/tmp",),
        ("--include-directory=/tmp",),
        ("-iprefix", "/tmp/", "-iwithprefixbefore", "inc"),
        ("-specs=/tmp/evil.specs",),
        ("-Xpreprocessor", "-I/tmp"),
        ("-B/tmp",),
        ("-fplugin=/tmp/p.so",),
        ("-Wl,-T,/tmp/script.ld",),
        ("-L/tmp",),
        ("-isysroot", "/tmp"),
    ],
)
def test_options_that_get_past_the_include_refusal_are_refused(options):
    with pytest.raises(ConfigError, match="cannot see") as info:
        CompileRequest(Source("k.c", "int x;\n"), "host", "host", options=options)
    assert repr(options[0]) in str(info.value)  # the message names the option


def test_the_command_line_refuses_them_with_exit_status_2(tmp_path, capsys):
    src = tmp_path / "k.c"
    src.write_text("int answer(void) { return 1; }\n")
    assert main(["compile", str(src), "--compiler", "host", "--option=-Wp,-I/tmp"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'-Wp,-I/tmp'" in err


def test_ordinary_options_still_work():
    req = CompileRequest(
        Source("k.c", "int x;\n"), "host", "host", options=("-O2", "-DX=1", "-fPIC", "-ffast-math", "-g")
    )
    assert req.options[0] == "-O2"
    nv = CompileRequest(Source("k.cu", "__global__ void k() {}\n"), "nvrtc", "sm_90", options=("-lineinfo",))
    assert nv.options == ("-lineinfo",)


WRAPPER = "#!/bin/sh\n" + ("# padding past the first MiB the old stamp hashed\n" * 24000) + 'exec cc {flags} "$@"\n'


def test_a_cc_wrapper_edited_past_its_first_mib_changes_the_key(tmp_path, monkeypatch):
    wrapper = tmp_path / "bin" / "mycc"
    wrapper.parent.mkdir()
    wrapper.write_text(WRAPPER.format(flags="-DVALUE=1"))
    assert wrapper.stat().st_size > 1 << 20
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    root = tmp_path / "cache"
    req = CompileRequest(Source("k.c", "int answer(void) { return VALUE; }\n"), "host", "host")
    first = disk_only(root).get_or_compile(req, HostCompiler())
    assert first.outcome == "compiled" and call(first.binary, tmp_path) == 1
    st = wrapper.stat()
    wrapper.write_text(WRAPPER.format(flags="-DVALUE=2"))  # same size, only the last line differs
    os.utime(wrapper, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old mtime
    assert wrapper.stat().st_size == st.st_size
    second = disk_only(root).get_or_compile(req, HostCompiler())
    assert second.outcome == "compiled" and call(second.binary, tmp_path) == 2


def test_a_replaced_assembler_changes_the_host_identity(tmp_path, monkeypatch):
    """gcc runs `as` from PATH: a different assembler is a different compiler."""
    real_as = shutil.which("as")
    assert real_as
    fake = tmp_path / "bin" / "as"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nexec {real_as} "$@"\n')
    fake.chmod(0o755)
    base = HostCompiler().identity()
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    changed = HostCompiler().identity()
    assert dict(changed.extra)["as"] == os.path.realpath(fake) and changed != base  # Debian's gcc: `as` from PATH
    assert dict(base.extra)["as"] == os.path.realpath(real_as) and "ld_stamp" in dict(base.extra)


def test_an_isolated_compiler_retires_workers_started_with_another_environment(tmp_path, monkeypatch):
    """Workers inherit the environment when they start: after CPATH changes, key and binary must
    both follow it (a worker with the old CPATH would build the old header under the new key)."""
    from hipexplore.compile.isolation import IsolatedCompiler

    a, b = tmp_path / "a", tmp_path / "b"
    for d, v in ((a, 1), (b, 2)):
        d.mkdir()
        (d / "cfg.h").write_text(f"#define VALUE {v}\n")
    monkeypatch.setenv("CPATH", str(a))
    with IsolatedCompiler("host", workers=1) as comp:
        cache = CompileCache(disk_dir=tmp_path / "cache")
        first = cache.get_or_compile(INCLUDES_CFG, comp)
        pid = comp.worker_pids()
        monkeypatch.setenv("CPATH", str(b))
        second = cache.get_or_compile(INCLUDES_CFG, comp)
        assert second.outcome == "compiled" and second.key != first.key
        assert call(first.binary, tmp_path) == 1 and call(second.binary, tmp_path) == 2
        assert comp.worker_pids() != pid
