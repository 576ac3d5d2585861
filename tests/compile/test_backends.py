"""The three compiler backends against the real compilers: hiprtc (ROCm via hip-python), NVRTC, cc."""
from __future__ import annotations

import ctypes
import io
import os
import shutil
import struct
import time

import numpy as np
import pytest

from conftest import AXPY_FLOAT_MANGLED, AXPY_HEADER, AXPY_TEMPLATE, TRIAD_C, TRIAD_C_HEADER, TRIAD_HIP, slow_c_source
from hipexplore.compile._common import file_stamp
from hipexplore.compile.base import Compiler
from hipexplore.compile.request import CompileRequest, Source
from hipexplore.errors import CompileError, CompilerUnavailable, CompileTimeout, ConfigError

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
    req = CompileRequest(Source("axpy.hip", AXPY_TEMPLATE), "hiprtc", "gfx90a", headers=[AXPY_HEADER],
                         kernels=("axpy<float>",))
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
    req = CompileRequest(Source("axpy.hip", AXPY_TEMPLATE), "hiprtc", "gfx90a", headers=[AXPY_HEADER],
                         kernels=("axpy<float>",), diagnostics={"dump-source", "dump-asm", "trace"})
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


# ------------------------------------------------------------------------------------------ nvrtc
@pytest.fixture(scope="module")
def nvrtc():
    from hipexplore.compile.nvrtc import NvrtcCompiler

    return NvrtcCompiler()


def _cuda_sm(flags: int) -> int:
    # CUDA >= 12.8 ELF ABI v8 keeps the SM in bits 8..15; older cubins in bits 0..7
    return (flags >> 8) & 0xFF if (flags >> 24) else flags & 0xFF


def test_nvrtc_triad_is_sm90_cubin(need_nvrtc, nvrtc):
    obj = nvrtc.compile(CompileRequest(Source("triad.cu", TRIAD_HIP), "nvrtc", "sm_90", kernels=("triad",)))
    machine, flags = elf_header(obj.binary)
    assert machine == EM_CUDA
    assert _cuda_sm(flags) == 90, hex(flags)
    assert "triad" in symbols(obj.binary)
    sm80 = nvrtc.compile(CompileRequest(Source("triad.cu", TRIAD_HIP), "nvrtc", "sm_80"))
    assert _cuda_sm(elf_header(sm80.binary)[1]) == 80  # the target really reaches the compiler


def test_nvrtc_name_expression_and_header(need_nvrtc, nvrtc):
    req = CompileRequest(Source("axpy.cu", AXPY_TEMPLATE), "nvrtc", "sm_90", headers=[AXPY_HEADER],
                         kernels=("axpy<float>",))
    obj = nvrtc.compile(req)
    assert obj.symbol("axpy<float>") == AXPY_FLOAT_MANGLED
    assert AXPY_FLOAT_MANGLED in symbols(obj.binary)


def test_nvrtc_ptx_mode(need_nvrtc, nvrtc):
    obj = nvrtc.compile(CompileRequest(Source("triad.cu", TRIAD_HIP), "nvrtc", "sm_90", mode="ptx"))
    text = obj.binary.decode()
    assert ".target sm_90" in text and ".entry triad(" in text
    assert not obj.binary.endswith(b"\0")


def test_nvrtc_syntax_error(need_nvrtc, nvrtc):
    req = CompileRequest(Source("bad.cu", TRIAD_HIP + "\nint broken = ;\n"), "nvrtc", "sm_90", options=("-lineinfo",))
    with pytest.raises(CompileError) as info:
        nvrtc.compile(req)
    err = info.value
    assert "bad.cu(7)" in err.log and "error" in err.log
    assert err.options == ("-arch=sm_90", "-lineinfo") and err.target == "sm_90" and err.compiler == "nvrtc"


