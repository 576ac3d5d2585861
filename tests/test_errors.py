"""hipexplore.errors: one hierarchy with a single root; compile errors that carry their log and
options without printing megabytes; errors that survive the trip from a worker process; cache
warnings printed as one line."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import pytest

from hipexplore import errors
from hipexplore.errors import (
    MESSAGE_LIMIT,
    OPTIONS_SHOWN,
    BenchmarkError,
    CacheWarning,
    CompileError,
    CompilerCrashed,
    CompileTimeout,
    ConfigError,
    DeviceError,
    HipexploreError,
    KernelFault,
    UnsupportedOperation,
    memory_fault_hint,
    warn_line,
)


@pytest.mark.timeout(30)
def test_one_root_and_the_standard_bases_callers_catch():
    for name in dir(errors):
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, Exception) and obj.__module__ == errors.__name__:
            assert issubclass(obj, HipexploreError) or issubclass(obj, Warning), name
    assert issubclass(ConfigError, ValueError)  # a bad argument is a ValueError too
    assert issubclass(UnsupportedOperation, DeviceError) and issubclass(UnsupportedOperation, ConfigError)
    assert issubclass(KernelFault, BenchmarkError) and issubclass(CompileTimeout, CompileError)
    assert issubclass(CacheWarning, RuntimeWarning)


@pytest.mark.timeout(30)
def test_a_compile_error_shows_where_and_the_log_tail_bounded():
    log = "\n".join(f"line {i}: " + "x" * (600 if i == 29 else 5) for i in range(30))
    opts = [f"-DOPT{i}" for i in range(30_000)]
    err = CompileError("k.cu: 2 errors", log=log, options=opts, target="sm_90", compiler="nvrtc", kernels=["k"])
    head = err.headline()
    assert head.startswith("k.cu: 2 errors [compiler=nvrtc target=sm_90 options=['-DOPT0', ")
    assert head.endswith(f"'-DOPT{OPTIONS_SHOWN - 1}', ... {30_000 - OPTIONS_SHOWN} more]]") and len(head) < 400
    lines = str(err).splitlines()
    assert lines[0] == head and len(lines) == 13  # the last 12 lines of the log, never the whole log
    assert lines[1].startswith("line 18:") and lines[-1].endswith(
        "x... (109 more characters)"
    )  # 609 characters cut at 500
    assert err.options == tuple(opts) and err.kernels == ("k",) and err.log == log  # kept whole
    long = CompileError("m" * (MESSAGE_LIMIT + 50))
    assert str(long) == "m" * MESSAGE_LIMIT + "... (50 more characters) [compiler= target= options=[]]"


@pytest.mark.timeout(120)
def test_errors_survive_pickling_into_another_process():
    crashed = CompilerCrashed(
        "worker died",
        signal_name="SIGSEGV",
        exitcode=-11,
        log="boom",
        options=["-O3"],
        target="gfx90a",
        compiler="hiprtc",
    )
    fault = KernelFault("triad", "size=1048576 rotating=4 flush=l2-write", "SIGSEGV", result=object())
    code = (
        "import pickle, sys; c, f = pickle.loads(sys.stdin.buffer.read()); "
        "print(type(c).__name__, c.signal_name, c.exitcode, c.log, c.options, c.target, c.compiler); "
        "print(type(f).__name__, f.kernel, f.status, f.result, str(f))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], input=pickle.dumps((crashed, fault)), capture_output=True, timeout=100, check=True
    )
    assert proc.stdout.decode().splitlines() == [
        "CompilerCrashed SIGSEGV -11 boom ('-O3',) gfx90a hiprtc",
        "KernelFault triad SIGSEGV None kernel triad faulted in configuration size=1048576 rotating=4 flush=l2-write: SIGSEGV"
        + memory_fault_hint("SIGSEGV"),
    ]  # the partial result stays behind (it is a whole SweepResult)
    timeout = pickle.loads(pickle.dumps(CompileTimeout("slow", timeout=2.5, compiler="host")))
    assert (
        isinstance(timeout, CompileTimeout)
        and timeout.timeout == 2.5
        and str(timeout).startswith("slow [compiler=host")
    )


@pytest.mark.timeout(60)
def test_warn_line_is_one_line_and_still_an_ordinary_warning():
    code = (
        "import warnings, sys\nfrom hipexplore.errors import warn_line\n"
        "def f():\n    warn_line('disk tier off:\\n  read-only folder')\n"
        "f()\nwarnings.warn('other', UserWarning)\n"
    )
    proc = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=100)
    lines = proc.stderr.splitlines()
    assert lines[0] == "hipexplore: disk tier off: read-only folder"
    assert any("UserWarning: other" in line for line in lines[1:])  # other warnings print as before
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warn_line("hipexplore compile cache: x")
    assert seen[0].category is CacheWarning and str(seen[0].message) == "hipexplore compile cache: x"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CacheWarning):
            warn_line("as an error")


def test_a_memory_fault_says_to_check_the_argument_counts():
    """Issue 49.5: an ``--args`` count smaller than what the kernel indexes ended in a SIGSEGV with no
    word about the counts; every memory fault now says what to check, other faults do not."""
    for status in (
        "the sweep worker (pid 7) died with SIGSEGV (signal 11)",
        "SIGBUS",
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "hipErrorIllegalAddress",
    ):
        text = str(KernelFault("k", "size=4096", status))
        assert text.endswith(
            "Check that each buffer's count in --args (x:f32[COUNT]) covers every index the kernel "
            "reaches with the scalars it is given (n:u64=n), and the grid"
        ), text
    assert str(KernelFault("k", "size=4096", "CUDA_ERROR_LAUNCH_TIMEOUT")).endswith(": CUDA_ERROR_LAUNCH_TIMEOUT")
