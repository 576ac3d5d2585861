"""No spelling of a file input escapes the key (issue 25, item 4): each case builds the attack with
the real compiler, compiles through the cache, changes the hidden input, compiles through the cache
again and compares what the cache served with a fresh compile of the same request (they must be
equal, byte for byte; the change must matter, so the first binary differs). The files a compile
reads are now listed by the compiler itself (NVRTC's front end ``-M``, comgr's clang ``-M``, the
host driver's ``-M`` and ``-###`` plan), so directive spellings are the compiler's.

The six cases of the attack come first, then cases of our own (macro-built spellings, options
that define the spelling, ``__has_include`` of a file that appears later, with a literal and with
a macro operand, trigraphs, ``#import``, symlinked folders, ``#line``, ``#include_next`` through
``C_INCLUDE_PATH``, ``-l`` through ``LIBRARY_PATH``, linker scripts, assembler operands, and the
options that are refused because what they read cannot be listed).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from hipexplore.compile import CompileRequest, Source, implicit
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.host import HostCompiler
from hipexplore.errors import ConfigError

OLD, NEW = 271828, 314159
TARGET = {"host": "host", "nvrtc": "sm_90", "hiprtc": "gfx90a"}
NAME = {"host": "k.c", "nvrtc": "k.cu", "hiprtc": "k.hip"}


@pytest.fixture(autouse=True)
def settled(monkeypatch):
    """Trust signatures older than 50 ms (the real one-second window is exercised on a file system
    with one-second timestamps in tests/compile/test_implicit_racy_window.py); each change below waits past it."""
    monkeypatch.setattr(implicit, "RACY_NS", 50_000_000)


def settle() -> None:
    time.sleep(0.06)


def compiler(name: str):
    from conftest import require_compiler

    return require_compiler(name)


def request(name: str, text: str, **kw) -> CompileRequest:
    if name == "host":
        body = f"{text}\nint answer(void) {{ return VALUE; }}\n"
        return CompileRequest(Source(NAME[name], body), "host", "host", **kw)
    body = f'{text}\nextern "C" __global__ void k(int* p) {{ *p = VALUE; }}\n'
    return CompileRequest(Source(NAME[name], body), name, TARGET[name], kernels=("k",), **kw)


def header(path: Path, v: int, extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{extra}#define VALUE {v}\n")
    return path


def served_is_fresh(tmp_path: Path, req: CompileRequest, change, comp=None) -> None:
    """Compile through the cache, ``change()``, compile through the cache again (this process, a
    new cache on the same disk, a fresh process): each served binary equals a fresh compile."""
    comp = comp or compiler(req.compiler)
    root = tmp_path / "cache"
    cache = CompileCache(disk_dir=root)
    first = cache.get_or_compile(req, comp)
    assert first.outcome == "compiled", first.outcome
    assert cache.get_or_compile(req, comp).outcome == "memory-hit"
    settle()
    change()
    settle()
    fresh = comp.compile(req).binary
    assert fresh != first.binary, "the change did not change the output: the case tests nothing"
    served = cache.get_or_compile(req, comp)
    assert served.binary == fresh, f"stale binary served ({served.outcome})"
    other = CompileCache(disk_dir=root).get_or_compile(req, comp)  # memory empty: the disk tier
    assert other.binary == fresh, f"stale binary served ({other.outcome})"
    if comp.name != "host" or comp.cc_spec == HostCompiler().cc_spec:
        assert fresh_process(req, root) == fresh


FRESH = r"""
import json, sys
from hipexplore.compile import CompileRequest, Source
from hipexplore.compile.cache import CompileCache
spec = json.loads(sys.argv[1])
req = CompileRequest(Source(*spec["source"]), spec["compiler"], spec["target"], kernels=spec["kernels"],
                     options=spec["options"], headers=[tuple(h) for h in spec["headers"]])
sys.stdout.write(CompileCache(disk_dir=spec["root"]).get_or_compile(req).binary.hex())
"""


def fresh_process(req: CompileRequest, root: Path) -> bytes:
    import json

    spec = {
        "source": [req.source.name, req.source.text],
        "compiler": req.compiler,
        "target": req.target,
        "kernels": list(req.kernels),
        "options": list(req.options),
        "root": str(root),
        "headers": [[h.name, h.text] for h in req.headers],
    }
    proc = subprocess.run([sys.executable, "-c", FRESH, json.dumps(spec)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return bytes.fromhex(proc.stdout.strip())


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    """The current directory of the compile (NVRTC reads quoted includes of the source from it)."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


