"""Python callables through the harness and sweeps that survive a faulting kernel (issue 10,
parts 4 and 6), on the host device: numpy/ctypes callables with rotating sets and flushes; a host
C kernel that writes through NULL at one size kills only its sweep worker."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pandas as pd
import pytest

import hipexplore as hx
from hipexplore.bench.worker import use_worker
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice
from hipexplore.errors import BenchmarkError, ConfigError, KernelFault
from hipexplore.kernels import catalog


@pytest.fixture(scope="module")
def dev(tmp_path_factory) -> HostDevice:
    d = HostDevice(llc_bytes=256 << 10)
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("ccache"))
    return d


class Recorder:
    """A numpy callable that records which set each call got."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def __call__(self, args, stream) -> None:
        x, y, tag = args
        assert stream is None  # the host device has no stream
        self.seen.append(tag)
        np.multiply(x, 2.0, out=y)


def make_args(n: int, i: int):
    rng = np.random.default_rng(i)
    return rng.random(n, dtype=np.float32), np.zeros(n, dtype=np.float32), i


def test_numpy_callable_rotates_sets_and_takes_flushes(dev):
    fn = Recorder()
    spec = hx.callable_kernel(
        fn,
        make_args,
        bytes_per_launch="8*n",
        name="test_np_double",
        check=hx.OutputCheck(lambda a: 2.0 * a[0], output=lambda a: a[1]),
        register_it=False,
    )
    res = hx.sweep(
        spec,
        ["64KiB"],
        [1, 4],
        ["none", "l2-write"],
        device=dev,
        iterations=12,
        reference=True,
        reference_samples=5,
        progress=False,
    )
    s = res.summary
    assert len(s) == 5 and set(s["flush"]) == {"none", "l2-write", "cold-reference"}
    four = res.samples[res.samples["rotating"] == 4]
    assert set(four["buffer_set"]) == {0, 1, 2, 3}
    assert set(fn.seen) == {0, 1, 2, 3}  # the callable really got each set's arguments
    assert (res.samples.loc[res.samples["flush"] == "l2-write", "flush_s"] > 0).all()
    assert s.loc[s["flush"] == "none", "bandwidth_gbs"].gt(0).all()
    assert res.metadata[f"verify.test_np_double.{64 << 10}"] == "rel_l2_error=0"


def test_ctypes_callable_and_its_output_check(dev, need_host_cc, tmp_path):
    """A ctypes function from a library built elsewhere, called as a callable; a wrong one is named."""
    src = tmp_path / "neg.c"
    src.write_text(
        "void neg(float* y, const float* x, unsigned long long n) {\n"
        "  for (unsigned long long i = 0; i < n; ++i) y[i] = (i == 77) ? 0.0f : -x[i]; }\n"
    )
    lib_path = tmp_path / "libneg.so"
    assert os.system(f"cc -O2 -shared -fPIC -o {lib_path} {src}") == 0
    lib = ctypes.CDLL(str(lib_path))
    lib.neg.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong]

    def call(args, stream):
        x, y, _ = args
        lib.neg(y.ctypes.data, x.ctypes.data, x.size)

    spec = hx.callable_kernel(
        call,
        make_args,
        bytes_per_launch=lambda n: 8 * n,
        name="test_ctypes_neg",
        check=hx.OutputCheck(lambda a: -a[0], output=lambda a: a[1]),
        register_it=False,
    )
    with pytest.raises(
        BenchmarkError,
        match=r"output check failed for kernel test_ctypes_neg size=4096 \(n=1024.*\): output\[77\] = 0 "
        r"but expected -0\.\d+.*1 of 1024 elements differ",
    ):
        hx.sweep(spec, ["4KiB"], device=dev, iterations=4, reference=False, progress=False)
    # without a reference it is just timed
    plain = hx.callable_kernel(call, make_args, bytes_per_launch="8*n", name="test_ctypes_neg2", register_it=False)
    res = hx.sweep(plain, ["4KiB"], [2], device=dev, iterations=4, reference=False, progress=False)
    assert len(res.samples) == 4 and set(res.samples["buffer_set"]) == {0, 1}


