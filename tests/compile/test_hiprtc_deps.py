"""The files a hiprtc compile reads, as comgr's clang lists them (``compile.hiprtc_deps``): the
helper process that asks it, and the reading of its answer. Real hiprtc, a real helper process.

Why it matters: what hiprtc reads outside the request (an absolute include, its system folders) is
part of the key; a file missing from the list would be served stale after an edit, and the request's
own texts (comgr's temp copies) in it would make every key differ.
"""

from __future__ import annotations

import os

import pytest

from hipexplore.compile.hiprtc import HiprtcCompiler
from hipexplore.compile.hiprtc_deps import deps_from_reply, helper, helper_count
from hipexplore.compile.request import CompileRequest, Source


@pytest.fixture
def hiprtc():
    from conftest import require_compiler

    require_compiler("hiprtc")
    return HiprtcCompiler()


def job(text: str, headers=()) -> dict:
    """A question as ``HiprtcCompiler.dependencies`` asks it."""
    return {
        "cwd": os.getcwd(),
        "source": ["k.hip", text],
        "headers": [list(h) for h in headers],
        "options": ["--offload-arch=gfx90a"],
    }


def test_an_absolute_include_is_listed_and_the_requests_own_texts_are_not(hiprtc, tmp_path):
    outside = tmp_path / "outside.h"
    outside.write_text("#define OUTSIDE 2\n")
    text = f'#include "{outside}"\n#include "own.h"\n__global__ void k(int* p) {{ *p = OUTSIDE + OWN; }}\n'
    req = CompileRequest(Source("k.hip", text), "hiprtc", "gfx90a", headers=[("own.h", "#define OWN 1\n")])
    deps = hiprtc.dependencies(req)
    assert not deps.error and str(outside) in deps.files
    assert not any("CompileSource" in f or f.endswith("/own.h") for f in deps.files)
    assert deps.angled and not any("/comgr-" in d for d in (*deps.quoted, *deps.angled))
    assert helper_count() >= 1


def test_a_helper_that_died_is_started_again(hiprtc):
    asker = helper(hiprtc.requested_library or "")
    first = asker.ask(job("__global__ void k(int* p) { *p = 1; }\n"))
    pid = asker.proc.pid
    asker.proc.kill()
    asker.proc.wait()
    again = asker.ask(job("__global__ void k(int* p) { *p = 2; }\n"))
    assert asker.proc.pid != pid and again["status"] == first["status"]  # (-M: comgr reports no code object)
    assert deps_from_reply(first).error == deps_from_reply(again).error == ""


def test_an_answer_without_a_dependency_list_is_an_error_naming_why(hiprtc):
    reply = helper(hiprtc.requested_library or "").ask(job('#include "nowhere.h"\n'))
    deps = deps_from_reply(reply)
    assert deps.files == () and "could not list the files" in deps.error and "nowhere.h" in deps.error
    assert "no dependency output (6)" in deps_from_reply({"deps": "", "log": "", "status": 6}).error
