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
    a = req(headers=(Source("a.h", "A"), Source("b.h", "B")), label="one")
    b = req(headers=(Source("b.h", "B"), Source("a.h", "A")), label="two")
    assert make_key(a, IDENT) == make_key(b, IDENT)
    assert make_key(a, IDENT).record["request"]["headers"][0]["name"] == "a.h"


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


@pytest.mark.parametrize("opt", ["-I/tmp/inc", "-isystem/usr/include", "--include-path=/x", "-include", "@args.txt"])
def test_options_that_read_unkeyed_files_are_refused(opt):
    with pytest.raises(ConfigError) as exc:
        req(options=(opt,))
    assert repr(opt) in str(exc.value) and "headers" in str(exc.value)


def test_harmless_look_alike_options_pass():
    assert req(options=("-lineinfo", "-O3", "-DX=1")).options == ("-lineinfo", "-O3", "-DX=1")


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
