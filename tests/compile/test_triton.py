"""The Triton backend with the real PyPI triton wheel (no GPU): gfx942/sm_90 through the cache in
two processes, what the output is, what the key sees, and the Triton tuning replay's counts."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import cliproc
from conftest import require_compiler
from hipexplore.cli import main
from hipexplore.compile.triton_source import codegen_env, triton_request
from hipexplore.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]

HELPERS = """import triton
import triton.language as tl


@triton.jit
def twice(x):
    return x * 2.0
"""

KERNEL = """import triton
import triton.language as tl
from helpers import twice

UNUSED = 7


def not_a_kernel():
    return UNUSED


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, twice(tl.load(x_ptr + offs, mask=m)), mask=m)
"""
SIG = "x_ptr:*fp32,y_ptr:*fp32,n:i32"
EM_AMDGPU, EM_CUDA = 224, 190
EF_AMDGPU_MACH = {"gfx942": 0x04C, "gfx950": 0x04F}


@pytest.fixture
def kernel_dir(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "k.py").write_text(KERNEL)
    return tmp_path


def _elf(binary: bytes) -> tuple[int, int]:
    assert binary[:4] == b"\x7fELF" and binary[4] == 2  # ELF64
    e_machine = struct.unpack_from("<H", binary, 18)[0]
    e_flags = struct.unpack_from("<I", binary, 48)[0]
    return e_machine, e_flags


def _cli(*argv: str, env: dict) -> subprocess.CompletedProcess:
    """``python -m hipexplore ARGV`` in a process of its own (forked from a preloaded interpreter:
    tests/cliproc.py)."""
    return cliproc.run(argv, cwd=REPO, timeout=300, env={**os.environ, **env})


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_compiled_then_disk_hit_in_two_processes(kernel_dir, tmp_path, target):
    """Done-when: a Triton kernel through the cache, `compiled` then `disk-hit`; the gfx942 output is
    an AMDGPU ELF for gfx942, the sm_90 one a CUDA ELF; the metadata carries the ABI's scratch args."""
    require_compiler("triton")
    env = {"HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / f"scale.{target}"
    argv = [
        "compile",
        str(kernel_dir / "k.py"),
        "--compiler",
        "triton",
        "--target",
        target,
        "--kernel",
        "scale",
        "--signature",
        SIG,
        "--constexpr",
        "BLOCK=256",
        "--option",
        "num_warps=4",
        "--out",
        str(out),
        "--json",
    ]
    runs = []
    for _ in range(2):
        proc = _cli(*argv, env=env)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout))
    assert [r["outcome"] for r in runs] == ["compiled", "disk-hit"]
    assert runs[0]["key"] == runs[1]["key"] and runs[0]["metadata"] == runs[1]["metadata"]
    meta = runs[1]["metadata"]
    assert meta["name"] == "scale" and meta["num_warps"] == 4
    # Triton 3.x kernels take trailing scratch pointers: the launcher must pass them
    assert meta["params"][:3] == ["x_ptr", "y_ptr", "n"] and meta["scratch_params"] == [
        "global_scratch",
        "profile_scratch",
    ]
    machine, flags = _elf(out.read_bytes())
    if target == "gfx942":
        assert machine == EM_AMDGPU and flags & 0xFF == EF_AMDGPU_MACH["gfx942"]
        assert meta["warp_size"] == 64 and meta["vgpr"] > 0 and meta["sgpr"] > 0 and meta["lds"] == meta["shared"]
    else:
        assert machine == EM_CUDA and meta["warp_size"] == 32


def test_gfx950_code_object(kernel_dir):
    compiler = require_compiler("triton")
    code = compiler.compile(triton_request(kernel_dir / "k.py", "scale", SIG, "gfx950", {"BLOCK": 128}))
    machine, flags = _elf(code.binary)
    assert machine == EM_AMDGPU and flags & 0xFF == EF_AMDGPU_MACH["gfx950"]


def test_key_changes_with_constexpr_option_helper_and_knob(kernel_dir):
    """Each thing that changes the code changes the key; an unrelated edit in the file does not."""
    from hipexplore.compile.cache import CompileCache

    compiler = require_compiler("triton")
    cache = CompileCache(disk_dir=False)
    path = kernel_dir / "k.py"

    def key(consts=None, opts=None, environ=None):
        req = triton_request(
            path,
            "scale",
            SIG,
            "gfx942",
            consts or {"BLOCK": 256},
            opts or {"num_warps": 4},
            environ=environ if environ is not None else {},
        )
        return cache.key_for(req, compiler).digest

    base = key()
    assert key(consts={"BLOCK": 512}) != base
    assert key(opts={"num_warps": 8}) != base
    assert key(environ={"TRITON_HIP_USE_BLOCK_PINGPONG": "1"}) != base
    assert key(environ={"TRITON_CACHE_DIR": "/elsewhere"}) == base  # where Triton caches changes no code
    path.write_text(KERNEL.replace("UNUSED = 7", "UNUSED = 8").replace("return UNUSED", "return UNUSED + 1"))
    assert key() == base  # neither the kernel nor anything it calls
    (kernel_dir / "helpers.py").write_text(HELPERS.replace("2.0", "3.0"))
    assert key() != base  # the called @triton.jit helper, in another (local) module


