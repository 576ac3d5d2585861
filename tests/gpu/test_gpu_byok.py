"""Bring your own kernel on a real NVIDIA GPU (marked ``gpu``; skip without one, fail under
``HIPEXPLORE_REQUIRE_GPU=1``). The kernels are the test fixture ``tests/fixtures/byok_examples.py``.

What each test pins down, and the bug it catches:
- a templated 2-D transpose swept over sizes with grid expressions (``cols/32,rows/32``), checked
  against NumPy at every size, rotating and flushed: a grid that did not follow the size (or a
  name expression not lowered) leaves the output wrong or the launch failing;
- a row softmax with ``extern __shared__`` sized by ``--shared-bytes 'block_x*4'``: dynamic shared
  memory not passed to ``cuLaunchKernel`` reads/writes past a zero-byte allocation (wrong output
  or a fault);
- a stencil whose coefficients come from a header in an ``-I`` directory: editing the header gives
  the new coefficients on the GPU (never a stale cubin);
- a cubin compiled elsewhere (``hipexplore compile --out``) through ``--code-object``, rotating and
  flushed; a cubin for another major architecture is a clear ``ConfigError``;
- a torch op through ``callable_kernel`` on the harness's stream, rotating and flushed, output
  checked;
- a kernel writing through NULL at one size: ``KernelFault`` "kernel K faulted in configuration C:
  CUDA_ERROR_ILLEGAL_ADDRESS" with the finished sizes kept, then a good sweep in the same process
  (in a worker and on this process's own device);
- in-process and worker medians of the same triad agree (the worker changes where, not how, it is
  timed).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

MIB = 1 << 20


from conftest import _no_gpu, cuda  # noqa: F401,E402 - the GPU guard and the module-scoped device fixture


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    from fixtures.byok_examples import write_sources

    return write_sources(tmp_path_factory.mktemp("byok"))


def _sweep(kernel, sizes, device, **kw):
    import hipexplore as hx

    args = dict(rotating=[1, 4], flush=["none", "l2-write"], iterations=40, reference=False, progress=False)
    args.update(kw)
    return hx.sweep(kernel, sizes, device=device, **args)


def _check_result(res, kernel: str, sizes) -> None:
    s = res.summary
    assert set(s["size_bytes"]) == set(sizes) and (s["median_s"] > 0).all()
    assert (s["bandwidth_gbs"] < 1.1 * s["peak_bandwidth_gbs"]).all(), s[["size_bytes", "bandwidth_gbs"]]
    four = res.samples[res.samples["rotating"] == 4]
    assert set(four["buffer_set"]) == {0, 1, 2, 3}
    assert (res.samples.loc[res.samples["flush"] == "l2-write", "flush_s"] > 0).all()
    for size in sizes:
        assert res.metadata[f"verify.{kernel}.{size}"].startswith("rel_l2_error="), res.metadata


def test_templated_transpose_swept_with_grid_expressions(cuda, sources):
    from fixtures import byok_examples as ex
    from hipexplore.kernels.catalog import user_kernel

    spec = user_kernel(
        sources["transpose.cu"],
        "transpose_tiled<32, 8>",
        ex.TRANSPOSE_ARGS,
        name="gpu_transpose",
        grid="cols/32,rows/32",
        block="32,8",
        bytes_per_launch="8*n",
        reference=ex.transpose_ref,
        register_it=False,
    )
    sizes = [1 * MIB, 16 * MIB, 64 * MIB]
    assert spec.launch(16 * MIB // 4, cuda)[0] == (64, 64, 1)
    _check_result(_sweep(spec, sizes, cuda), "gpu_transpose", sizes)


def test_row_softmax_with_dynamic_shared_memory(cuda, sources):
    from fixtures import byok_examples as ex
    from hipexplore.kernels.catalog import user_kernel

    spec = user_kernel(
        sources["softmax.cu"],
        "row_softmax",
        ex.SOFTMAX_ARGS,
        name="gpu_softmax",
        grid="rows",
        block=256,
        shared_bytes="block_x*4",
        bytes_per_launch="8*n",
        reference=ex.softmax_ref,
        rtol=1e-4,
        atol=1e-7,
        register_it=False,
    )
    assert spec.launch(MIB, cuda)[2] == 1024
    sizes = [4 * MIB, 32 * MIB]
    _check_result(_sweep(spec, sizes, cuda), "gpu_softmax", sizes)


def test_stencil_coefficients_from_an_include_dir_header(cuda, sources):
    from fixtures import byok_examples as ex
    from hipexplore.kernels.catalog import user_kernel

    inc = sources["stencil.cu"].parent / "include"
    spec = user_kernel(
        sources["stencil.cu"],
        "stencil5",
        ex.STENCIL_ARGS,
        name="gpu_stencil",
        grid="ceil(n/256)",
        block=256,
        include_dirs=[inc],
        reference=ex.stencil_ref_for(0.5, 0.2, 0.05),
        register_it=False,
    )
    sizes = [1 * MIB, 64 * MIB]
    _check_result(_sweep(spec, sizes, cuda), "gpu_stencil", sizes)
    # edit the header: the next sweep compiles the new coefficients (its reference expects them)
    (inc / "stencil_coeffs.h").write_text(ex.stencil_header(0.6, 0.1, 0.1))
    import dataclasses

    edited = dataclasses.replace(spec, reference=ex.stencil_ref_for(0.6, 0.1, 0.1))
    _check_result(_sweep(edited, [1 * MIB], cuda, rotating=[4]), "gpu_stencil", [1 * MIB])
    # and the old expectation now fails: the kernel really changed
    from hipexplore.errors import BenchmarkError

    with pytest.raises(BenchmarkError, match="output check failed for kernel gpu_stencil"):
        _sweep(spec, [1 * MIB], cuda, rotating=[1], flush=["none"], iterations=5)


def test_cubin_compiled_elsewhere_through_code_object(cuda, sources, tmp_path, capsys):
    from hipexplore.cli import main
    from hipexplore.errors import ConfigError
    from fixtures import byok_examples as ex
    from hipexplore.kernels.catalog import user_kernel

    cubin = tmp_path / "saxpy.cubin"
    assert (
        main(
            [
                "compile",
                str(sources["saxpy.cu"]),
                "--compiler",
                "nvrtc",
                "--target",
                cuda.target,
                "--kernel",
                "saxpy",
                "--out",
                str(cubin),
                "--json",
                "--no-cache",
            ]
        )
        == 0
    )
    capsys.readouterr()
    spec = user_kernel(
        None,
        "saxpy",
        ex.SAXPY_ARGS,
        name="gpu_saxpy_cubin",
        code_object=cubin,
        grid="ceil(n/256)",
        block=256,
        bytes_per_launch="12*n",
        reference=ex.saxpy_ref,
        register_it=False,
    )
    sizes = [1 * MIB, 256 * MIB]
    _check_result(_sweep(spec, sizes, cuda), "gpu_saxpy_cubin", sizes)
    # the CLI path with the same file
    rc = main(
        [
            "bench",
            "saxpy",
            "--device",
            "cuda",
            "--code-object",
            str(cubin),
            "--entry",
            "saxpy",
            "--args",
            ex.SAXPY_ARGS,
            "--grid",
            "ceil(n/256)",
            "--size",
            "16MiB",
            "--rotating",
            "1,auto",
            "--flush",
            "none,l2-read",
            "--iterations",
            "100",
            "--json",
            "--no-progress",
        ]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert len(json.loads(out.out)["summary"]) == 5
    # a cubin of another major architecture is refused before loading
    major = int(cuda.target[3:-1])
    other = tmp_path / "saxpy_other.cubin"
    other_target = "sm_80" if major != 8 else "sm_90"
    assert (
        main(
            [
                "compile",
                str(sources["saxpy.cu"]),
                "--compiler",
                "nvrtc",
                "--target",
                other_target,
                "--kernel",
                "saxpy",
                "--out",
                str(other),
                "--no-cache",
            ]
        )
        == 0
    )
    wrong = user_kernel(
        None, "saxpy", ex.SAXPY_ARGS, name="gpu_saxpy_wrong", code_object=other, grid="ceil(n/256)", register_it=False
    )
    with pytest.raises(ConfigError, match=f"is cubin for {other_target}, but cuda device .* needs a CUDA cubin"):
        _sweep(wrong, [MIB], cuda)


def test_torch_op_through_callable_kernel(cuda):
    from conftest import need_module

    torch = need_module("torch")  # required under HIPEXPLORE_REQUIRE_GPU=1 only (conftest.GPU_ONLY)
    import hipexplore as hx

    def make_args(n, i):
        g = torch.Generator(device="cuda").manual_seed(i)
        a = torch.rand(n, device="cuda", generator=g)
        b = torch.rand(n, device="cuda", generator=g)
        return a, b, torch.empty_like(a)

    spec = hx.callable_kernel(
        lambda a, b, out: torch.add(a, b, out=out),
        make_args,
        bytes_per_launch="12*n",
        stream="torch",
        name="gpu_torch_add",
        check=hx.OutputCheck(lambda args: args[0] + args[1]),
        register_it=False,
    )
    sizes = [1 * MIB, 64 * MIB]
    res = _sweep(spec, sizes, cuda, iterations=60)
    s = res.summary
    assert set(s["size_bytes"]) == set(sizes) and (s["median_s"] > 0).all()
    assert (s["bandwidth_gbs"] < 1.1 * s["peak_bandwidth_gbs"]).all()
    assert res.metadata[f"verify.gpu_torch_add.{MIB}"].startswith("rel_l2_error=")
    # the hold covers torch's dispatch: the 64 MiB add runs near the memory bandwidth
    big = s[(s["size_bytes"] == 64 * MIB) & (s["rotating"] == 4) & (s["flush"] == "none")]
    assert float(big["bandwidth_gbs"].iloc[0]) > 0.5 * float(big["peak_bandwidth_gbs"].iloc[0])


def test_a_faulting_kernel_is_named_and_the_next_sweep_works(cuda, sources):
    import hipexplore as hx
    from hipexplore.errors import KernelFault
    from fixtures import byok_examples as ex
    from hipexplore.kernels.catalog import user_kernel

    faulty = user_kernel(
        sources["faulty.cu"], "scale_faulty", ex.FAULTY_ARGS, name="gpu_faulty", grid="ceil(n/256)", register_it=False
    )
    seen = []
    with pytest.raises(KernelFault) as err:
        hx.sweep(
            faulty,
            [1 * MIB, 4 * MIB, 16 * MIB],
            device=cuda,
            iterations=20,
            reference=False,
            progress=False,
            on_result=seen.append,
            verify=False,
        )  # GPU default: a worker; a fault while timing (the role check would launch it first)
    msg = str(err.value)
    assert msg.startswith("kernel gpu_faulty faulted in configuration size=16777216 rotating=1 flush=none: "), msg
    assert msg.endswith("CUDA_ERROR_ILLEGAL_ADDRESS"), msg
    assert [r["size_bytes"] for r in seen] == [MIB, 4 * MIB]
    assert list(err.value.result.summary["size_bytes"]) == [MIB, 4 * MIB]
    good = user_kernel(
        sources["faulty.cu"],
        "scale_faulty",
        ex.FAULTY_ARGS,
        name="gpu_good",
        grid="ceil(n/256)",
        reference=ex.scale_ref,
        register_it=False,
    )
    res = hx.sweep(good, [MIB], device=cuda, iterations=20, reference=False, progress=False)
    assert len(res.summary) == 1
    local = hx.sweep("triad", ["1MiB"], device=cuda, iterations=20, reference=False, progress=False, worker=False)
    assert len(local.summary) == 1  # this process's own context was never touched


@pytest.mark.parametrize("size", [MIB, 64 * MIB])
def test_worker_and_in_process_medians_agree(cuda, size):
    import hipexplore as hx

    meds = {}
    for _round in range(2):  # interleaved, so a clock drift hits both
        for worker in (False, True):
            res = hx.sweep("triad", [size], device=cuda, iterations=300, reference=False, progress=False, worker=worker)
            meds.setdefault(worker, []).append(float(res.summary["median_s"].iloc[0]))
    ratio = np.median(meds[True]) / np.median(meds[False])
    assert 0.9 < ratio < 1.1, meds
