"""No stale Triton binary (issue 25, item 4, Triton part): every input of a Triton compile is in its
key, however the kernel's source spells it, and every variable Triton reads that changes the code.

Each case compiles a real kernel with the real Triton 3.9 wheel (gfx942 code objects, sm_90 cubins
with its ptxas) through a cache with a disk tier, changes one input, compiles through the cache
again (the same cache object: memory tier and key memo; and a new one on the same folder: disk
tier) and asserts the binary served is the one a fresh compile (another compiler, its own worker
process, no cache) makes of the changed input, and differs from the one before: a stale binary
would be caught.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from conftest import require_compiler
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.triton_modules import kernel_sources
from hipexplore.compile.triton_source import (
    FILE_ENV,
    NEUTRAL_ENV,
    UNCACHEABLE_ENV,
    VALUE_ENV,
    triton_env_names,
    triton_environment,
    triton_request,
)

SIG = "x_ptr:*fp32,y_ptr:*fp32,n:i32"
HEAD = "import triton\nimport triton.language as tl\n"


def kernel(body_expr: str, imports: str = "", extra: str = "") -> str:
    """A kernel y = <body_expr>(x) with the given imports and module-level text."""
    return (
        HEAD
        + imports
        + "\n"
        + extra
        + textwrap.dedent(f"""

        @triton.jit
        def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            x = tl.load(x_ptr + offs, mask=m)
            tl.store(y_ptr + offs, {body_expr}, mask=m)
        """)
    )


HELPER = HEAD + textwrap.dedent("""
    FACTOR = tl.constexpr(2.0)


    @triton.jit
    def f(x):
        return x * FACTOR + 1.5
    """)


@pytest.fixture(scope="module")
def compilers():
    from hipexplore.compile.registry import new_compiler

    require_compiler("triton")
    cached, fresh = new_compiler("triton", workers=1), new_compiler("triton", workers=1)
    yield cached, fresh
    cached.close()
    fresh.close()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


class Case:
    def __init__(
        self,
        tmp_path: Path,
        compilers,
        files: dict[str, str],
        target: str = "gfx942",
        environ: dict | None = None,
        options: dict | None = None,
    ) -> None:
        self.root = tmp_path / "src"
        self.disk = tmp_path / "cache"
        write(self.root, files)
        self.cached, self.fresh = compilers
        self.cache = CompileCache(disk_dir=self.disk, remote=False)
        self.target, self.environ, self.options = target, dict(environ or {}), dict(options or {})

    def request(self):
        return triton_request(
            self.root / "k.py", "k", SIG, self.target, {"BLOCK": 128}, self.options, environ=self.environ
        )

    def check(self, change, fresh=None) -> None:
        """Compile, ``change()``, compile through the cache again: served == fresh, != before."""
        before = self.cache.get_or_compile(self.request(), self.cached)
        assert before.outcome == "compiled"
        change()
        served = self.cache.get_or_compile(self.request(), self.cached)
        from_disk = CompileCache(disk_dir=self.disk, remote=False).get_or_compile(self.request(), self.cached)
        truth = (fresh or self.fresh).compile(self.request()).binary
        assert served.outcome == "compiled", "the change did not change the key: served from the cache"
        assert served.binary == truth and from_disk.binary == truth
        assert truth != before.binary, "the change does not change the binary: this case could not catch a stale one"
        # and once stored, the changed input is a hit, not a recompile every time
        assert (
            CompileCache(disk_dir=self.disk, remote=False).get_or_compile(self.request(), self.cached).outcome
            == "disk-hit"
        )


def edit(path: Path, old: str, new: str):
    def change():
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))

    return change


# -- the kernel's sources, every spelling -----------------------------------------------------------
SPELLINGS = {
    # the case: a module alias and an attribute call
    "import-as-alias": ({"k.py": kernel("H.f(x)", "import helper as H\n"), "helper.py": HELPER}, "helper.py"),
    "import-module": ({"k.py": kernel("helper.f(x)", "import helper\n"), "helper.py": HELPER}, "helper.py"),
    "from-import-renamed": ({"k.py": kernel("g(x)", "from helper import f as g\n"), "helper.py": HELPER}, "helper.py"),
    "from-import": ({"k.py": kernel("f(x)", "from helper import f\n"), "helper.py": HELPER}, "helper.py"),
    "dotted-package-chain": (
        {
            "k.py": kernel("pkg.sub.helper.f(x)", "import pkg.sub.helper\n"),
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "",
            "pkg/sub/helper.py": HELPER,
        },
        "pkg/sub/helper.py",
    ),
    "from-package-import-submodule": (
        {"k.py": kernel("S.f(x)", "from pkg import helper as S\n"), "pkg/__init__.py": "", "pkg/helper.py": HELPER},
        "pkg/helper.py",
    ),
    "package-reexport": (
        {"k.py": kernel("api.f(x)", "import api\n"), "api/__init__.py": "from .impl import f\n", "api/impl.py": HELPER},
        "api/impl.py",
    ),
    "relative-import-in-package": (
        {
            "k.py": kernel("lib.front.g(x)", "import lib.front\n"),
            "lib/__init__.py": "",
            "lib/front.py": HEAD + "from .back import f\n\n@triton.jit\ndef g(x):\n    return f(x) * 3.0\n",
            "lib/back.py": HELPER,
        },
        "lib/back.py",
    ),
    "star-import": ({"k.py": kernel("f(x)", "from helper import *\n"), "helper.py": HELPER}, "helper.py"),
    "two-hops": (
        {
            "k.py": kernel("mid.g(x)", "import mid\n"),
            "mid.py": HEAD + "import helper as inner\n\n@triton.jit\ndef g(x):\n    return inner.f(x) - 0.25\n",
            "helper.py": HELPER,
        },
        "helper.py",
    ),
    "module-passed-whole": (
        {"k.py": kernel("getattr(H, 'f')(x)", "import helper as H\n"), "helper.py": HELPER},
        "helper.py",
    ),
}


@pytest.mark.parametrize("case", sorted(SPELLINGS))
def test_an_edit_to_a_helper_however_it_is_reached_is_never_served_stale(tmp_path, compilers, case):
    files, helper = SPELLINGS[case]
    c = Case(tmp_path, compilers, files)
    c.check(edit(c.root / helper, "FACTOR = tl.constexpr(2.0)", "FACTOR = tl.constexpr(3.0)"))


def test_a_helper_found_on_sys_path_not_beside_the_kernel(tmp_path, compilers, monkeypatch):
    elsewhere = tmp_path / "site"
    write(elsewhere, {"farhelper.py": HELPER})
    monkeypatch.syspath_prepend(str(elsewhere))
    c = Case(tmp_path, compilers, {"k.py": kernel("F.f(x)", "import farhelper as F\n")})
    c.check(edit(elsewhere / "farhelper.py", "+ 1.5", "+ 2.5"))


@pytest.mark.parametrize(
    "extra,old,new",
    [
        # a global defined under a condition: the whole statement is carried
        ("if True:\n    SCALE = tl.constexpr(2.0)\nelse:\n    SCALE = tl.constexpr(9.0)\n", "(2.0)", "(5.0)"),
        # a global bound twice: the later binding is the one the kernel reads (file order, not first found)
        ("SCALE = tl.constexpr(2.0)\nSCALE = tl.constexpr(4.0)\n", "(4.0)", "(6.0)"),
        # a global computed from another one
        ("BASE = 2.0\nSCALE = tl.constexpr(BASE * 2)\n", "BASE = 2.0", "BASE = 3.0"),
    ],
    ids=["under-if", "rebound", "computed"],
)
def test_module_level_values_the_kernel_reads(tmp_path, compilers, extra, old, new):
    c = Case(tmp_path, compilers, {"k.py": kernel("x * SCALE", extra=extra)})
    c.check(edit(c.root / "k.py", old, new))


def test_a_value_that_can_change_without_its_text_is_compiled_every_time(tmp_path, compilers):
    """``SCALE = tl.constexpr(float(open(...).read()))``: its text stays, its value does not. Such a
    request is never cached (outcome ``bypassed``, nothing stored) and equals a fresh compile."""
    scale = tmp_path / "scale.txt"
    scale.write_text("2.0")
    extra = f"SCALE = tl.constexpr(float(open({str(scale)!r}).read()))\n"
    c = Case(tmp_path, compilers, {"k.py": kernel("x * SCALE", extra=extra)})
    _, _, why = kernel_sources(c.root / "k.py", "k")
    assert why and "open()" in why[0]
    outcomes, binaries = [], []
    for value in ("2.0", "3.0"):
        scale.write_text(value)
        res = c.cache.get_or_compile(c.request(), c.cached)
        outcomes.append(res.outcome)
        binaries.append(res.binary)
        assert res.binary == c.fresh.compile(c.request()).binary
    assert outcomes == ["bypassed", "bypassed"] and binaries[1] != binaries[0]
    assert not any(c.disk.rglob("*.hxc"))


@pytest.mark.parametrize(
    "extra",
    [
        "import os\nSCALE = tl.constexpr(float(os.environ.get('HX_SCALE', '2.0')))\n",
        "from time import time\nSCALE = tl.constexpr(time() % 2)\n",
        "import random\nSCALE = tl.constexpr(random.random())\n",
        "try:\n    from fastscale import SCALE\nexcept ImportError:\n    SCALE = tl.constexpr(2.0)\n",
    ],
    ids=["os.environ", "time", "random", "import-under-try"],
)
def test_impure_module_level_values_make_the_request_uncacheable(tmp_path, compilers, extra):
    write(tmp_path, {"k.py": kernel("x * SCALE", extra=extra)})
    req = triton_request(tmp_path / "k.py", "k", SIG, "gfx942", {"BLOCK": 128}, environ={})
    key = CompileCache(disk_dir=False, remote=False).key_for(req, compilers[0])
    assert not key.cacheable and key.record["implicit"]["error"]


# -- the environment ---------------------------------------------------------------------------------
def test_every_variable_the_installed_triton_reads_is_classified():
    """Found in Triton's own files (knobs.py, its getenv calls, GetEnv.h): each is neutral, keyed by
    value, keyed by the file it names, or makes the request uncacheable. A Triton upgrade that
    reads a new one fails here (and, until classified, such a variable set is never cached)."""
    names = triton_env_names()
    assert {"PTXAS_OPTIONS", "TRITON_PTXAS_PATH", "DISABLE_MMA_V3", "TRITON_HIP_USE_BLOCK_PINGPONG"} <= names
    assert names - (NEUTRAL_ENV | VALUE_ENV | FILE_ENV | set(UNCACHEABLE_ENV)) == set()


def test_an_unknown_triton_variable_is_not_cached(monkeypatch):
    from hipexplore.compile import triton_env  # where the environment is classified (triton_source re-exports it)

    monkeypatch.setattr(triton_env, "triton_env_names", lambda: frozenset({"TRITON_NEW_KNOB"}))
    env, why = triton_environment({"TRITON_NEW_KNOB": "1"})
    assert env == {"TRITON_NEW_KNOB": "1"} and why and "TRITON_NEW_KNOB" in why[0]


def test_ptxas_options_are_keyed_and_compiled_with_even_in_a_worker_that_imported_triton_without_them(
    tmp_path, compilers, monkeypatch
):
    """PTXAS_OPTIONS was not keyed; and Triton reads it once, at import (a dataclass default), so a
    worker started without it compiled without it. -O0 changes the cubin."""
    from hipexplore.compile.registry import new_compiler

    c = Case(tmp_path, compilers, {"k.py": kernel("x * 2.0 + 1.0")}, target="sm_90")
    c.cached.compile(c.request())  # the cache's worker has imported Triton with PTXAS_OPTIONS unset
    monkeypatch.setenv("PTXAS_OPTIONS", "-O0")
    fresh = new_compiler("triton", workers=1)  # started with the variable set: a really fresh compile
    try:
        c.environ = {}

        def change():
            c.environ = {"PTXAS_OPTIONS": "-O0"}

        c.check(change, fresh=fresh)
    finally:
        fresh.close()


def test_disable_mma_v3_a_variable_outside_tritons_prefixes(tmp_path, compilers):
    dot = HEAD + textwrap.dedent("""
        @triton.jit
        def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            r = tl.arange(0, 64)
            a = tl.load(x_ptr + r[:, None] * 64 + r[None, :]).to(tl.float16)
            c = tl.dot(a, a)
            tl.store(y_ptr + r[:, None] * 64 + r[None, :], c)
        """)
    c = Case(tmp_path, compilers, {"k.py": dot}, target="sm_90", options={"num_warps": 4})

    def change():
        c.environ = {"DISABLE_MMA_V3": "1"}

    c.check(change)


def test_the_ptxas_a_variable_names_is_keyed_by_its_content(tmp_path, compilers):
    """TRITON_PTXAS_PATH: the same path, another ptxas (the wheel's Blackwell one) copied over it."""
    import importlib.util

    bindir = Path(importlib.util.find_spec("triton").origin).parent / "backends" / "nvidia" / "bin"
    ptxas = tmp_path / "tools" / "ptxas"
    ptxas.parent.mkdir()
    shutil.copy2(bindir / "ptxas", ptxas)
    c = Case(
        tmp_path, compilers, {"k.py": kernel("x * 2.0")}, target="sm_90", environ={"TRITON_PTXAS_PATH": str(ptxas)}
    )
    first = c.cache.get_or_compile(c.request(), c.cached)
    key = first.key
    ptxas.write_bytes((bindir / "ptxas-blackwell").read_bytes())
    second = c.cache.get_or_compile(c.request(), c.cached)
    assert second.outcome == "compiled" and second.key.digest != key.digest
    assert second.binary == c.fresh.compile(c.request()).binary


def test_a_ptxas_script_and_an_ir_override_are_never_cached(tmp_path, compilers):
    """A wrapper script chooses its tool when it runs (not in the key); TRITON_KERNEL_OVERRIDE
    reads IR files chosen at compile time: compiled every time, nothing stored."""
    import importlib.util

    bindir = Path(importlib.util.find_spec("triton").origin).parent / "backends" / "nvidia" / "bin"
    script = tmp_path / "ptxas-wrapper"
    script.write_text(f'#!/bin/sh\nexec "{bindir / "ptxas"}" "$@"\n')
    script.chmod(0o755)
    for environ in ({"TRITON_PTXAS_PATH": str(script)}, {"TRITON_KERNEL_OVERRIDE": "1"}):
        c = Case(
            tmp_path / next(iter(environ)), compilers, {"k.py": kernel("x * 2.0")}, target="sm_90", environ=environ
        )
        key = c.cache.key_for(c.request(), c.cached)
        assert not key.cacheable and "error" in key.record["implicit"]
        assert c.cache.get_or_compile(c.request(), c.cached).outcome == "bypassed"


def test_files_named_by_ptxas_options_and_ir_override_are_keyed_by_content(tmp_path, compilers):
    opts = tmp_path / "ptxas.opts"
    opts.write_text("-O3\n")
    ir = tmp_path / "k.ptx"
    ir.write_text("// an IR file\n")
    cache = CompileCache(disk_dir=False, remote=False)
    write(tmp_path, {"k.py": kernel("x * 2.0")})

    def key(environ, options):
        return cache.key_for(
            triton_request(tmp_path / "k.py", "k", SIG, "sm_90", {"BLOCK": 128}, options, environ=environ), compilers[0]
        )

    for environ, options, f in (
        ({"PTXAS_OPTIONS": f"--options-file {opts}"}, {}, opts),
        ({"PTXAS_OPTIONS": f"-optf={opts}"}, {}, opts),
        ({}, {"ptx_options": f"--options-file {opts}"}, opts),
        ({}, {"ir_override": str(ir)}, ir),
    ):
        before = key(environ, options)
        assert before.cacheable and any(str(f) in e["path"] for e in before.record["implicit"])
        old = f.read_text()
        f.write_text(old + "// edited\n")
        assert key(environ, options).digest != before.digest
        f.write_text(old)
