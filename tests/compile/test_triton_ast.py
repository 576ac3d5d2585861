"""One Python file as the Triton request builder reads it (``compile.triton_ast``): which statements
bind each name, the imports of each spelling, what a statement reads, and where an import leads,
all without importing anything. What a kernel's key holds is decided from these readings
(test_triton_modules.py), so each reading is pinned here on real files.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from hipexplore.compile.triton_ast import find_import, local_names, names_used, read_source_file, segment
from hipexplore.errors import ConfigError

MODULE = textwrap.dedent(
    """\
    import os.path
    import numpy as np
    from .sibling import helper as h
    from triton.language import *
    X = 1
    def f(a, *rest, k=X):
        global G
        G = a
        y = a + k
        return y
    f.attr = 2
    if X:
        Z = 3
    X += 1
    f.cache.update({})

    @decorate
    def g():
        return h.sub.value + np.pi
    """
)


def read(tmp_path: Path, text: str = MODULE, name: str = "m.py"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return read_source_file(path)


def test_each_name_is_bound_by_its_statements_in_file_order(tmp_path):
    mod = read(tmp_path)
    lines = {n: [s.lineno for s in stmts] for n, stmts in mod.binds.items()}
    assert lines["X"] == [5, 14]  # bound, then changed
    assert lines["f"] == [6, 11, 15]  # defined, an attribute set, changed by a call on it
    assert lines["Z"] == [12]  # under `if`: the whole statement
    assert set(mod.imports) == {"os", "np", "h"} and [s.module for s in mod.stars] == ["triton.language"]
    assert mod.name == "m" and not mod.is_package


def test_a_functions_locals_and_what_a_statement_reads(tmp_path):
    mod = read(tmp_path)
    f = mod.binds["f"][0]
    assert local_names(f) == {"a", "rest", "k", "y"}  # `G` is declared global
    g = mod.binds["g"][0]
    used = names_used(g)
    assert ("h", "sub", "value") in used.chains and ("np", "pi") in used.chains and "decorate" in used.names
    assert segment(mod, g).startswith("@decorate\ndef g():")


def test_where_imports_lead(tmp_path):
    (tmp_path / "pkg" / "inner").mkdir(parents=True)
    for rel in ("pkg/__init__.py", "pkg/inner/__init__.py", "pkg/inner/leaf.py", "beside.py"):
        (tmp_path / rel).write_text("")
    mod = read(tmp_path, "x = 1\n", "pkg/inner/m.py")
    found = {
        spec: (f.kind, f.name, f.path and f.path.relative_to(tmp_path).as_posix())
        for spec, f in {
            "triton.language": find_import("triton.language", 0, mod),
            "os": find_import("os", 0, mod),
            "json": find_import("json", 0, mod),
            ".leaf": find_import("leaf", 1, mod),
            "..": find_import("", 2, mod),
            ".missing": find_import("missing", 1, mod),
            "beside": find_import("beside", 0, mod, roots=(tmp_path,)),
            "nowhere": find_import("hx_no_such_module_anywhere", 0, mod),
        }.items()
    }
    assert found == {
        "triton.language": ("triton", "triton.language", None),
        "os": ("stdlib", "os", None),
        "json": ("stdlib", "json", None),
        ".leaf": ("source", "leaf", "pkg/inner/leaf.py"),
        "..": ("source", "", "pkg/__init__.py"),
        ".missing": ("opaque", ".missing", None),
        "beside": ("source", "beside", "beside.py"),
        "nowhere": ("opaque", "hx_no_such_module_anywhere", None),
    }


def test_a_file_that_does_not_parse_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match=r"does not parse: line 2"):
        read(tmp_path, "x = 1\ndef (:\n")
    with pytest.raises(ConfigError, match="cannot read Triton source"):
        read_source_file(tmp_path / "absent.py")
    assert isinstance(read(tmp_path, "", "pkg/__init__.py").tree, ast.Module)
    assert read(tmp_path, "", "pkg/__init__.py").is_package
