"""Keys do not move when the code that builds them is reorganized (issue 48: the compile layer's
modules were split by job).

Why: a key that changes for the same inputs turns every entry of every user's disk cache into a
miss (a cold cache after an upgrade), and a key that loses an input serves stale binaries. The
digests below were recorded on main before the split (cdb5145) for fixed requests under a fixed
compiler identity, so they hold on any machine: what they cover is what the moved code puts into a
request (the standard-header stand-ins of ``std_headers``, the generated Triton modules and encoded
options of ``triton_source``) and the key record itself. A deliberate change of the key (a new
``KEY_SCHEMA``, a new input) updates them in the same commit, saying why.
"""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

from hipexplore.compile.includes import with_closure
from hipexplore.compile.request import CompileRequest, CompilerIdentity, Source, make_key
from hipexplore.compile.std_headers import STD_HEADERS
from hipexplore.compile.triton_source import triton_request

#: every standard-header stand-in, by include spelling, included at once (their texts enter the key)
STD = "".join(f"#include <{name}>\n" for name in sorted(STD_HEADERS))
KERNEL = 'extern "C" __global__ void k(int* p) { *p = std::numeric_limits<int>::max(); }\n'

#: recorded on main at cdb5145, before the split (make_key under ``identity(name)``)
RECORDED = {
    "host": "798277298801373fab7a922ede53210df51c4c5faa166648fe76a1239ef9ed66",
    "nvrtc": "9546d7d47c93b0dfb5ace296b46d970937669cc5041b0a204741865d4fab0009",
    "hiprtc": "5bdf70fe816eb34de8c505a7533b863253d5f47c94159a1471a734e583a1b53d",
    "triton": "aabbae9346b149d4640b121182c4a34a04ca94b68427d043e10ce6f4f8d10bdf",
    "triton-uncacheable": "e21f92337b53008dd57ce35ec365799f7a9f993e6f4a643f95d1c418a74dcd70",
}
#: sha256 of each stand-in's text, recorded with the keys
RECORDED_STD = "275058243c4ca53b2f5fec5d6011e2685cc583728c478f984dc2498cb8b81471"

TRITON_FILES = {
    "helper.py": "import triton\nimport triton.language as tl\nSCALE = 2.0\n@triton.jit\ndef twice(x):\n    return x * SCALE\n",
    "pkg/__init__.py": "",
    "pkg/sub.py": "import triton\n@triton.jit\ndef add1(x):\n    return x + 1\nunused = 3\n",
    "k.py": textwrap.dedent(
        """\
        import triton
        import triton.language as tl
        import helper as H
        from pkg import sub
        import math
        BLOCK_DEFAULT = math.prod([2, 64])

        @triton.jit
        def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + i, mask=i < n)
            tl.store(y_ptr + i, sub.add1(H.twice(x)), mask=i < n)

        def unrelated():
            return 1
        """
    ),
    # a value computed with `os`: the request is marked uncacheable, and the reason is in its key
    "u.py": "import os\nimport triton\nN = len(os.sep)\n@triton.jit\ndef u(x_ptr):\n    tl = N\n",
}


def identity(name: str) -> CompilerIdentity:
    return CompilerIdentity(name=name, version="fixed 1", library="/fixed/lib.so", stamp="s", extra=(("k", "v"),))


def requests(folder: Path) -> dict[str, CompileRequest]:
    for rel, text in TRITON_FILES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return {
        "host": CompileRequest(
            Source("a.c", "int hx(void){return 1;}\n"), "host", "host", kernels=("hx",), options=("-O2",)
        ),
        "nvrtc": with_closure(CompileRequest(Source("k.cu", STD + KERNEL), "nvrtc", "sm_90", kernels=("k",)))[0],
        "hiprtc": with_closure(CompileRequest(Source("k.hip", STD + KERNEL), "hiprtc", "gfx90a", kernels=("k",)))[0],
        "triton": triton_request(
            folder / "k.py",
            "k",
            "x_ptr:*fp32,y_ptr:*fp32,n:i32",
            "gfx942",
            constexprs={"BLOCK": 128},
            options={"num_warps": 4},
            environ={},
        ),
        "triton-uncacheable": triton_request(folder / "u.py", "u", "x_ptr:*fp32", "sm_90", environ={}),
    }


def test_the_standard_header_stand_ins_are_the_texts_recorded_before_the_split():
    digest = hashlib.sha256()
    for name, text in sorted(STD_HEADERS.items()):
        digest.update(f"{name}\0{hashlib.sha256(text.encode()).hexdigest()}\0".encode())
    assert digest.hexdigest() == RECORDED_STD


def test_keys_of_fixed_requests_are_the_ones_recorded_before_the_split(tmp_path):
    found = {name: make_key(req, identity(req.compiler)).digest for name, req in requests(tmp_path).items()}
    assert found == RECORDED


def test_the_recorded_requests_cover_what_the_moved_code_builds(tmp_path):
    """The check can fail: each moved part reaches its key (a stand-in's text, a carried module,
    an uncacheable reason), so an edit to any of them changes a recorded digest."""
    reqs = requests(tmp_path)
    assert {h.name for h in reqs["nvrtc"].headers} >= set(STD_HEADERS)
    assert {h.name for h in reqs["triton"].headers} == {"_hx1_helper.py", "_hx2_pkg.py", "_hx3_sub.py"}
    assert any(o.startswith("uncacheable=") for o in reqs["triton-uncacheable"].options)
    changed = reqs["nvrtc"].with_(
        headers=[h if h.name != "limits" else Source("limits", h.text + "\n") for h in reqs["nvrtc"].headers]
    )
    assert make_key(changed, identity("nvrtc")).digest != RECORDED["nvrtc"]
