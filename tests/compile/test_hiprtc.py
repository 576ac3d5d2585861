"""hiprtc's diagnostics in the user's terms (issue 26, item 2): comgr compiles copies of the texts
in a temp folder of its own, so its messages said ``/tmp/comgr-xxxx/input/CompileSource:2:39``;
NVRTC's name the source. They now name the source and header as the request does, with the
user's line and column, and a missing header says that ``-I DIR`` / ``--include-dir`` exist.
Real hiprtc compiles (through the worker-isolated compiler the registry gives) and the real CLI.
"""

from __future__ import annotations

import re

import pytest

import cliproc
from hipexplore.compile import CompileRequest, Source
from hipexplore.errors import CompileError


def compile_error(name: str, text: str, headers=()) -> str:
    from conftest import require_compiler

    comp = require_compiler(name)
    target = "gfx90a" if name == "hiprtc" else "sm_90"
    with pytest.raises(CompileError) as info:
        comp.compile(CompileRequest(Source("stencil.hip", text), name, target, headers=headers))
    return info.value.log


def test_an_error_in_the_source_names_its_file_line_and_column():
    log = compile_error("hiprtc", "\n__global__ void k(int* p) {\n  *p = undefined_name;\n}\n")
    assert "stencil.hip:3:8: error: use of undeclared identifier 'undefined_name'" in log
    assert "comgr-" not in log and "CompileSource" not in log


def test_an_error_in_a_request_header_names_the_header_and_the_include_line():
    log = compile_error(
        "hiprtc",
        '#include "sub/params.h"\n__global__ void k(int* p) { *p = N; }\n',
        headers=[("sub/params.h", "// parameters\nconstexpr int N = oops;\n")],
    )
    assert "In file included from stencil.hip:1:" in log
    assert re.search(r"(?m)^sub/params\.h:2:19: error: use of undeclared identifier 'oops'", log), log
    assert "comgr-" not in log


@pytest.mark.parametrize("name", ["hiprtc", "nvrtc"])
def test_a_missing_header_hints_at_include_dirs(name):
    log = compile_error(name, '#include "tile_config.h"\n__global__ void k(int* p) { *p = 1; }\n')
    assert "tile_config.h" in log and "comgr-" not in log
    hint = [line for line in log.splitlines() if line.startswith("hint:")]
    assert len(hint) == 1 and "-I DIR" in hint[0] and "--include-dir" in hint[0] and "'tile_config.h'" in hint[0]


def test_the_cli_names_the_users_file_and_hints(tmp_path):
    from conftest import require_compiler

    require_compiler("hiprtc")
    src = tmp_path / "stencil.hip"
    src.write_text("#include <missing/tile.h>\n__global__ void k(int* p) { *p = 1; }\n")
    proc = cliproc.run(
        [
            "compile",
            str(src),
            "--compiler",
            "hiprtc",
            "--target",
            "gfx90a",
            "--no-cache",
        ],
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "stencil.hip:1:10: fatal error: 'missing/tile.h' file not found" in proc.stderr
    assert "--include-dir" in proc.stderr and "comgr-" not in proc.stderr


def test_other_paths_are_left_alone():
    from hipexplore.compile._common import user_diagnostics

    req = CompileRequest(Source("a.hip", ""), "hiprtc", "gfx90a")
    text = "/opt/rocm/include/hip/x.h:3:1: note: here\n/home/u/comgr-notes/file.h:1:1: warning: w"
    assert user_diagnostics(text, req) == text
