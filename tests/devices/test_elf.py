"""hipexplore.devices.elf: the functions a shared library exports, read from its ELF dynamic
symbol table (what "kernel 'x' is not in the loaded host module" lists). Real libraries built
with the host's cc."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import need_tool
from hipexplore.devices.elf import exported_functions

SOURCE = r"""
int visible(int x) { return x + 1; }
void _Z4axpyIfEvPT_PKS0_S0_i(void) {}
__attribute__((weak)) int weak_one(void) { return 2; }
static int hidden_static(int x) { return x * 2; }
__attribute__((visibility("hidden"))) int hidden_visibility(void) { return hidden_static(3); }
int exported_data = 7;
extern int puts(const char*);
int calls_puts(void) { return puts("x"); }
"""


def build(tmp_path: Path, source: str = SOURCE) -> Path:
    cc = need_tool("cc")
    src = tmp_path / "lib.c"
    src.write_text(source)
    out = tmp_path / "libx.so"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(src)], check=True, capture_output=True, timeout=120
    )
    return out


@pytest.mark.timeout(120)
def test_lists_defined_global_and_weak_functions_only(tmp_path):
    names = exported_functions(build(tmp_path))
    # defined functions, global or weak, sorted; not static/hidden ones, not data, not imports (puts)
    assert names == sorted(["_Z4axpyIfEvPT_PKS0_S0_i", "calls_puts", "visible", "weak_one"])


@pytest.mark.timeout(120)
def test_a_library_without_functions_lists_nothing(tmp_path):
    assert exported_functions(build(tmp_path, "int only_data = 1;\n")) == []


@pytest.mark.timeout(120)
def test_what_is_not_an_elf64_library_lists_nothing(tmp_path):
    lib = build(tmp_path)
    data = lib.read_bytes()
    cases = {
        "missing": None,
        "text": b"not an ELF file at all" * 10,
        "short": data[:40],
        "elf32": data[:4] + b"\x01" + data[5:],  # EI_CLASS 1: ELF32
        "truncated": data[:200],  # header says sections lie beyond the end
    }
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        assert exported_functions(path) == [], name
    assert exported_functions(tmp_path) == []  # a directory
    assert exported_functions(str(lib)) == exported_functions(lib)  # a str path too
