"""The generated modules of a Triton kernel (``compile.triton_modules.kernel_sources``): what is
carried of each module the kernel reaches, how its imports are rewritten, and why a request is
uncacheable. ``ast`` alone: nothing here imports Triton or compiles (test_triton_keys.py compiles
each spelling with the real Triton and checks that no edit is served stale).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from compile.test_triton import HELPERS, KERNEL
from hipexplore.compile.triton_modules import PURE_STDLIB, kernel_module, kernel_sources
from hipexplore.errors import ConfigError

HEAD = "import triton\nimport triton.language as tl\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root / "k.py"


def jit(body: str, extra: str = "", imports: str = "") -> str:
    """A module whose kernel ``k`` stores ``body``."""
    return (
        HEAD
        + imports
        + extra
        + f"\n\n@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    tl.store(x_ptr, {body})\n"
    )


def test_kernel_module_carries_only_what_the_kernel_needs(tmp_path):
    """The kernel's module holds the kernel and what it reads; the local module it imports from is
    carried as a generated module of its own (its names keep their own globals, as in Python)."""
    write(tmp_path, {"helpers.py": HELPERS, "k.py": KERNEL})
    text = kernel_module(tmp_path / "k.py", "scale")
    main, modules, why = kernel_sources(tmp_path / "k.py", "scale")
    assert main == text and why == ()
    assert "def scale" in text and "def twice" not in text and "from ._hx1_helpers import twice" in text
    assert "not_a_kernel" not in text and "UNUSED" not in text and "from helpers" not in text
    assert [m.name for m in modules] == ["_hx1_helpers.py"] and "def twice" in modules[0].text


def test_a_kernel_parameter_hides_the_global_of_its_name(tmp_path):
    """``BLOCK`` is the kernel's parameter: the module's ``BLOCK`` (read from the environment) is
    not what the kernel reads, so it neither enters the module nor makes the request uncacheable."""
    path = write(tmp_path, {"k.py": jit("BLOCK", extra="import os\nBLOCK = int(os.environ.get('HX_BLOCK', '64'))\n")})
    main, _, why = kernel_sources(path, "k")
    assert why == () and "HX_BLOCK" not in main


def test_a_module_reached_through_an_alias_and_a_package_is_carried_with_what_it_needs(tmp_path):
    helper = HEAD + "FACTOR = 2.0\nOTHER = 9\n@triton.jit\ndef f(x):\n    return x * FACTOR\n"
    path = write(
        tmp_path,
        {
            "helper.py": helper,
            "pkg/__init__.py": "",
            "pkg/sub.py": HEAD + "@triton.jit\ndef g(x):\n    return x + 1\n",
            "k.py": jit("pkg_sub.g(H.f(1.0))", imports="import helper as H\nfrom pkg import sub as pkg_sub\n"),
        },
    )
    main, modules, why = kernel_sources(path, "k")
    names = {m.name: m.text for m in modules}
    assert why == () and set(names) == {"_hx1_helper.py", "_hx2_pkg.py", "_hx3_sub.py"}
    assert "from . import _hx1_helper as H\n" in main and "from . import _hx3_sub as pkg_sub\n" in main
    assert "FACTOR = 2.0" in names["_hx1_helper.py"] and "OTHER" not in names["_hx1_helper.py"]
    assert "def g" in names["_hx3_sub.py"]


@pytest.mark.parametrize(
    "extra, why",
    [
        ("SCALE = float(open('scale.txt').read())\n", "calls open()"),
        ("import time\nSCALE = time.time()\n", "uses time from time"),
        (
            "try:\n    from fastscale import SCALE\nexcept ImportError:\n    SCALE = 2.0\n",
            "inside a compound statement",
        ),
        ("from hx_no_such_module import SCALE\n", "a module without Python source here"),
    ],
    ids=["open", "time", "import-under-try", "opaque"],
)
def test_what_the_texts_cannot_pin_is_a_reason_not_to_cache(tmp_path, extra, why):
    main, _, reasons = kernel_sources(write(tmp_path, {"k.py": jit("SCALE", extra=extra)}), "k")
    assert len(reasons) == 1 and why in reasons[0] and "SCALE" in main


def test_pure_standard_modules_are_keyed_by_their_text(tmp_path):
    assert "math" in PURE_STDLIB and "os" not in PURE_STDLIB
    main, _, why = kernel_sources(write(tmp_path, {"k.py": jit("SCALE", extra="import math\nSCALE = math.pi\n")}), "k")
    assert why == () and "import math\n" in main and "SCALE = math.pi" in main


def test_a_kernel_that_is_missing_or_not_jitted_is_one_clear_error(tmp_path):
    path = write(tmp_path, {"k.py": jit("1") + "\ndef plain(x):\n    return x\n"})
    with pytest.raises(ConfigError, match=r"no function 'nope'.*@triton.jit functions there: k"):
        kernel_sources(path, "nope")
    with pytest.raises(ConfigError, match="'plain' .* is not decorated with @triton.jit"):
        kernel_sources(path, "plain")


def test_a_relative_import_that_leads_nowhere_is_refused(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/k.py": jit("f(1)", imports="from .missing import f\n")})
    with pytest.raises(ConfigError, match="does not resolve to a Python file"):
        kernel_sources(tmp_path / "pkg" / "k.py", "k")
