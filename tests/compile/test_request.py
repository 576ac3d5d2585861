"""Request validation and key construction (the compile-free part of the cache identity)."""

from __future__ import annotations

import pytest

from hipexplore.compile.request import (
    CompileRequest,
    CompilerIdentity,
    Source,
    make_key,
)
from hipexplore.errors import ConfigError

IDENT = CompilerIdentity(name="host", version="cc 12", library="/usr/bin/cc", stamp="abc")


def req(**kw) -> CompileRequest:
    base = dict(source=Source("k.c", "void k(void){}"), compiler="host", target="host")
    base.update(kw)
    return CompileRequest(**base)


def test_key_is_canonical_and_ignores_label_and_header_order():
    from hipexplore.compile.request import KEY_SCHEMA

    a = req(headers=(Source("a.h", "A"), Source("b.h", "B")), label="one")
    b = req(headers=(Source("b.h", "B"), Source("a.h", "A")), label="two")
    assert make_key(a, IDENT) == make_key(b, IDENT)
    assert make_key(a, IDENT).record["schema"] == KEY_SCHEMA  # a schema bump changes every key
    assert make_key(a, IDENT).record["request"]["headers"][0]["name"] == "a.h"


def test_headers_are_keyed_by_the_digest_of_their_text():
    """A tuning list's kernels share a 75 KB header set: keyed in full it made every key record 79 KB
    and a disk hit ~2 ms of JSON. By SHA-256 the record stays small whatever the headers weigh, and
    any change to a header's text (one byte, deep in a large header) is still another key."""
    import hashlib

    big = "".join(f"#define H{i} {i}\n" for i in range(6000))  # ~80 KB
    a = req(headers=(Source("big.h", big),))
    key = make_key(a, IDENT)
    assert len(key.canonical) < 2000 < len(big)
    assert key.record["request"]["headers"] == [{"name": "big.h", "sha256": hashlib.sha256(big.encode()).hexdigest()}]
    edited = big[:40000] + "1" + big[40001:]
    assert make_key(req(headers=(Source("big.h", edited),)), IDENT) != key
    assert make_key(req(headers=(Source("big.h", big + " "),)), IDENT) != key
    assert make_key(req(headers=(Source("other.h", big),)), IDENT) != key  # the name is keyed too


@pytest.mark.parametrize(
    "change",
    [
        dict(source=Source("k.c", "void k(void){ }")),
        dict(source=Source("other.c", "void k(void){}")),
        dict(headers=(Source("a.h", "A2"),)),
        dict(options=("-O2",)),
        dict(kernels=("k",)),
        dict(target="gfx90a", compiler="hiprtc"),
        dict(mode="object"),
    ],
)
def test_any_change_gives_another_key(change):
    ident = IDENT if change.get("compiler", "host") == "host" else CompilerIdentity("hiprtc", "5.2")
    assert make_key(req(**change), ident).digest != make_key(req(), IDENT).digest


def test_option_order_matters_and_identity_enters_key():
    assert make_key(req(options=("-a", "-b")), IDENT) != make_key(req(options=("-b", "-a")), IDENT)
    other = CompilerIdentity(name="host", version="cc 13", library="/usr/bin/cc", stamp="abc")
    restamped = CompilerIdentity(name="host", version="cc 12", library="/usr/bin/cc", stamp="xyz")
    digests = {make_key(req(), i).digest for i in (IDENT, other, restamped)}
    assert len(digests) == 3


def test_injectable_digest_is_only_an_index():
    k1 = make_key(req(), IDENT, digest=lambda b: "same")
    k2 = make_key(req(options=("-O1",)), IDENT, digest=lambda b: "same")
    assert k1.digest == k2.digest and k1.canonical != k2.canonical


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(compiler="gcc"), "'gcc'"),
        (dict(target=""), "target"),
        (dict(options="-O3"), "'-O3'"),
        (dict(kernels=("",)), "kernel names"),
        (dict(diagnostics={"dump-everything"}), "dump-everything"),
        (dict(headers=(Source("a.h", "1"), Source("a.h", "2"))), "unique"),
    ],
)
def test_bad_requests_name_the_value(kw, needle):
    with pytest.raises(ConfigError) as exc:
        req(**kw)
    assert needle in str(exc.value)