def test_callable_argument_errors():
    with pytest.raises(ConfigError, match="stream must be one of arg, torch, cupy"):
        hx.callable_kernel(lambda a, s: None, make_args, bytes_per_launch=4, stream="jax")
    with pytest.raises(ConfigError, match="needs a callable fn"):
        hx.callable_kernel(None, make_args, bytes_per_launch=4)
    with pytest.raises(ConfigError, match="bytes_per_launch"):
        hx.callable_kernel(lambda a, s: None, make_args, bytes_per_launch="8*m")
    with pytest.raises(ConfigError, match="check must be an OutputCheck or a function"):
        hx.callable_kernel(lambda a, s: None, make_args, bytes_per_launch=4, check="2*a")
    with pytest.raises(ConfigError, match=r"OutputCheck needs a callable reference\(args\)"):
        hx.callable_kernel(lambda a, s: None, make_args, bytes_per_launch=4, check=hx.OutputCheck(None))
    spec = hx.callable_kernel(lambda a, s: None, make_args, bytes_per_launch=4, name="test_cw", register_it=False)
    with pytest.raises(ConfigError, match="Python callable, which cannot run in a sweep worker"):
        hx.sweep(spec, ["4KiB"], device="host", iterations=2, reference=False, progress=False, worker=True)


SCALE_C = (
    "void scale(float* y, const float* x, unsigned long long n) {\n"
    "  for (unsigned long long i = 0; i < n; ++i) y[i] = 2.0f * x[i]; }\n"
)
# a NULL write once the size passes 8 KiB of floats: the first two sizes finish, the third faults
FAULTY_C = (
    "void scale_faulty(float* y, const float* x, unsigned long long n) {\n"
    "  if (n > 2048) *(volatile int*)0 = 1;\n"
    "  for (unsigned long long i = 0; i < n; ++i) y[i] = 2.0f * x[i]; }\n"
)


def scale_ref(inputs, scalars):
    return {"y": (2.0 * inputs["x"]).astype(np.float32)}


def test_worker_sweep_survives_a_faulting_kernel(need_host_cc, tmp_path):
    (tmp_path / "good.c").write_text(SCALE_C)
    (tmp_path / "faulty.c").write_text(FAULTY_C)
    good = catalog.user_kernel(
        tmp_path / "good.c",
        "scale",
        "out:y:f32[n],in:x:f32[n],n:u64=n",
        name="test_w_scale",
        reference=scale_ref,
        register_it=False,
    )
    faulty = catalog.user_kernel(
        tmp_path / "faulty.c",
        "scale_faulty",
        "out:y:f32[n],in:x:f32[n],n:u64=n",
        name="test_w_faulty",
        register_it=False,
    )
    seen: list[dict] = []
    out = tmp_path / "faulty.parquet"
    parent = os.getpid()
    with pytest.raises(KernelFault) as err:
        hx.sweep(
            faulty,
            ["4KiB", "8KiB", "16KiB", "32KiB"],
            device="host",
            iterations=5,
            reference=False,
            progress=False,
            worker=True,
            out=out,
            on_result=seen.append,
            verify=False,
        )  # a fault while timing (the role check would find it first: tests/bench/test_roles.py)
    fault = err.value
    assert os.getpid() == parent
    assert str(fault).startswith(
        "kernel test_w_faulty faulted in configuration size=16384 rotating=1 flush=none: the sweep worker (pid "
    )
    assert "SIGSEGV" in fault.status and fault.kernel == "test_w_faulty"
    # finished configurations: streamed to the hook as measured, in the error's result, and on disk
    assert [r["size_bytes"] for r in seen] == [4096, 8192]
    assert list(fault.result.summary["size_bytes"]) == [4096, 8192]
    assert list(pd.read_parquet(tmp_path / "faulty.summary.parquet")["size_bytes"]) == [4096, 8192]
    # the next sweep in this process works, in a worker and in-process, with its output check
    res = hx.sweep(
        good,
        ["4KiB", "16KiB"],
        [1, 2],
        ["none", "l2-read"],
        device="host",
        iterations=6,
        reference=False,
        progress=False,
        worker=True,
    )
    assert len(res.summary) == 8 and res.metadata[f"verify.test_w_scale.{16 << 10}"].startswith("rel_l2_error=")
    assert set(res.samples.columns) >= {"time_s", "buffer_set", "flush_s"}
    local = hx.sweep(good, ["4KiB"], device="host", iterations=6, reference=False, progress=False, worker=False)
    assert list(local.summary.columns) == list(res.summary.columns)


def test_worker_sweep_stops_when_asked_and_reports_in_process_errors(need_host_cc, tmp_path):
    (tmp_path / "good.c").write_text(SCALE_C)
    good = catalog.user_kernel(
        tmp_path / "good.c", "scale", "out:y:f32[n],in:x:f32[n],n:u64=n", name="test_w_scale2", register_it=False
    )
    got: list[dict] = []
    res = hx.sweep(
        good,
        ["4KiB", "8KiB", "16KiB"],
        device="host",
        iterations=4,
        reference=False,
        progress=False,
        worker=True,
        on_result=got.append,
        should_stop=lambda: len(got) >= 1,
    )
    assert res.stopped and len(res.summary) == 1
    # an error raised inside the worker (an unsupported flush) arrives as itself
    with pytest.raises(hx.UnsupportedOperation, match="icache"):
        hx.sweep(
            good, ["4KiB"], flush=["icache"], device="host", iterations=4, reference=False, progress=False, worker=True
        )