def test_nvrtc_identity_targets_and_bad_target(need_nvrtc, nvrtc):
    ident = nvrtc.identity()
    assert ident.version.startswith("nvrtc ")
    assert os.path.basename(ident.library).startswith("libnvrtc.so") and ident.stamp == file_stamp(ident.library)
    assert "sm_90" in nvrtc.targets() and "sm_80" in nvrtc.targets()
    with pytest.raises(ConfigError, match="gfx90a"):
        nvrtc.compile(CompileRequest(Source("t.cu", TRIAD_HIP), "nvrtc", "gfx90a"))


def test_nvrtc_dump_asm_writes_ptx(need_nvrtc, nvrtc, tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path))
    obj = nvrtc.compile(CompileRequest(Source("triad.cu", TRIAD_HIP), "nvrtc", "sm_90",
                                       diagnostics={"dump-asm", "trace"}))
    ptx = list(tmp_path.rglob("*.ptx"))
    assert len(ptx) == 1 and ".entry triad(" in ptx[0].read_text()
    assert "[trace] nvrtcCompileProgram(['-arch=sm_90'])" in obj.log


@pytest.mark.gpu  # cuobjdump comes with the CUDA toolkit of the GPU job (conftest.GPU_ONLY), not with pip's NVRTC
def test_nvrtc_cubin_dump_asm_writes_sass_with_cuobjdump(need_nvrtc, nvrtc, tmp_path, monkeypatch):
    from conftest import need_tool

    need_tool("cuobjdump")
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path))
    obj = nvrtc.compile(CompileRequest(Source("k.cu", TRIAD_HIP), "nvrtc", "sm_90", mode="cubin", kernels=("triad",),
                                       diagnostics={"dump-asm"}))
    sass = list(tmp_path.rglob("*.sass"))
    assert sass and "triad" in sass[0].read_text(), obj.log


def test_nvrtc_dump_asm_without_cuobjdump_says_the_sass_was_skipped(need_nvrtc, nvrtc, tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path / "dump"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no cuobjdump, wherever the machine has one
    obj = nvrtc.compile(CompileRequest(Source("k.cu", TRIAD_HIP), "nvrtc", "sm_90", mode="cubin", kernels=("triad",),
                                       diagnostics={"dump-asm"}))
    assert "dump-asm: SASS skipped, cuobjdump not on PATH" in obj.log and not list(tmp_path.rglob("*.sass"))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["cubin", "ptx"])
