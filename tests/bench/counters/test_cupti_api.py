"""The CUPTI range profiler's structures as ``hipexplore.bench.counters.cupti_api`` declares them,
against the C headers installed with the ``nvidia-cuda-cupti`` wheel (``setup.sh --dev``, extra
``cuda``): every field at the offset and of the size the compiler puts it, and each declared size
(``SIZE``, the header's ``CUPTI_PROFILER_STRUCT_SIZE`` of our last field) within the structure.
A wrong offset would have CUPTI read a pointer as a count on the GPU, where nothing says why.

The program is compiled by the host's C compiler; ``cuda.h`` (which the headers include for
``CUcontext`` alone) is given as the three typedefs they use, since no CUDA driver header is here."""

from __future__ import annotations

import ctypes
import glob
import os
import subprocess
from pathlib import Path

import pytest

from conftest import need, need_tool
from hipexplore.bench.counters.cupti_api import STRUCTS

HEADERS = ("cupti_target.h", "cupti_profiler_target.h", "cupti_profiler_host.h", "cupti_range_profiler.h")


def _include_dir() -> Path:
    try:
        import nvidia  # the CUDA wheels' namespace package

        roots = list(getattr(nvidia, "__path__", []))
    except ImportError:
        roots = []
    for root in roots:
        for hit in sorted(glob.glob(os.path.join(root, "*", "include", "cupti_range_profiler.h"))):
            return Path(hit).parent
    need(
        "CUPTI headers", "no nvidia/*/include/cupti_range_profiler.h (the nvidia-cuda-cupti wheel of the `cuda` extra)"
    )
    raise AssertionError("unreachable")


def _program() -> str:
    lines = ["#include <stdio.h>", "#include <stddef.h>", *[f"#include <{h}>" for h in HEADERS], "int main(void) {"]
    for name, struct in STRUCTS.items():
        lines.append(f'  printf("{name} sizeof %zu\\n", sizeof({name}));')
        for field, _ in struct._fields_:
            lines.append(
                f'  printf("{name} {field} %zu %zu\\n", offsetof({name}, {field}), sizeof((({name}*)0)->{field}));'
            )
    return "\n".join([*lines, "  return 0;", "}", ""])


def test_every_declared_field_sits_where_the_installed_headers_put_it(tmp_path: Path) -> None:
    include = _include_dir()
    cc = need_tool("cc", "gcc")
    (tmp_path / "stub").mkdir()
    (tmp_path / "stub" / "cuda.h").write_text(
        "typedef struct CUctx_st *CUcontext;\ntypedef int CUdevice;\ntypedef struct CUstream_st *CUstream;\n"
    )
    (tmp_path / "layout.c").write_text(_program())
    language = ["-x", "c++"] if "#include <string>" in (include / "cupti_profiler_host.h").read_text() else ["-std=c11"]
    built = subprocess.run(
        [
            cc,
            *language,
            "-I",
            str(tmp_path / "stub"),
            "-I",
            str(include),
            str(tmp_path / "layout.c"),
            "-o",
            str(tmp_path / "layout"),
        ],
        capture_output=True,
        text=True,
    )
    if built.returncode and language[0] == "-x":
        cxx = need_tool("c++", "g++")
        built = subprocess.run(
            [
                cxx,
                "-I",
                str(tmp_path / "stub"),
                "-I",
                str(include),
                str(tmp_path / "layout.c"),
                "-o",
                str(tmp_path / "layout"),
            ],
            capture_output=True,
            text=True,
        )
    assert built.returncode == 0, built.stderr[-3000:]
    seen: dict[str, dict[str, tuple[int, ...]]] = {}
    for line in subprocess.run(
        [str(tmp_path / "layout")], capture_output=True, text=True, check=True
    ).stdout.splitlines():
        name, field, *numbers = line.split()
        seen.setdefault(name, {})[field] = tuple(int(n) for n in numbers)
    assert set(seen) == set(STRUCTS)
    for name, struct in STRUCTS.items():
        for field, _ in struct._fields_:
            ours = getattr(struct, field)
            assert (ours.offset, ours.size) == seen[name][field], (
                f"{name}.{field}: ours {ours.offset}+{ours.size}, the header's {seen[name][field]}"
            )
        assert struct.SIZE <= seen[name]["sizeof"][0], name
        last = struct._fields_[-1][0]
        assert struct.SIZE == sum(seen[name][last]), name


def test_the_declared_sizes_end_at_the_last_field_and_pointers_are_pointer_sized() -> None:
    pointer = ctypes.sizeof(ctypes.c_void_p)
    for name, struct in STRUCTS.items():
        assert struct._fields_[0][0] == "structSize" and struct._fields_[1][0] == "pPriv", name
        assert getattr(struct, "pPriv").offset == pointer
        last = getattr(struct, struct._fields_[-1][0])
        assert struct.SIZE == last.offset + last.size
        assert struct.SIZE <= ctypes.sizeof(struct)
    with pytest.raises(KeyError):
        STRUCTS["CUpti_Profiler_NoSuch_Params"]