def test_knob_in_key_is_the_knob_compiled_with(kernel_dir):
    """The worker compiles with exactly the request's knobs: a knob that changes the code object
    (TRITON_DISABLE_LINE_INFO drops .debug_line) changes the binary, not only the key."""
    compiler = require_compiler("triton")
    req = triton_request(kernel_dir / "k.py", "scale", SIG, "gfx942", {"BLOCK": 256}, environ={})
    req_noline = triton_request(
        kernel_dir / "k.py", "scale", SIG, "gfx942", {"BLOCK": 256}, environ={"TRITON_DISABLE_LINE_INFO": "1"}
    )
    a, b = compiler.compile(req).binary, compiler.compile(req_noline).binary
    assert b".debug_line" in a and b".debug_line" not in b


def test_bad_inputs_are_one_line_each(kernel_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))
    base = [
        "compile",
        str(kernel_dir / "k.py"),
        "--compiler",
        "triton",
        "--target",
        "gfx942",
        "--kernel",
        "scale",
        "--constexpr",
        "BLOCK=256",
    ]
    for extra, needle in (
        (["--signature", "x_ptr:*fp33"], "fp33"),
        ([], "--signature"),
        (["--signature", SIG, "--target", "gfx9"], "gfx9"),
    ):
        argv = base + extra
        if "--target" in extra:
            argv = [a for a in base if a not in ("--target", "gfx942")] + extra
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and len(err.splitlines()) == 1, err
    with pytest.raises(ConfigError, match="no function 'nope'"):
        triton_request(kernel_dir / "k.py", "nope", SIG, "gfx942")


def test_unknown_option_is_refused_not_dropped(kernel_dir):
    """Triton's parse_options silently ignores unknown names; we must not key a typo as a setting."""
    compiler = require_compiler("triton")
    with pytest.raises(ConfigError, match="num_warp"):
        compiler.compile(triton_request(kernel_dir / "k.py", "scale", SIG, "gfx942", {"BLOCK": 256}, {"num_warp": 8}))


def test_codegen_env_leaves_paths_out():
    env = codegen_env(
        {
            "TRITON_CACHE_DIR": "/x",
            "TRITON_HIP_USE_ASYNC_COPY": "1",
            "AMDGCN_USE_BUFFER_OPS": "0",
            "HOME": "/root",
            "TRITON_HOME": "/y",
        }
    )
    assert env == {"AMDGCN_USE_BUFFER_OPS": "0", "TRITON_HIP_USE_ASYNC_COPY": "1"}


def test_tune_replay_triton_counts(capsys):
    """compiles = unique kernels, hits = kernels - unique, and Triton's own cache timed beside ours."""
    require_compiler("triton")
    rc = main(
        [
            "tune-replay",
            "--compiler",
            "triton",
            "--target",
            "gfx942",
            "--problems",
            "1",
            "--limit",
            "3",
            "--estimate-without-cache",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["kernels"] == 11 and out["unique_kernels"] == 9
    assert out["compiles"] == out["unique_kernels"] and out["hits"] == out["kernels"] - out["unique_kernels"]
    cold, warm = out["scenarios"]["triton-cold"], out["scenarios"]["triton-warm"]
    assert cold["compiles"] == out["unique_kernels"] and cold["hits"] == out["kernels"] - out["unique_kernels"]
    assert warm["compiles"] == 0 and warm["hits"] == out["kernels"]
    assert warm["seconds"] < cold["seconds"]


def test_missing_triton_is_reported_unavailable_cleanly():
    """Where triton is not installed the backend says so (and nothing imports it to find out)."""
    code = (
        "import sys; sys.modules['triton'] = None\n"
        "from hipexplore.compile.registry import get_compiler, compiler_info\n"
        "c = get_compiler('triton'); print(c.available()); print(c.unavailable_reason())\n"
        "row = [r for r in compiler_info() if r['name'] == 'triton'][0]; print(row['available'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "False" and "hipexplore[triton]" in lines[1] and lines[2] == "False"


def test_identity_does_not_import_triton():
    code = (
        "import sys\nfrom hipexplore.compile.registry import compiler_info\n"
        "rows = {r['name']: r for r in compiler_info()}\nprint(rows['triton']['version'], 'triton' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    require_compiler("triton")
    assert proc.returncode == 0, proc.stderr
    version, imported = proc.stdout.split()[-2:]
    assert version.startswith("3.") and imported == "False"