def test_nvrtc_output_runs_on_a_cuda_gpu(need_nvrtc, nvrtc, mode, tmp_path, monkeypatch):
    """Load the NVRTC output with the driver and run triad and axpy<float> (by lowered name)."""
    ctypes_ = ctypes
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path))
    req = CompileRequest(Source("k.cu", TRIAD_HIP + AXPY_TEMPLATE), "nvrtc", "sm_90", mode=mode,
                         headers=[AXPY_HEADER], kernels=("triad", "axpy<float>"), diagnostics={"dump-asm"})
    obj = nvrtc.compile(req)
    from conftest import GPU, need

    try:
        from cuda.bindings import driver as cu
    except ImportError:
        from cuda import cuda as cu
    try:
        status = cu.cuInit(0)[0]
    except Exception as exc:  # no libcuda
        need("a CUDA GPU", f"no CUDA driver: {exc}", flag=GPU)
    if int(status) != 0:
        need("a CUDA GPU", f"cuInit -> {status!r}", flag=GPU)

    def ok(result):
        assert int(result[0]) == 0, result
        return result[1] if len(result) == 2 else None

    ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
    ok(cu.cuCtxSetCurrent(ctx))
    n = 1 << 20
    b, c = np.arange(n, dtype=np.float32), np.full(n, 2.0, np.float32)

    def upload(h):
        d = ok(cu.cuMemAlloc(h.nbytes))
        ok(cu.cuMemcpyHtoD(d, h.ctypes.data, h.nbytes))
        return d

    d_a, d_b, d_c = upload(np.zeros(n, np.float32)), upload(b), upload(c)

    def launch(func, values):
        ptrs = (ctypes_.c_void_p * len(values))(*[ctypes_.addressof(v) for v in values])
        ok(cu.cuLaunchKernel(func, n // 256, 1, 1, 256, 1, 1, 0, 0, ctypes_.addressof(ptrs), 0))
        ok(cu.cuCtxSynchronize())

    u64 = ctypes_.c_uint64
    mod = ok(cu.cuModuleLoadData(obj.binary + (b"\0" if mode == "ptx" else b"")))
    launch(ok(cu.cuModuleGetFunction(mod, b"triad")),
           [u64(int(d_a)), u64(int(d_b)), u64(int(d_c)), ctypes_.c_float(3.0), ctypes_.c_int(n)])
    launch(ok(cu.cuModuleGetFunction(mod, obj.symbol("axpy<float>").encode())),
           [u64(int(d_a)), u64(int(d_b)), ctypes_.c_float(0.5), ctypes_.c_int(n)])
    a = np.empty(n, np.float32)
    ok(cu.cuMemcpyDtoH(a.ctypes.data, d_a, a.nbytes))
    np.testing.assert_array_equal(a, b + 3.0 * c + 2 * 0.5 * b)  # SCALE is 2 in the header
    for d in (d_a, d_b, d_c):
        ok(cu.cuMemFree(d))
    ok(cu.cuModuleUnload(mod))


# ------------------------------------------------------------------------------------------ host
@pytest.fixture
def host():
    from hipexplore.compile.host import HostCompiler

    return HostCompiler()


def test_host_triad_builds_and_runs(need_host_cc, host, tmp_path):
    req = CompileRequest(Source("triad.c", TRIAD_C), "host", "host", headers=[TRIAD_C_HEADER], kernels=("triad",))
    obj = host.compile(req)
    machine, _ = elf_header(obj.binary)
    assert machine == EM_X86_64 and ELFFile(io.BytesIO(obj.binary)).header["e_type"] == "ET_DYN"
    assert "triad" in symbols(obj.binary)
    lib_path = tmp_path / "triad.so"
    lib_path.write_bytes(obj.binary)
    lib = ctypes.CDLL(str(lib_path))
    n = 1000
    a, b, c = np.zeros(n, np.float32), np.arange(n, dtype=np.float32), np.full(n, 2.0, np.float32)
    fptr = ctypes.POINTER(ctypes.c_float)
    lib.triad.argtypes = [fptr, fptr, fptr, ctypes.c_float, ctypes.c_long]
    lib.triad(a.ctypes.data_as(fptr), b.ctypes.data_as(fptr), c.ctypes.data_as(fptr), 3.0, n)
    np.testing.assert_array_equal(a, b + 3.0 * c)


def test_host_syntax_error_and_bad_target(need_host_cc, host):
    req = CompileRequest(Source("bad.c", "int f(int x) { return x + ; }\n"), "host", "host", options=("-Wall",))
    with pytest.raises(CompileError) as info:
        host.compile(req)
    err = info.value
    assert "bad.c:1" in err.log and "error" in err.log
    assert err.options == ("-O3", "-shared", "-fPIC", "-Wall") and err.target == "host" and err.compiler == "host"
    with pytest.raises(ConfigError, match="'gfx90a'"):
        host.compile(req.with_(target="gfx90a"))


def test_host_dump_asm(need_host_cc, host, tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path))
    obj = host.compile(CompileRequest(Source("triad.c", TRIAD_C), "host", "host", headers=[TRIAD_C_HEADER],
                                      diagnostics={"dump-asm", "dump-source"}))
    asm = list(tmp_path.rglob("*.s"))
    assert len(asm) == 1 and "triad:" in asm[0].read_text()
    assert "dump-source: wrote" in obj.log
    dumped = {p.name: p for p in tmp_path.rglob("*") if p.is_file()}
    assert dumped["triad.c"].read_text() == TRIAD_C  # the dumped text is what was compiled
    assert dumped["triad.h"].read_text() == TRIAD_C_HEADER[1]
    assert f"dump-source: wrote {dumped['triad.h']}" in obj.log


def _copied_cc(tmp_path) -> str:
    """A real copy of the system gcc driver (gcc finds cc1 and its plugins relative to itself, so the
    prefix's lib/ and libexec/ are linked in next to the copy's bin/)."""
    real = os.path.realpath(shutil.which("cc") or "")
    if "gcc" not in os.path.basename(real):
        from conftest import need

        need("gcc as the host compiler cc (Debian's, as in CI)", f"cc is {real}; the copy trick relies on gcc's relative lookup")
    (tmp_path / "bin").mkdir()
    prefix = os.path.dirname(os.path.dirname(real))
    for sub in ("lib", "libexec"):
        if os.path.isdir(os.path.join(prefix, sub)):
            os.symlink(os.path.join(prefix, sub), tmp_path / sub)
    copy = tmp_path / "bin" / "cc"
    shutil.copy2(real, copy)
    return str(copy)


def test_host_identity_follows_cc_and_its_stamp(need_host_cc, tmp_path, monkeypatch):
    from hipexplore.compile.host import HostCompiler

    copy = _copied_cc(tmp_path)
    monkeypatch.setenv("CC", copy)
    c = HostCompiler()
    first = c.identity()
    assert first.library == os.path.realpath(copy)
    system = HostCompiler(cc="cc").identity()
    assert first.version == system.version and first.stamp == system.stamp  # same bytes, same mtime (copy2)
    assert first != system  # but another path
    c.compile(CompileRequest(Source("t.c", "int f(int x) { return x + 1; }\n"), "host", "host"))
    st = os.stat(copy)
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert c.identity() is first  # within the recheck interval the verified identity is reused
    c.identity_recheck_seconds = 0.0
    assert c.identity().stamp == first.stamp  # a touch alone: same content, same stamp (the hash is of the bytes)
    with open(copy, "r+b") as f:  # an edit far past the first MiB (the old stamp hashed only that)
        f.seek(0, 2)
        f.write(b"\0" * 4096)
    second = c.identity()  # same instance: re-stat notices the change
    assert second.stamp != first.stamp and second.version == first.version and second.library == first.library


#: A 1 s compile timeout on the ~20 s slow_c_source() compile has fired, and killed it, by then.
KILLED_BY_S = 6.0


def test_host_in_process_timeout_kills_the_compiler(need_host_cc):
    from hipexplore.compile.host import HostCompiler

    c = HostCompiler(timeout=1.0)
    c.identity()  # probing cc (cc --version) is not part of the compile
    start = time.monotonic()
    with pytest.raises(CompileTimeout, match="1.0 s") as info:
        c.compile(CompileRequest(Source("slow.c", slow_c_source()), "host", "host"))
    elapsed = time.monotonic() - start
    # the compile takes ~20 s: the timeout fired at its limit (measured: 1.01 s), not when the compile
    # ended. The lower bound is exact (the limit is read on this clock); the upper one only has to tell
    # the two apart: "within 2x" (< 2 s) measured the machine's load on the kill (issue 26.6).
    assert 1.0 <= elapsed < KILLED_BY_S, elapsed
    assert info.value.timeout == 1.0
    assert "slow.c" in info.value.log  # the command line
    command = info.value.log.splitlines()[0]  # "$ cc -O3 ... -o <tmp>/lib.so <tmp>/slow.c"
    tmpdir = os.path.dirname(command.split()[-1]).encode()
    deadline = time.monotonic() + 3  # SIGKILL lands asynchronously
    while _processes_mentioning(tmpdir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_mentioning(tmpdir), "the cc/cc1 of the timed-out compile is still running"


def _processes_mentioning(text: bytes) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``text``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != b"Z":
            found.append(int(pid))
    return found


# ------------------------------------------------------------------------------------------ registry
def test_registry_defaults_and_errors(monkeypatch):
    from hipexplore.compile import registry
    from hipexplore.compile.isolation import IsolatedCompiler

    with pytest.raises(ConfigError, match="'clang'.*hiprtc, nvrtc, host"):
        registry.get_compiler("clang")
    with pytest.raises(ConfigError, match="workers"):
        registry.get_compiler("host", isolated=True, workers=0)
    with pytest.raises(ConfigError, match="timeout"):
        registry.get_compiler("host", timeout=-1)
    hip = registry.get_compiler("hiprtc")
    assert isinstance(hip, IsolatedCompiler) and hip.kwargs == {"allow_unknown_targets": True}
    assert registry.get_compiler("hiprtc") is hip  # cached
    assert hip.timeout == registry.DEFAULT_TIMEOUT
    assert not isinstance(registry.get_compiler("nvrtc"), IsolatedCompiler)
    assert not isinstance(registry.get_compiler("host"), IsolatedCompiler)
    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "7.5")
    assert registry.get_compiler("hiprtc").timeout == 7.5
    assert registry.get_compiler("host").timeout == 7.5
    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="'soon'"):
        registry.get_compiler("hiprtc")
    monkeypatch.setenv("HIPEXPLORE_COMPILE_TIMEOUT", "30")
    monkeypatch.setenv("CC", "/nonexistent/hipexplore-cc")
    with pytest.raises(CompilerUnavailable, match="hipexplore-cc"):
        registry.get_compiler("host").compile(CompileRequest(Source("t.c", "int x;"), "host", "host"))