def test_default_is_in_process_on_the_host_and_a_worker_on_gpus(monkeypatch):
    monkeypatch.delenv("HIPEXPLORE_SWEEP_WORKER", raising=False)
    host = HostDevice()
    assert use_worker(host, None) is False and use_worker(host, True) is True
    gpu = type("Gpu", (), {"kind": "cuda"})()
    assert use_worker(gpu, None) is True and use_worker(gpu, False) is False
    monkeypatch.setenv("HIPEXPLORE_SWEEP_WORKER", "1")
    assert use_worker(host, None) is True
    monkeypatch.setenv("HIPEXPLORE_SWEEP_WORKER", "0")
    assert use_worker(gpu, None) is False


# --- hipexplore.bench.callable directly: the sets, the work and the check on the host device ---------

from hipexplore.bench.callable import (  # noqa: E402
    STREAM_MODES,
    CallableSets,
    CallableWork,
    LaunchModel,
    OutputCheck,  # noqa: E402
    callable_kernel,
    check_callable,
    sets_for,
)


@pytest.mark.timeout(120)
def test_callable_module_sets_work_and_names(dev):
    rec = Recorder()
    spec = callable_kernel(rec, make_args, bytes_per_launch="8*n", name="not an identifier", register_it=False)
    assert spec.name == "callable" and spec.call is not None and STREAM_MODES == ("arg", "torch", "cupy")
    assert spec.bytes_per_launch(100) == 800
    assert (spec.element_dtype, spec.flops_per_launch(100)) == ("float32", 0)  # the default LaunchModel
    wide = callable_kernel(
        rec, make_args, bytes_per_launch="16*n", model=LaunchModel("float64", "2*n"), register_it=False
    )
    assert (wide.element_dtype, wide.elements(800), wide.flops_per_launch(100)) == ("float64", 100, 200)
    sets = sets_for(dev, spec, 64, 3)
    assert isinstance(sets, CallableSets) and [a.values[2] for a in sets.args] == [0, 1, 2]
    assert sets.buffers == [{}, {}, {}] and sets.host == {}
    with sets:
        dev.launch(spec.call, (1, 1, 1), (1, 1, 1), sets.args[2])
        np.testing.assert_array_equal(sets.args[2].values[1], 2.0 * sets.args[2].values[0])
        assert rec.seen == [2]
    assert sets.args == []  # freed on exit
    from hipexplore.bench.rotating import BufferSets

    with sets_for(dev, catalog.get("triad"), 64, 1) as kernel_sets:
        assert isinstance(kernel_sets, BufferSets)


@pytest.mark.timeout(60)
def test_callable_work_on_the_host_calls_without_a_stream():
    got = []
    CallableWork(lambda values, handle: got.append((values, handle)), "arg").run((1, 2), None)
    # torch/cupy modes unpack the arguments; on the host there is no stream to enter
    CallableWork(lambda a, b: got.append((a, b)), "torch").run((3, 4), None)
    CallableWork(lambda a: got.append(a), "cupy").run(5, None)
    assert got == [((1, 2), None), (3, 4), 5]


@pytest.mark.timeout(120)
def test_check_callable_reference_own_check_or_none(dev):
    def fn(args, stream):
        x, y, _ = args
        np.multiply(x, 2.0, out=y)
        y[7] += 1.0  # one wrong element

    ref = callable_kernel(
        fn,
        make_args,
        bytes_per_launch=8,
        name="t_chk",
        register_it=False,
        check=OutputCheck(lambda a: 2.0 * a[0], output=lambda a: a[1], rtol=1e-6, atol=1e-6),
    )
    with CallableSets(dev, ref, 32, 1) as sets:
        with pytest.raises(BenchmarkError, match=r"^output check failed for cfg-32: output\[7\] = "):
            check_callable(dev, ref, sets, config="cfg-32")
    own = callable_kernel(fn, make_args, bytes_per_launch=8, name="t_own", register_it=False, check=lambda a: 0.25)
    none = callable_kernel(fn, make_args, bytes_per_launch=8, name="t_none", register_it=False)
    with CallableSets(dev, own, 32, 1) as sets:
        assert check_callable(dev, own, sets, config="c") == 0.25
    with CallableSets(dev, none, 32, 1) as sets:
        assert np.isnan(check_callable(dev, none, sets, config="c"))