# -- the attack's cases --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spelling",
    ['%:include "cfg.h"', '#inc\\\nlude "cfg.h"', '#include /*c*/ "cfg.h"'],
    ids=["digraph", "line-splice", "comment"],
)
def test_nvrtc_cfg_h_from_the_current_directory_in_any_spelling(tmp_path, work, spelling):
    cfg = header(work / "cfg.h", OLD)
    served_is_fresh(tmp_path, request("nvrtc", spelling), lambda: header(cfg, NEW))


def test_hiprtc_digraph_absolute_include(tmp_path, work):
    h = header(tmp_path / "abs" / "h.h", OLD)
    served_is_fresh(tmp_path, request("hiprtc", f'%:include "{h}"'), lambda: header(h, NEW))


def build_object(path: Path, value: int) -> Path:
    src = path.with_suffix(".c")
    path.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(f"int helper(void) {{ return {value}; }}\n")
    subprocess.run(["cc", "-O2", "-fPIC", "-c", str(src), "-o", str(path)], check=True)
    return path


def test_a_host_object_file_among_the_options_is_keyed(tmp_path):
    helper = build_object(tmp_path / "lib" / "helper.o", OLD)
    req = CompileRequest(
        Source("k.c", "int helper(void);\nint answer(void) { return helper(); }\n"),
        "host",
        "host",
        options=(str(helper),),
    )
    compiler("host")
    served_is_fresh(tmp_path, req, lambda: build_object(helper, NEW))
    key = CompileCache(disk_dir=False).key_for(req)
    assert str(helper) in [r["path"] for r in key.record["implicit"]]


WRAPPER = """#!/bin/sh
exec ${HX_TEST_REAL_CC:-cc} "$@"
"""


def test_a_cc_wrapper_that_chooses_the_compiler_from_the_environment(tmp_path, monkeypatch):
    """``CC`` is a script that runs ``$HX_TEST_REAL_CC``: switching the variable to another
    compiler (here the same gcc behind a second wrapper that adds a definition, so the output
    differs) changes what runs; the identity asks the driver through the wrapper what it runs."""
    compiler("host")
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    other = tmp_path / "other-cc"
    other.write_text(f'#!/bin/sh\nexec cc -DVALUE={NEW} "$@"\n')
    other.chmod(0o755)
    monkeypatch.delenv("HX_TEST_REAL_CC", raising=False)
    comp = HostCompiler(cc=str(wrapper))
    req = CompileRequest(
        Source("k.c", f"#ifndef VALUE\n#define VALUE {OLD}\n#endif\nint answer(void) {{ return VALUE; }}\n"),
        "host",
        "host",
    )
    served_is_fresh(tmp_path, req, lambda: monkeypatch.setenv("HX_TEST_REAL_CC", str(other)), comp=comp)


# -- our own cases: NVRTC ------------------------------------------------------------------------
def test_nvrtc_stringized_macro_spelling(tmp_path, work):
    cfg = header(work / "sub dir" / "cfg.h", OLD)
    req = request("nvrtc", "#define STR(x) #x\n#define XSTR(x) STR(x)\n#include XSTR(sub dir/cfg.h)")
    served_is_fresh(tmp_path, req, lambda: header(cfg, NEW))


def test_nvrtc_spelling_from_an_option_macro(tmp_path, work):
    cfg = header(work / "opt.h", OLD)
    req = request("nvrtc", "#include CFG", options=('-DCFG="opt.h"',))
    served_is_fresh(tmp_path, req, lambda: header(cfg, NEW))


def test_nvrtc_spelling_from_a_macro_in_a_request_header(tmp_path, work):
    cfg = header(work / "late.h", OLD)
    req = request(
        "nvrtc",
        '#include "defs.h"\n#define PASTE(a, b) a ## b\n#include PASTE(C, FG)',
        headers=[("defs.h", '#define CFG "late.h"\n')],
    )
    served_is_fresh(tmp_path, req, lambda: header(cfg, NEW))


HAS = f'#if {{}}\n#include "maybe.h"\n#else\n#define VALUE {OLD}\n#endif'