def test_registry_isolated_unavailable_hiprtc(monkeypatch):
    from hipexplore.compile import registry

    monkeypatch.setenv("HIPEXPLORE_HIPRTC_LIBRARY", "libhipexplore-no-such-hiprtc.so.0")
    c = registry.get_compiler("hiprtc", workers=1)
    try:
        assert not c.available() and "libhipexplore-no-such-hiprtc.so.0" in c.unavailable_reason()
        with pytest.raises(CompilerUnavailable, match="libhipexplore-no-such-hiprtc.so.0"):
            c.compile(CompileRequest(Source("t.hip", TRIAD_HIP), "hiprtc", "gfx90a"))  # raised in the worker
    finally:
        c.close()


def test_compiler_info_rows():
    from hipexplore.compile.registry import compiler_info

    rows = {r["name"]: r for r in compiler_info()}
    assert set(rows) == {"hiprtc", "nvrtc", "host", "triton"}
    for row in rows.values():
        assert {"name", "available", "reason", "version", "library", "targets"} <= set(row)
        if row["available"]:
            assert row["version"] and row["targets"] and row["reason"] == ""
        else:
            assert row["reason"]
    if rows["hiprtc"]["available"]:
        assert "gfx90a" in rows["hiprtc"]["targets"]
    if rows["nvrtc"]["available"]:
        assert "sm_90" in rows["nvrtc"]["targets"]


