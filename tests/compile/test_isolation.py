"""Worker-process isolation with real compilers: real crashes, real timeouts, real signals."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time

import pytest

from conftest import TRIAD_C, TRIAD_C_HEADER, TRIAD_HIP, live_group_members, slow_c_source
from elfcheck import assert_amdgpu_code_object
from hipexplore.compile.isolation import IsolatedCompiler
from hipexplore.compile.request import CompileRequest, Source
from hipexplore.errors import CompileError, CompilerCrashed, CompilerError, CompileTimeout, ConfigError

HIPRTC_WORKER = {"allow_unknown_targets": True}  # what get_compiler("hiprtc") passes


def triad_hip(target: str) -> CompileRequest:
    return CompileRequest(Source("triad.hip", TRIAD_HIP), "hiprtc", target, kernels=("triad",))


def small_c(tag: int = 0) -> CompileRequest:
    return CompileRequest(Source("small.c", f"int f{tag}(int x) {{ return x + {tag}; }}\n"), "host", "host")


def slow_c() -> CompileRequest:
    return CompileRequest(Source("slow.c", slow_c_source()), "host", "host")


def process_gone(pid: int) -> bool:
    """True once ``pid`` no longer exists (reaped, so not even a zombie of ours)."""
    try:
        os.kill(pid, 0)  # succeeds for a zombie too: a worker we failed to reap would fail the test
    except ProcessLookupError:
        return True
    return False


def test_crashing_target_becomes_compiler_crashed_and_pool_recovers(need_hiprtc):
    """Which targets crash is read from the compiler (the documented ROCm 5.2 crashers that this
    comgr does not list; gfx942 on ROCm 5.2). A comgr that lists them all (ROCm >= 6) must compile
    each of them instead, in the worker, as a real gfx code object."""
    with IsolatedCompiler("hiprtc", HIPRTC_WORKER, workers=1, timeout=60) as comp:
        from hipexplore.compile.hiprtc import CRASHING_ON_ROCM52

        crashing = comp.crashing_targets()  # answered in-process from the comgr's ISA list
        if not crashing:
            for target in CRASHING_ON_ROCM52:
                assert target in comp.targets()
                obj = comp.compile(triad_hip(target))
                assert obj.target == target
                assert_amdgpu_code_object(obj.binary, target.split(":")[0], "triad")
            return
        target = crashing[0]
        # first compile in a fresh worker: ROCm 5.2's comgr aborts (glibc "munmap_chunk(): invalid pointer")
        with pytest.raises(CompilerCrashed) as info:
            comp.compile(triad_hip(target))
        err = info.value
        assert err.signal_name == "SIGABRT" and err.exitcode == -signal.SIGABRT
        assert "SIGABRT" in str(err) and f"'{target}'" in str(err) and "ISA list" in str(err)
        assert err.target == target and err.compiler == "hiprtc"
        assert "Fatal Python error" in err.log  # the worker's stderr (faulthandler) is the log
        assert "munmap_chunk(): invalid pointer" in err.log  # glibc's own report, kept off /dev/tty
        assert comp.worker_pids() == []  # the dead worker was reaped and dropped
        obj = comp.compile(triad_hip("gfx90a"))  # the next compile works, in a new worker
        assert obj.target == "gfx90a"
        assert_amdgpu_code_object(obj.binary, "gfx90a", "triad")
        assert len(comp.worker_pids()) == 1
        # after an earlier compile the same heap corruption may surface as SIGSEGV: still a crash report
        with pytest.raises(CompilerCrashed) as again:
            comp.compile(triad_hip(target))
        assert again.value.signal_name in ("SIGABRT", "SIGSEGV") and again.value.signal_name in str(again.value)
        assert comp.compile(triad_hip("gfx90a")).nbytes > 0


def test_compile_error_crosses_intact_and_identity_matches(need_hiprtc):
    from hipexplore.compile.hiprtc import HiprtcCompiler

    with IsolatedCompiler("hiprtc", HIPRTC_WORKER, workers=1, timeout=60) as comp:
        bad = triad_hip("gfx90a").with_(source=Source("bad.hip", TRIAD_HIP + "\nint broken = ;\n"), options=("-O1",))
        with pytest.raises(CompileError) as info:
            comp.compile(bad)
        err = info.value
        assert type(err) is CompileError  # not a crash
        assert "int broken = ;" in err.log
        assert err.options == ("--offload-arch=gfx90a", "-O1") and err.target == "gfx90a"
        pid = comp.worker_pids()
        ident = comp.identity()
        assert comp.worker_pids() == pid  # the same worker answered: a compile error does not cost a worker
        assert ident == HiprtcCompiler().identity()  # same libraries in the worker as here
        assert comp.identity() is ident  # cached
        assert "gfx90a" in comp.targets() and comp.available()


def test_tiny_timeout_on_a_normal_hiprtc_compile(need_hiprtc):
    with IsolatedCompiler("hiprtc", HIPRTC_WORKER, workers=1, timeout=60) as normal:
        normal.compile(triad_hip("gfx90a").with_(options=("-O1",)))  # the worker's first compile loads comgr
        start = time.monotonic()
        normal.compile(triad_hip("gfx90a"))
        normal_seconds = time.monotonic() - start  # ~0.2 s here
    with IsolatedCompiler("hiprtc", HIPRTC_WORKER, workers=1, timeout=0.01) as comp:
        comp.identity()  # start the worker first: start-up is not part of a compile's timeout
        start = time.monotonic()
        with pytest.raises(CompileTimeout) as info:
            comp.compile(triad_hip("gfx90a"))
        elapsed = time.monotonic() - start
        assert info.value.timeout == 0.01 and "0.01 s" in str(info.value) and info.value.target == "gfx90a"
        assert comp.worker_pids() == []
        # cut short: the kill and reap of the worker cost far less than the compile it interrupted
        assert elapsed < normal_seconds, (elapsed, normal_seconds)


def test_timeout_kills_worker_and_its_compiler_then_recovers(need_host_cc):
    with IsolatedCompiler("host", workers=1, timeout=1.0) as comp:
        comp.compile(small_c())
        (pid,) = comp.worker_pids()
        start = time.monotonic()
        with pytest.raises(CompileTimeout, match="timeout of 1.0 s") as info:
            comp.compile(slow_c())
        elapsed = time.monotonic() - start
        # the compile takes ~20 s: the timeout fired at its limit (measured: 1.01 s), not when the
        # compile ended; the worker was started by the compile above, so no start-up is inside this
        # window. The upper bound only tells the two apart ("within 2x" measured the load, issue 26.6).
        assert 1.0 <= elapsed < 6.0, elapsed
        assert info.value.timeout == 1.0 and info.value.compiler == "host"
        assert process_gone(pid)
        assert live_group_members(pid) == []  # cc and cc1 went with it
        assert comp.compile(small_c(1)).nbytes > 0  # the pool recovered
        assert comp.worker_pids() and comp.worker_pids()[0] != pid


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


def test_timeout_leaves_no_compiler_process_of_that_compile(need_host_cc):
    """Not only the worker's process group: no cc/cc1 of the timed-out compile survives anywhere
    (a compiler started in a session of its own would escape the group kill)."""
    import uuid

    name = f"slow_{uuid.uuid4().hex}.c"
    with IsolatedCompiler("host", workers=1, timeout=1.0) as comp:
        comp.compile(small_c())
        with pytest.raises(CompileTimeout):
            comp.compile(CompileRequest(Source(name, slow_c_source()), "host", "host"))
        deadline = time.monotonic() + 3  # SIGKILL lands asynchronously
        while _processes_mentioning(name.encode()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_mentioning(name.encode()) == [], "a compiler of the timed-out compile is still running"


def test_worker_killed_while_starting_is_a_crash_naming_the_signal(need_host_cc):
    with IsolatedCompiler("host", workers=1, timeout=60) as comp:
        outcome: dict = {}

        def run() -> None:
            try:
                outcome["value"] = comp.compile(small_c())
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                outcome["error"] = exc

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 10
        while not comp.busy_pids() and time.monotonic() < deadline:
            time.sleep(0.001)
        (pid,) = comp.busy_pids()  # registered before it is ready: start-up takes ~0.5 s of imports
        os.kill(pid, signal.SIGKILL)
        thread.join(30)
        err = outcome.get("error")
        assert isinstance(err, CompilerCrashed), outcome
        assert err.signal_name == "SIGKILL" and "failed to start" in str(err) and "SIGKILL" in str(err)
        assert process_gone(pid) and comp.worker_pids() == []
        assert comp.compile(small_c(3)).nbytes > 0  # the next compile starts a fresh worker


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL])
def test_worker_killed_by_signal_mid_compile(need_host_cc, sig):
    with IsolatedCompiler("host", workers=1, timeout=60) as comp:
        comp.compile(small_c())  # warm worker
        outcome: dict = {}

        def run() -> None:
            try:
                outcome["value"] = comp.compile(slow_c())
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                outcome["error"] = exc

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 10
        while not comp.busy_pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        (pid,) = comp.busy_pids()
        time.sleep(0.3)  # let cc get going
        os.kill(pid, sig)
        thread.join(30)
        assert not thread.is_alive()
        err = outcome.get("error")
        assert isinstance(err, CompilerCrashed), outcome
        assert err.signal_name == sig.name and sig.name in str(err) and "slow.c" in str(err)
        assert err.target == "host"
        assert process_gone(pid) and live_group_members(pid) == []
        assert comp.compile(small_c(2)).nbytes > 0


def test_concurrent_compiles_share_a_bounded_pool(need_host_cc):
    with IsolatedCompiler("host", workers=2, timeout=60) as comp:
        seen: set[int] = set()
        results: list = []
        errors: list = []

        def run(i: int) -> None:
            try:
                req = CompileRequest(
                    Source("triad.c", TRIAD_C + f"\nint tag{i};\n"), "host", "host", headers=[TRIAD_C_HEADER]
                )
                results.append(comp.compile(req))
                seen.update(comp.worker_pids())
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors and len(results) == 6
        assert len({r.binary for r in results}) == 6
        assert 1 <= len(seen) <= 2


def test_close_and_garbage_collection_reap_workers(need_host_cc):
    comp = IsolatedCompiler("host", workers=1, timeout=30)
    comp.compile(small_c())
    (pid,) = comp.worker_pids()
    comp.close()
    assert process_gone(pid)
    with pytest.raises(CompilerError, match="closed"):
        comp.compile(small_c())

    comp = IsolatedCompiler("host", workers=1, timeout=30)
    comp.compile(small_c())
    (pid,) = comp.worker_pids()
    del comp
    gc.collect()
    assert process_gone(pid)


def test_bad_construction_arguments():
    with pytest.raises(ConfigError, match="'gcc'"):
        IsolatedCompiler("gcc")
    with pytest.raises(ConfigError, match="workers"):
        IsolatedCompiler("host", workers=0)
    with pytest.raises(ConfigError, match="timeout"):
        IsolatedCompiler("host", timeout=0)
    comp = IsolatedCompiler("host")
    with pytest.raises(ConfigError, match="'nvrtc'"):
        comp.compile(CompileRequest(Source("t.cu", "x"), "nvrtc", "sm_90"))
    comp.close()


def test_hiprtc_identity_follows_the_loaded_library_file(need_hiprtc, tmp_path):
    """A copy of the HIP library with other bytes (a rebuild) is another compiler as far as keys go."""
    from hipexplore.compile.hiprtc import HiprtcCompiler

    default = HiprtcCompiler().identity()
    copy = tmp_path / os.path.basename(default.library)
    copy.write_bytes(open(default.library, "rb").read() + b"\0" * 64)  # trailing bytes: still loads, other hash
    with IsolatedCompiler("hiprtc", {"library": str(copy), **HIPRTC_WORKER}, workers=1, timeout=60) as comp:
        ident = comp.identity()  # computed in the worker, which loaded the copy
        assert ident.library == str(copy)
        assert ident.version == default.version and ident.stamp != default.stamp
        assert_amdgpu_code_object(comp.compile(triad_hip("gfx90a")).binary, "gfx90a", "triad")


def test_isolated_compiler_is_a_compiler():
    from hipexplore.compile.base import Compiler

    comp = IsolatedCompiler("host")
    assert isinstance(comp, Compiler) and comp.name == "host" and comp.worker_pids() == []  # lazy start
    comp.close()
