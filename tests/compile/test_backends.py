"""``hipexplore.compile.backends`` (the name -> backend table) and hiprtc against the real compiler
(ROCm via hip-python); the ELF helpers the backend tests share. (NVRTC: test_nvrtc.py; cc:
test_host.py; the registry: test_registry.py.)"""

from __future__ import annotations

import io
import os
import struct

import pytest

from conftest import AXPY_FLOAT_MANGLED, AXPY_HEADER, AXPY_TEMPLATE, TRIAD_HIP
from hipexplore.compile._common import file_stamp
from hipexplore.compile.base import Compiler
from hipexplore.compile.request import CompileRequest, Source
from hipexplore.errors import CompileError, CompilerUnavailable, ConfigError

EM_X86_64, EM_CUDA, EM_AMDGPU = 62, 190, 224
EF_AMDGPU_MACH_GFX90A = 0x3F


def elf_header(binary: bytes) -> tuple[int, int]:
    """(e_machine, e_flags) read straight from an ELF64 header."""
    assert binary[:4] == b"\x7fELF", binary[:16]
    assert binary[4] == 2, "expected ELFCLASS64"
    return struct.unpack_from("<H", binary, 18)[0], struct.unpack_from("<I", binary, 48)[0]


def ELFFile(stream):  # noqa: N802 - lazy so the GPU test below also runs where pyelftools is absent
    from conftest import missing

    try:
        from elftools.elf.elffile import ELFFile as _ELFFile
    except ImportError as exc:
        missing("pyelftools", str(exc))  # pyelftools: the dev extra

    return _ELFFile(stream)


def symbols(binary: bytes) -> set[str]:
    elf = ELFFile(io.BytesIO(binary))
    names: set[str] = set()
    for section in elf.iter_sections():
        if hasattr(section, "iter_symbols"):
            names.update(sym.name for sym in section.iter_symbols())
    return names


# ------------------------------------------------------------------------------------------ hiprtc
@pytest.fixture(scope="module")
def hiprtc():
    from hipexplore.compile.hiprtc import HiprtcCompiler

    return HiprtcCompiler()


def test_hiprtc_triad_is_gfx90a_code_object(need_hiprtc, hiprtc):
    obj = hiprtc.compile(CompileRequest(Source("triad.hip", TRIAD_HIP), "hiprtc", "gfx90a", kernels=("triad",)))
    machine, flags = elf_header(obj.binary)
    assert machine == EM_AMDGPU
    assert flags & 0xFF == EF_AMDGPU_MACH_GFX90A, hex(flags)
    assert {"triad", "triad.kd"} <= symbols(obj.binary)
    assert obj.lowered_names == {"triad": "triad"}
    assert obj.compiler == "hiprtc" and obj.target == "gfx90a" and obj.mode == "code-object"
    assert obj.compile_seconds > 0
    assert isinstance(hiprtc, Compiler)


def test_hiprtc_name_expression_and_header(need_hiprtc, hiprtc):
    req = CompileRequest(
        Source("axpy.hip", AXPY_TEMPLATE), "hiprtc", "gfx90a", headers=[AXPY_HEADER], kernels=("axpy<float>",)
    )
    obj = hiprtc.compile(req)
    assert obj.symbol("axpy<float>") == AXPY_FLOAT_MANGLED
    assert AXPY_FLOAT_MANGLED in symbols(obj.binary)
    with pytest.raises(CompileError) as info:  # without the header the include fails, with a log
        hiprtc.compile(req.with_(headers=()))
    assert "scale.h" in info.value.log


def test_hiprtc_syntax_error_carries_log_options_target(need_hiprtc, hiprtc):
    bad = TRIAD_HIP + "\nint broken = ;\n"
    req = CompileRequest(Source("bad.hip", bad), "hiprtc", "gfx90a", options=("-O2",), kernels=("triad",))
    with pytest.raises(CompileError) as info:
        hiprtc.compile(req)
    err = info.value
    assert "int broken = ;" in err.log and "error" in err.log
    assert err.options == ("--offload-arch=gfx90a", "-O2")
    assert err.target == "gfx90a" and err.compiler == "hiprtc" and err.kernels == ("triad",)


def test_hiprtc_identity_and_targets(need_hiprtc, hiprtc):
    ident = hiprtc.identity()
    assert ident.name == "hiprtc" and ident.version.startswith("hiprtc ") and "rocm " in ident.version
    assert os.path.exists(ident.library) and ident.stamp == file_stamp(ident.library)
    extra = dict(ident.extra)
    assert os.path.isdir(extra["device_libs"]) and extra["device_libs_stamp"].startswith("files=")
    assert "comgr_version" in extra and os.path.exists(extra["comgr"])
    assert hiprtc.identity() is ident  # cached
    targets = hiprtc.targets()
    assert {"gfx90a", "gfx908", "gfx906", "gfx1030"} <= set(targets)


