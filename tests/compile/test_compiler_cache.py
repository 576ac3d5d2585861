"""The compilers' own caches as recorded state (issue 45, item 1): what decides each one, that the
state reaches the real compiler call (NVRTC's options and the environment of the process that made
the call, recorded by the call itself), that every cache event carries it, and that a folder the
compiler's cache cannot use is one line before any work."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import cliproc
from hipexplore.compile import compiler_cache
from hipexplore.compile.cache import CompileCache
from hipexplore.compile.isolation import IsolatedCompiler
from hipexplore.compile.request import CompileRequest
from hipexplore.errors import ConfigError

from conftest import require_compiler

REPO = Path(__file__).resolve().parents[2]
CU = """extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""
CACHE_VARS = (
    "HIPEXPLORE_COMPILER_CACHE",
    "HIPEXPLORE_NVRTC_PCH",
    *compiler_cache.ENV["nvrtc"],
    *compiler_cache.ENV["hiprtc"],
    "TRITON_CACHE_DIR",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in CACHE_VARS:
        monkeypatch.delenv(name, raising=False)


def _request(options=(), diagnostics=frozenset()) -> CompileRequest:
    return CompileRequest(CU, compiler="nvrtc", target="sm_90", options=tuple(options), diagnostics=diagnostics)


def test_nvrtc_state_follows_setting_options_and_environment():
    assert compiler_cache.state("nvrtc").cache == "on"
    own = compiler_cache.state("nvrtc")
    assert own.why == "NVRTC's default" and own.options == () and own.pch == "off"
    assert own.live is compiler_cache.driver_present() and own.live is os.path.exists(compiler_cache.NVIDIA_DRIVER)
    assert ("inert here" in own.label()) is (not own.live)
    off = compiler_cache.state("nvrtc", environ={"HIPEXPLORE_COMPILER_CACHE": "off"})
    assert (off.cache, off.options) == ("off", ("--no-cache",))
    mine = compiler_cache.state("nvrtc", ("--no-cache",), environ={"HIPEXPLORE_COMPILER_CACHE": "off"})
    assert (
        mine.cache == "off" and mine.options == () and "request's options" in mine.why
    )  # the user's option, not twice
    env_off = compiler_cache.state("nvrtc", environ={"CUDA_CACHE_DISABLE": "1", "CUDA_CACHE_PATH": "/x/nv"})
    assert (env_off.cache, env_off.why, env_off.directory) == ("off", "CUDA_CACHE_DISABLE=1", "/x/nv")
    pch = compiler_cache.state("nvrtc", environ={"HIPEXPLORE_NVRTC_PCH": "on"})
    assert pch.options == ("-pch",) and pch.pch.startswith("on")
    assert compiler_cache.state("nvrtc", ("-pch",), {"NVRTC_DISABLE_PCH": "1"}).pch.startswith("off")
    with pytest.raises(ConfigError, match="HIPEXPLORE_COMPILER_CACHE='sometimes'"):
        compiler_cache.state("nvrtc", environ={"HIPEXPLORE_COMPILER_CACHE": "sometimes"})


def test_other_compilers_state_what_they_have():
    assert compiler_cache.state("host").cache == "none" and compiler_cache.state("host").label().startswith("none:")
    tri = compiler_cache.state("triton")
    assert tri.cache == "off" and "always_compile" in tri.why
    on = compiler_cache.state("triton", environ={"HIPEXPLORE_COMPILER_CACHE": "on", "TRITON_CACHE_DIR": "/t/c"})
    assert (on.cache, on.directory) == ("on", "/t/c")
    assert compiler_cache.backend_kwargs("triton", {"HIPEXPLORE_COMPILER_CACHE": "on", "TRITON_CACHE_DIR": "/t/c"}) == {
        "triton_cache_dir": "/t/c"
    }
    assert compiler_cache.state("someone-elses").cache == "unknown"


def test_comgr_cache_is_told_by_the_library_file(tmp_path):
    """A comgr that reads AMD_COMGR_CACHE has a cache; ROCm 5.2's (comgr 2.4) does not: read from the
    file itself (real files here, one with the variable's name in it)."""
    new, old = tmp_path / "libamd_comgr.so.3", tmp_path / "libamd_comgr.so.2"
    new.write_bytes(b"\0" * 4096 + b"AMD_COMGR_CACHE_DIR\0" + b"\1" * 100)
    old.write_bytes(b"\0" * 4096 + b"AMD_COMGR_SAVE_TEMPS\0")
    assert compiler_cache.comgr_has_cache(str(new)) and not compiler_cache.comgr_has_cache(str(old))
    assert (
        compiler_cache.state("hiprtc", comgr=str(old), comgr_version="2.4").label()
        == "none in this ROCm: comgr 2.4 has no cache of its own"
    )
    on = compiler_cache.state("hiprtc", comgr=str(new), comgr_version="3.0")
    assert on.cache == "on" and on.directory.endswith("comgr")
    off = compiler_cache.state("hiprtc", environ={"HIPEXPLORE_COMPILER_CACHE": "off"}, comgr=str(new))
    assert off.cache == "off" and off.env == (("AMD_COMGR_CACHE", "0"),)
    assert compiler_cache.process_environment("hiprtc", {"HIPEXPLORE_COMPILER_CACHE": "off"}) == {
        "AMD_COMGR_CACHE": "0"
    }


def test_the_installed_hiprtc_says_none_in_this_rocm():
    hiprtc = require_compiler("hiprtc")
    label = hiprtc.own_cache((), hiprtc.identity()).label()
    version = dict(hiprtc.identity().extra).get("comgr_version", "")
    if compiler_cache.comgr_has_cache(dict(hiprtc.identity().extra).get("comgr", "")):
        from conftest import NOT_REQUIRED, need

        need("a ROCm without a COMGR cache", f"this ROCm's comgr {version} has a cache of its own", flag=NOT_REQUIRED)
    assert label == f"none in this ROCm: comgr {version} has no cache of its own"


def test_the_real_nvrtc_call_gets_no_cache_when_asked(monkeypatch):
    """The options of the real nvrtcCompileProgram call, as its trace records them at the call,
    and the call's own record in the binary's metadata."""
    nvrtc = require_compiler("nvrtc")
    default = nvrtc.compile(_request(diagnostics=frozenset({"trace"})))
    calls = [line for line in default.log.splitlines() if "nvrtcCompileProgram(" in line]
    assert len(calls) == 1 and "--no-cache" not in calls[0] and "SUCCESS" in calls[0]
    monkeypatch.setenv("HIPEXPLORE_COMPILER_CACHE", "off")
    monkeypatch.setenv("CUDA_CACHE_MAXSIZE", "1048576")
    off = nvrtc.compile(_request(diagnostics=frozenset({"trace"})))
    (call,) = [line for line in off.log.splitlines() if "nvrtcCompileProgram(" in line]
    assert "'--no-cache'" in call and "NVRTC_SUCCESS" in call  # NVRTC 13 knows the option: it compiled
    meta = off.metadata["compiler_call"]
    assert meta["options"][-1] == "--no-cache" and meta["environment"] == {"CUDA_CACHE_MAXSIZE": "1048576"}
    assert meta["pid"] == os.getpid() and meta["own_cache"].startswith("off: HIPEXPLORE_COMPILER_CACHE=off")
    assert off.binary[:4] == b"\x7fELF"


def test_pch_setting_reaches_nvrtc(monkeypatch):
    nvrtc = require_compiler("nvrtc")
    monkeypatch.setenv("HIPEXPLORE_NVRTC_PCH", "on")
    code = nvrtc.compile(_request(options=("--pch-verbose=true",)))
    assert "-pch" in code.metadata["compiler_call"]["options"]
    assert "precompiled header" in code.log  # NVRTC itself says it made (or used) one


def test_isolated_worker_records_its_own_environment(tmp_path):
    """A replay pass's compiler: the workers get the pass's mode and folder; the call in the worker
    records them (another pid), and the state the parent records for its events says the same."""
    require_compiler("nvrtc")
    folder = tmp_path / "own"
    env = compiler_cache.pass_environment("nvrtc", "off", str(folder))
    with IsolatedCompiler("nvrtc", workers=1, env=env) as comp:
        code = comp.compile(_request())
        assert comp.own_cache(()).label().startswith("off: HIPEXPLORE_COMPILER_CACHE=off")
    call = code.metadata["compiler_call"]
    assert call["pid"] != os.getpid() and "--no-cache" in call["options"]
    assert call["environment"] == {"CUDA_CACHE_PATH": str(folder / "nv")}


def test_every_event_carries_the_state_and_a_users_option_is_keyed(monkeypatch):
    nvrtc = require_compiler("nvrtc")
    cache = CompileCache(disk_dir=False)
    plain = cache.get_or_compile(_request(), nvrtc)
    again = cache.get_or_compile(_request(), nvrtc)
    mine = cache.get_or_compile(_request(options=("--no-cache",)), nvrtc)
    monkeypatch.setenv("HIPEXPLORE_COMPILER_CACHE", "off")
    later = cache.get_or_compile(_request(), nvrtc)  # a memory hit: what a compile would use now
    ev = cache.events()
    assert list(ev["outcome"]) == ["compiled", "memory-hit", "compiled", "memory-hit"]
    assert ev["compiler_cache"][0] == ev["compiler_cache"][1] == compiler_cache.state("nvrtc", environ={}).label()
    assert ev["compiler_cache"][2].startswith("off: --no-cache in the request's options")
    assert ev["compiler_cache"][3].startswith("off: HIPEXPLORE_COMPILER_CACHE=off")
    assert mine.key.digest != plain.key.digest and again.key.digest == plain.key.digest == later.key.digest
    assert mine.object_code.metadata["compiler_call"]["options"].count("--no-cache") == 1


def test_pch_option_is_allowed_for_nvrtc_only():
    assert CompileRequest(CU, compiler="nvrtc", target="sm_90", options=("-pch",)).options == ("-pch",)
    with pytest.raises(ConfigError, match="-pch"):
        CompileRequest("int f(void);", compiler="host", target="host", options=("-pch",))
    with pytest.raises(ConfigError, match="--pch-dir"):
        CompileRequest(CU, compiler="nvrtc", target="sm_90", options=("--pch-dir=/tmp/x",))


@pytest.mark.parametrize("how", ["file", "unwritable"])
def test_bad_cuda_cache_path_is_one_line_and_nothing_is_lost(tmp_path, how):
    """`hipexplore compile --compiler nvrtc` with CUDA_CACHE_PATH a file, or under a folder no file can
    be made in (/proc: refused to root too): one line naming the variable, exit 2, before any work:
    the disk tier's entries and an existing --out file stay as they were. With the compiler's cache
    off the folder is not used, and the compile goes on."""
    require_compiler("nvrtc")
    src = tmp_path / "k.cu"
    src.write_text(CU)
    cache = tmp_path / "cache"
    env = {**os.environ, "HIPEXPLORE_CACHE_DIR": str(cache)}
    for name in CACHE_VARS:
        env.pop(name, None)
    run = lambda *extra, **more: cliproc.run(  # noqa: E731
        ["compile", str(src), "--compiler", "nvrtc", "--target", "sm_90", *extra],
        cwd=REPO,
        timeout=300,
        env={**env, **more},
    )
    first = run("--json")
    assert first.returncode == 0, first.stderr
    entries = sorted(p.name for p in cache.rglob("*.hxc"))
    out = tmp_path / "kept.cubin"
    out.write_bytes(b"\x7fELF old")
    if how == "file":
        bad = tmp_path / "a-file"
        bad.write_text("not a folder")
    else:
        bad = Path("/proc/hipexplore-no-such-folder/nv")
    proc = run("--out", str(out), "--force", CUDA_CACHE_PATH=str(bad))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "CUDA_CACHE_PATH" in lines[0] and str(bad) in lines[0], proc.stderr
    assert ("is a file" in lines[0]) if how == "file" else ("cannot be written" in lines[0])
    assert sorted(p.name for p in cache.rglob("*.hxc")) == entries and out.read_bytes() == b"\x7fELF old"
    fine = run("--json", CUDA_CACHE_PATH=str(bad), HIPEXPLORE_COMPILER_CACHE="off")
    assert fine.returncode == 0, fine.stderr
    assert json.loads(fine.stdout)["compiler_cache"].startswith("off: HIPEXPLORE_COMPILER_CACHE=off")


def test_bad_cache_size_is_refused_in_the_library_too(monkeypatch):
    nvrtc = require_compiler("nvrtc")
    monkeypatch.setenv("CUDA_CACHE_MAXSIZE", "lots")
    with pytest.raises(ConfigError, match="CUDA_CACHE_MAXSIZE='lots'"):
        nvrtc.compile(_request())