@pytest.mark.parametrize("probe", ['__has_include("maybe.h")', 'HAS("maybe.h")'], ids=["literal", "macro"])
def test_nvrtc_has_include_of_a_file_that_appears_later(tmp_path, work, probe):
    """The dependency output lists only files found: the folders a ``__has_include`` looks in
    are watched (a literal operand), or the resolution is not trusted (a macro operand)."""
    req = request("nvrtc", "#define HAS(x) __has_include(x)\n" + HAS.format(probe))
    served_is_fresh(tmp_path, req, lambda: header(work / "maybe.h", NEW))


def test_nvrtc_include_through_a_retargeted_symlinked_folder(tmp_path, work):
    header(tmp_path / "a" / "cfg.h", OLD)
    header(tmp_path / "b" / "cfg.h", NEW)
    (work / "link").symlink_to(tmp_path / "a")

    def retarget():
        (work / "link").unlink()
        (work / "link").symlink_to(tmp_path / "b")

    served_is_fresh(tmp_path, request("nvrtc", '#include "link/cfg.h"'), retarget)


def test_nvrtc_line_directive_before_an_include(tmp_path, work):
    """``#line`` renames the including file; wherever NVRTC then looks, it says so in -M."""
    cfgs = [header(work / "cfg.h", OLD), header(work / "lsub" / "cfg.h", OLD)]
    req = request("nvrtc", '#line 1 "lsub/x.cu"\n#include "cfg.h"')
    served_is_fresh(tmp_path, req, lambda: [header(c, NEW) for c in cfgs])


def test_nvrtc_request_header_including_from_its_own_folder(tmp_path, work):
    """A request header named ``inc/a.h`` including "cfg.h": NVRTC looks for ./inc/cfg.h."""
    cfg = header(work / "inc" / "cfg.h", OLD)
    req = request("nvrtc", '#include "inc/a.h"', headers=[("inc/a.h", '#include "cfg.h"\n')])
    served_is_fresh(tmp_path, req, lambda: header(cfg, NEW))


def test_nvrtc_disk_header_including_a_sibling(tmp_path, work):
    inner = header(work / "deep" / "inner.h", OLD)
    (work / "deep" / "outer.h").write_text('%:include "inner.h"\n')
    served_is_fresh(tmp_path, request("nvrtc", '#include "deep/outer.h"'), lambda: header(inner, NEW))


# -- our own cases: hiprtc -----------------------------------------------------------------------
def test_hiprtc_trigraph_include_with_trigraphs_on(tmp_path, work):
    h = header(tmp_path / "abs" / "t.h", OLD)
    req = request("hiprtc", f'??=include "{h}"', options=("-ftrigraphs",))
    served_is_fresh(tmp_path, req, lambda: header(h, NEW))


def test_hiprtc_import_directive(tmp_path, work):
    h = header(tmp_path / "abs" / "i.h", OLD)
    served_is_fresh(tmp_path, request("hiprtc", f'#import "{h}"'), lambda: header(h, NEW))


def test_hiprtc_has_include_of_an_absolute_file_that_appears_later(tmp_path, work):
    maybe = tmp_path / "abs" / "maybe.h"
    maybe.parent.mkdir()
    req = request("hiprtc", f'#if __has_include("{maybe}")\n#include "{maybe}"\n#else\n#define VALUE {OLD}\n#endif')
    served_is_fresh(tmp_path, req, lambda: header(maybe, NEW))


def test_hiprtc_macro_spelled_absolute_include(tmp_path, work):
    h = header(tmp_path / "abs" / "m.h", OLD)
    req = request("hiprtc", f"#define STR(x) #x\n#define XSTR(x) STR(x)\n#include XSTR({h})")
    served_is_fresh(tmp_path, req, lambda: header(h, NEW))