def test_hiprtc_unknown_target_refused_in_process(need_hiprtc, hiprtc):
    """A target missing from this comgr's ISA list is refused in-process (ROCm 5.2's comgr aborts on
    one). Which targets are missing is read from the compiler, not assumed: the documented crashing
    ones it does not list, else a well-formed gfx name that no comgr lists."""
    from hipexplore.compile.hiprtc import CRASHING_ON_ROCM52

    known = set(hiprtc.targets())
    crashing = hiprtc.crashing_targets()
    assert set(crashing) == {t for t in CRASHING_ON_ROCM52 if t not in known}
    target = crashing[0] if crashing else "gfx9ff"
    assert target not in known
    req = CompileRequest(Source("triad.hip", TRIAD_HIP), "hiprtc", target)
    with pytest.raises(CompileError, match="ISA list") as info:  # and this process is still alive
        hiprtc.compile(req)
    assert info.value.target == target
    for listed in [t for t in CRASHING_ON_ROCM52 if t in known]:  # a newer comgr lists it: not refused
        assert listed not in crashing


def test_hiprtc_bad_arguments(need_hiprtc, hiprtc):
    req = CompileRequest(Source("triad.hip", TRIAD_HIP), "hiprtc", "gfx90a")
    with pytest.raises(ConfigError, match="sm_90"):
        hiprtc.compile(req.with_(target="sm_90"))
    with pytest.raises(ConfigError, match="--offload-arch=gfx908"):
        hiprtc.compile(req.with_(options=("--offload-arch=gfx908",)))
    with pytest.raises(ConfigError, match="'cubin'"):
        hiprtc.compile(req.with_(mode="cubin"))


def test_hiprtc_diagnostics_dump_and_trace(need_hiprtc, hiprtc, tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path))
    req = CompileRequest(
        Source("axpy.hip", AXPY_TEMPLATE),
        "hiprtc",
        "gfx90a",
        headers=[AXPY_HEADER],
        kernels=("axpy<float>",),
        diagnostics={"dump-source", "dump-asm", "trace"},
    )
    obj = hiprtc.compile(req)
    assert "[trace] hiprtcCompileProgram(['--offload-arch=gfx90a'])" in obj.log
    assert "[trace] hiprtcGetLoweredName('axpy<float>')" in obj.log
    dumped = {p.name: p for p in tmp_path.rglob("*") if p.is_file()}
    assert dumped["axpy.hip"].read_text() == AXPY_TEMPLATE
    assert dumped["scale.h"].read_text() == AXPY_HEADER[1]
    from hipexplore.compile.hiprtc import objdump_tool

    if objdump_tool():  # the tool the backend itself looks for
        asm = next(p for n, p in dumped.items() if n.endswith(".s")).read_text()
        assert f"<{AXPY_FLOAT_MANGLED}>:" in asm and "global_load" in asm
    else:
        assert "llvm-objdump not found" in obj.log
        from conftest import missing

        missing("tool llvm-objdump", "dump-asm fell back to a note; the disassembly was not checked")


def test_hiprtc_unavailable_names_what_was_looked_for(monkeypatch):
    from hipexplore.compile.hiprtc import HiprtcCompiler

    monkeypatch.setenv("HIPEXPLORE_HIPRTC_LIBRARY", "libhipexplore-no-such-hiprtc.so.0")
    c = HiprtcCompiler()
    assert c.available() is False
    assert "libhipexplore-no-such-hiprtc.so.0" in c.unavailable_reason()
    assert "HIPEXPLORE_HIPRTC_LIBRARY" in c.unavailable_reason()
    with pytest.raises(CompilerUnavailable, match="libhipexplore-no-such-hiprtc.so.0"):
        c.compile(CompileRequest(Source("t.hip", TRIAD_HIP), "hiprtc", "gfx90a"))
    with pytest.raises(CompilerUnavailable, match="libhipexplore-no-such-hiprtc.so.0"):
        c.identity()
    assert c.targets() == ()


# --- hipexplore.compile.backends directly: the name -> class table ------------------------------------


@pytest.mark.timeout(120)
def test_backends_table_names_classes_and_refuses_unknown_names():
    import subprocess
    import sys

    from hipexplore.compile.backends import BACKENDS, backend_class
    from hipexplore.compile.request import COMPILERS

    assert tuple(BACKENDS) == tuple(COMPILERS)
    assert {n: b.isolated_by_default for n, b in BACKENDS.items()} == {
        "hiprtc": True,
        "nvrtc": False,
        "host": False,
        "triton": True,
    }
    from hipexplore.compile.host import HostCompiler

    assert backend_class("host") is HostCompiler
    assert backend_class("nvrtc").__name__ == "NvrtcCompiler" == BACKENDS["nvrtc"].cls
    with pytest.raises(ConfigError, match=r"^unknown compiler 'nvcc'; expected one of hiprtc, nvrtc, host, triton$"):
        backend_class("nvcc")
    # only the asked backend's module is imported (a machine without hip-python still has nvrtc and host)
    probe = (
        "import sys; from hipexplore.compile.backends import backend_class; backend_class('host'); "
        "print(sorted(m for m in sys.modules if m in ('hipexplore.compile.hiprtc', 'hipexplore.compile.nvrtc', "
        "'hipexplore.compile.tritonc', 'hipexplore.compile.host')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=100, check=True).stdout
    assert out.strip() == "['hipexplore.compile.host']"