def test_mismatched_identity_is_refused():
    with pytest.raises(ConfigError, match="does not match"):
        make_key(req(), CompilerIdentity("nvrtc", "13.0"))


def test_default_modes():
    assert req().mode == "shared-library"
    assert req(compiler="nvrtc", target="sm_90").mode == "cubin"
    assert req(compiler="hiprtc", target="gfx90a").mode == "code-object"


#: Every option prefix that makes a compiler read a file the key cannot see, each in its joined
#: spelling (``-Ifoo``, ``--include-path=foo``) and, where the compilers accept one, as its own word
#: followed by the path (``-I foo``). Written out here, not taken from FILE_READING_OPTIONS, so a
#: prefix dropped from the production tuple fails its case.
REFUSED = [
    ("-I", ["-I/tmp/inc", "-Iinc"], ["-I", "/tmp/inc"]),
    ("-isystem", ["-isystem/usr/include"], ["-isystem", "/usr/include"]),
    ("-iquote", ["-iquote/tmp/inc", "-iquoteinc"], ["-iquote", "/tmp/inc"]),
    ("-idirafter", ["-idirafter/tmp/inc"], ["-idirafter", "/tmp/inc"]),
    ("-include", ["-include/tmp/pre.h", "-includepre.h"], ["-include", "pre.h"]),
    ("--include-path", ["--include-path=/x"], ["--include-path", "/x"]),
    ("--pre-include", ["--pre-include=pre.h"], ["--pre-include", "pre.h"]),
    ("-imacros", ["-imacros/tmp/m.h"], ["-imacros", "m.h"]),
    ("--sysroot", ["--sysroot=/opt/root"], ["--sysroot", "/opt/root"]),
    ("@", ["@args.txt", "@/tmp/args"], None),
]


def test_the_refused_list_is_exactly_the_ten_tested_prefixes():
    from hipexplore.compile.request import FILE_READING_OPTIONS

    assert sorted(FILE_READING_OPTIONS) == sorted(prefix for prefix, _, _ in REFUSED)


@pytest.mark.parametrize("prefix,joined,split", REFUSED, ids=[r[0] for r in REFUSED])
def test_options_that_read_unkeyed_files_are_refused(prefix, joined, split):
    spellings = [(o,) for o in joined] + ([tuple(split)] if split else [])
    for options in spellings:
        # after a harmless option too: every option is checked, not only the first
        for opts in (options, ("-O2", *options)):
            with pytest.raises(ConfigError) as exc:
                req(options=opts)
            assert repr(options[0]) in str(exc.value) and "headers" in str(exc.value), opts


def test_harmless_look_alike_options_pass():
    opts = ("-lineinfo", "-O3", "-DX=1", "-DINCLUDE=1", "-Wno-include", "-fno-builtin", "--use_fast_math", "-g")
    assert req(options=opts).options == opts


def test_object_code_names_are_read_only_and_survive_pickling():
    """A memory hit hands out the stored ObjectCode itself: nobody may change what later hits see."""
    import pickle

    from hipexplore.compile.base import ObjectCode

    code = ObjectCode(b"\x7fELF", "host", "host", "shared-library", lowered_names={"k<int>": "_Z1kIiEvv"})
    with pytest.raises(TypeError, match="read-only"):
        code.lowered_names["k<int>"] = "EVIL"
    with pytest.raises(TypeError):
        code.lowered_names.update(x="y")
    again = pickle.loads(pickle.dumps(code))
    assert again == code and again.symbol("k<int>") == "_Z1kIiEvv"


@pytest.mark.parametrize(
    "compiler, a, b", [("hiprtc", "gfx942", "gfx950"), ("nvrtc", "sm_90", "sm_80"), ("triton", "gfx942", "sm_90")]
)
def test_the_target_alone_changes_the_key(compiler, a, b):
    # one compiler, one identity, one source: only the target differs (a code object for gfx942 is
    # not one for gfx950: a key without the target would hand one to the other)
    ident = CompilerIdentity(compiler, "1.0")
    ka = make_key(req(compiler=compiler, target=a), ident)
    kb = make_key(req(compiler=compiler, target=b), ident)
    assert ka.digest != kb.digest and ka.record["request"]["target"] == a