# -- our own cases: the host compiler ------------------------------------------------------------
def test_host_include_next_through_c_include_path(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    (first).mkdir()
    (first / "cfg.h").write_text("#include_next <cfg.h>\n")
    deep = header(second / "cfg.h", OLD)
    monkeypatch.setenv("C_INCLUDE_PATH", f"{first}:{second}")
    served_is_fresh(tmp_path, request("host", "#include <cfg.h>"), lambda: header(deep, NEW))


def build_archive(folder: Path, value: int) -> Path:
    obj = build_object(folder / "hxkey.o", value)
    lib = folder / "libhxkey.a"
    lib.unlink(missing_ok=True)
    subprocess.run(["ar", "rcs", str(lib), str(obj)], check=True)
    return lib


def test_host_library_found_through_library_path(tmp_path, monkeypatch):
    folder = tmp_path / "libs"
    folder.mkdir()
    build_archive(folder, OLD)
    monkeypatch.setenv("LIBRARY_PATH", str(folder))
    req = CompileRequest(
        Source("k.c", "int helper(void);\nint answer(void) { return helper(); }\n"),
        "host",
        "host",
        options=("-u", "helper", "-lhxkey"),
    )  # -u: the archive member is needed
    compiler("host")
    served_is_fresh(tmp_path, req, lambda: build_archive(folder, NEW))


def test_host_linker_script_operand_naming_an_archive(tmp_path):
    folder = tmp_path / "libs"
    folder.mkdir()
    lib = build_archive(folder, OLD)
    script = tmp_path / "inputs.ld"
    script.write_text(f"/* inputs */\nGROUP ( {lib} )\n")
    req = CompileRequest(
        Source("k.c", "int helper(void);\nint answer(void) { return helper(); }\n"),
        "host",
        "host",
        options=("-u", "helper", str(script)),
    )
    compiler("host")
    served_is_fresh(tmp_path, req, lambda: build_archive(folder, NEW))


def test_host_linker_script_that_includes_another_is_not_cached(tmp_path):
    compiler("host")
    (tmp_path / "more.ld").write_text("/* nothing */\n")
    script = tmp_path / "top.ld"
    script.write_text(f'INCLUDE "{tmp_path / "more.ld"}"\n')
    req = CompileRequest(Source("k.c", "int answer(void) { return 1; }\n"), "host", "host", options=(str(script),))
    key = CompileCache(disk_dir=False).key_for(req)
    assert not key.cacheable and "linker script" in key.record["implicit"]["error"]


def test_host_assembler_operand(tmp_path):
    asm = tmp_path / "helper.s"

    def write(v: int) -> None:
        asm.write_text(f".text\n.globl helper\n.type helper,@function\nhelper:\n  movl ${v}, %eax\n  ret\n")

    write(OLD)
    req = CompileRequest(
        Source("k.c", "int helper(void);\nint answer(void) { return helper(); }\n"), "host", "host", options=(str(asm),)
    )
    compiler("host")
    served_is_fresh(tmp_path, req, lambda: write(NEW))


def test_host_absolute_include_behind_a_comment_and_digraph(tmp_path):
    h = header(tmp_path / "abs" / "c.h", OLD)
    served_is_fresh(tmp_path, request("host", f'%:include /* x */ "{h}"'), lambda: header(h, NEW))


# -- refused: what they read cannot be listed ----------------------------------------------------
@pytest.mark.parametrize(
    "compiler_name,option",
    [
        ("host", "-include"),
        ("host", "-imacros"),
        ("nvrtc", "--pre-include=cfg.h"),
        ("nvrtc", "-Xcudafe"),
        ("hiprtc", "-ivfsoverlay=o.yaml"),
        ("hiprtc", "--rocm-path=/opt/rocm"),
        ("host", "@args.rsp"),
        ("host", "-Wl,-T,x.ld"),
        ("nvrtc", "--include-path=inc"),
    ],
)
def test_options_that_read_unlisted_files_are_refused(compiler_name, option):
    with pytest.raises(ConfigError, match="cannot see|read files"):
        request(compiler_name, "", options=(option,))


def test_the_fast_path_skips_the_compiler_only_for_plain_request_headers(monkeypatch):
    """The dependency output is skipped only when every include names a request header plainly."""
    from hipexplore.compile.implicit import reads_only_request

    plain = request("nvrtc", '#include "defs.h"', headers=[("defs.h", "#define VALUE 1\n")])
    assert reads_only_request(plain, nvrtc=True)
    assert reads_only_request(request("nvrtc", '%:include "defs.h"', headers=[("defs.h", "")]), nvrtc=True)
    for text in (
        '#inc\\\nlude "x.h"',
        '#include /**/ "defs.h"',
        "#include X",
        '#if __has_include("x.h")\n#endif',
        '??=include "defs.h"',
        '#include_next "defs.h"',
        '#import "defs.h"',
    ):
        assert not reads_only_request(request("nvrtc", text, headers=[("defs.h", "")]), nvrtc=True), text
    assert not reads_only_request(plain.with_(options=("-Dx", "--unknown-option")), nvrtc=True)
    # a comment that says "include" (real headers are full of them) is no directive ...
    commented = request(
        "nvrtc",
        '// the prelude every kernel includes first\n  // #include "x.h" (was)\n#include "defs.h"',
        headers=[("defs.h", "// include guard below\n#pragma once\n")],
    )
    assert reads_only_request(commented, nvrtc=True)
    # ... but not where a block comment could end inside it, or a trigraph splice could carry the next line
    for text in (
        '/* open\n// */ #include "x.h"\n',
        "/* c */\n// a comment that includes x\n",
        '// a comment ??/\n#include "x.h"\n',
        "// includes ??= things\n",
    ):
        assert not reads_only_request(request("nvrtc", text, headers=[("defs.h", "")]), nvrtc=True), text


def test_nvrtc_include_after_a_line_comment_that_closes_a_block_comment(tmp_path, work):
    """``/*`` on one line, ``// */ #include "cfg.h"`` on the next: phase 3 turns the comment into a
    space and the include is a directive the compiler follows. The fast path must not read the
    line as a ``//`` comment, or an edit of ./cfg.h is served stale."""
    cfg = header(work / "cfg.h", OLD)
    served_is_fresh(tmp_path, request("nvrtc", '/* a block comment\n// */ #include "cfg.h"'), lambda: header(cfg, NEW))


# -- include folders (-I DIR): the closure reads the files into the request --------------------
SPELLINGS = {
    "digraph": '%:include "cfg.h"',
    "splice": "#inc\\\nlude <cfg.h>",
    "comments": '#include /*c*/ "cfg.h" // x',
    "macro": '#define CFG "cfg.h"\n#include CFG',
    "import": '#import "cfg.h"',
}


@pytest.mark.parametrize(
    "name,spelling",
    [
        (n, s)
        for n in ("nvrtc", "hiprtc", "host")
        for k, s in SPELLINGS.items()
        if not (n == "nvrtc" and k == "import")
    ],  # NVRTC has no #import
    ids=[f"{n}-{k}" for n in ("nvrtc", "hiprtc", "host") for k in SPELLINGS if not (n == "nvrtc" and k == "import")],
)
def test_include_folder_headers_in_any_spelling(tmp_path, work, name, spelling):
    """With ``-I DIR`` the closure copies what it finds into the request (as the CLI does on every
    run): its directive reading is the preprocessor's (splices, comments, digraphs, a macro
    naming a literal spelling), so the compile finds the header and the key holds its text."""
    from hipexplore.compile.includes import with_closure

    inc = tmp_path / "inc"
    cfg = header(inc / "cfg.h", OLD)
    comp = compiler(name)

    def build() -> CompileRequest:
        return with_closure(request(name, spelling), include_dirs=[inc])[0]

    cache = CompileCache(disk_dir=tmp_path / "cache")
    first = cache.get_or_compile(build(), comp)
    assert first.outcome == "compiled"
    settle()
    header(cfg, NEW)
    settle()
    req = build()
    fresh = comp.compile(req).binary
    assert fresh != first.binary
    assert cache.get_or_compile(req, comp).binary == fresh


@pytest.mark.parametrize("var", ["CPATH", "CPLUS_INCLUDE_PATH"])
def test_hiprtc_reads_the_include_path_variables_of_its_clang(tmp_path, work, monkeypatch, var):
    """comgr runs clang's driver in-process, which reads CPATH / CPLUS_INCLUDE_PATH: the header's
    content (from clang's -M) and the variable (the identity, the helper's and workers'
    environment) are keyed; pointing the variable at another folder is a change too."""
    first, second = header(tmp_path / "one" / "only.h", OLD).parent, header(tmp_path / "two" / "only.h", NEW).parent
    monkeypatch.setenv(var, str(first))
    served_is_fresh(tmp_path, request("hiprtc", "#include <only.h>"), lambda: monkeypatch.setenv(var, str(second)))


def test_hiprtc_header_found_through_cpath_edited(tmp_path, work, monkeypatch):
    only = header(tmp_path / "one" / "only.h", OLD)
    monkeypatch.setenv("CPATH", str(only.parent))
    served_is_fresh(tmp_path, request("hiprtc", "#include <only.h>"), lambda: header(only, NEW))