# --- hipexplore.compile.backends directly: the name -> class table ------------------------------------


@pytest.mark.timeout(120)
def test_backends_table_names_classes_and_refuses_unknown_names():
    import subprocess
    import sys

    from hipexplore.compile.backends import BACKENDS, backend_class
    from hipexplore.compile.request import COMPILERS

    assert tuple(BACKENDS) == tuple(COMPILERS)
    assert {n: b.isolated_by_default for n, b in BACKENDS.items()} == {"hiprtc": True, "nvrtc": False, "host": False,
                                                                       "triton": True}
    from hipexplore.compile.host import HostCompiler

    assert backend_class("host") is HostCompiler
    assert backend_class("nvrtc").__name__ == "NvrtcCompiler" == BACKENDS["nvrtc"].cls
    with pytest.raises(ConfigError, match=r"^unknown compiler 'nvcc'; expected one of hiprtc, nvrtc, host, triton$"):
        backend_class("nvcc")
    # only the asked backend's module is imported (a machine without hip-python still has nvrtc and host)
    probe = ("import sys; from hipexplore.compile.backends import backend_class; backend_class('host'); "
             "print(sorted(m for m in sys.modules if m in ('hipexplore.compile.hiprtc', 'hipexplore.compile.nvrtc', "
             "'hipexplore.compile.tritonc', 'hipexplore.compile.host')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=100, check=True).stdout
    assert out.strip() == "['hipexplore.compile.host']"
