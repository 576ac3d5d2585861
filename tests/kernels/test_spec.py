"""``hipexplore.kernels.spec``: what a kernel is: its arguments (dtype names, roles, counts and
scalar values as expressions in n, each value checked against its C type), the element count a
size in bytes gives (whole elements only), the bytes one launch touches and one rotating set
allocates, the launch geometry, and the source and entry each compiler gets."""

from __future__ import annotations

import pickle

import pytest

from hipexplore.errors import ConfigError
from hipexplore.kernels.spec import (
    MAX_COUNT_PER_LAUNCH,
    Arg,
    KernelSpec,
    NExpr,
    canonical_dtype,
    evaluate,
    fixed_geometry,
    grid_stride,
)

pytestmark = pytest.mark.timeout(60)


class Dev:
    compute_units = 4
    kind = "host"


def spmv_like(**kw) -> KernelSpec:
    args = (
        Arg("rows", "scalar", "u32", value="n//4"),
        Arg("a", "buffer", "f32", "out", count="rows*4"),
        Arg("x", "buffer", "f64", "in", count="rows/3"),
        Arg("s", "scalar", "f32", value=2.5),
    )
    return KernelSpec(
        "k", "k_gpu", args, gpu_source="__global__ void k_gpu() {}", host_source="void k(void) {}", host_entry="k", **kw
    )


def test_dtype_names_roles_and_kinds_are_checked():
    assert (
        canonical_dtype("f32") == "float32"
        and canonical_dtype("int") == "int32"
        and canonical_dtype("uint64") == "uint64"
    )
    with pytest.raises(ConfigError, match="dtype 'f16' is not supported; expected one of"):
        canonical_dtype("f16")
    with pytest.raises(ConfigError, match="argument 'a': role must be in/out/inout, got 'both'"):
        Arg("a", "buffer", "f32", "both")
    with pytest.raises(ConfigError, match="argument 'a': kind must be 'buffer' or 'scalar'"):
        Arg("a", "array", "f32")
    with pytest.raises(ConfigError, match="scalar argument 's' needs a value"):
        Arg("s", "scalar", "f32")


def test_counts_and_values_are_expressions_in_n_checked_against_their_c_types():
    k = spmv_like()
    assert k.scalars(40) == {"rows": 10, "s": 2.5}  # a scalar may use n and the ones before it
    a, x = k.buffers()
    assert a.elements(40, k.scalars(40)) == 40 and x.elements(40, k.scalars(40)) == 4  # 10/3 rounds up
    assert k.set_bytes(40) == 40 * 4 + 4 * 8 == k.footprint(40)  # no declared traffic: the buffers' bytes
    with pytest.raises(ConfigError, match="count of argument 'x': 'rows/3' is 0.*a buffer needs at least 1 element"):
        x.elements(0, {"rows": 0})
    with pytest.raises(ConfigError, match=r"value of argument 'u': '-1', outside uint32's range \[0, 4294967295\]"):
        Arg("u", "scalar", "u32", value=-1).scalar(8)
    with pytest.raises(
        ConfigError, match=r"value of argument 'f': '1e50' is .*, beyond the largest float32 \(3.40282e\+38\)"
    ):
        Arg("f", "scalar", "f32", value="1e50").scalar(8)
    assert evaluate("isqrt(n)", 16, what="t") == 4 and evaluate(3, 16, what="t") == 3
    with pytest.raises(ConfigError, match="not a number or an arithmetic expression in n"):
        evaluate([1], 16, what="t")


def test_a_size_is_whole_elements_and_the_declared_traffic_is_bounded():
    k = spmv_like(bytes_per_launch=NExpr("12*n", "bytes_per_launch"))
    assert k.elements(4096) == 1024 and k.footprint(1024) == 12 * 1024
    for bad, says in (
        (0, "positive number of bytes"),
        (2, "smaller than one float32 element"),
        (4097, "not a whole number of float32 elements .* e.g. 4096 or 4100"),
    ):
        with pytest.raises(ConfigError, match=says):
            k.elements(bad)
    with pytest.raises(ConfigError, match=r"expected a count in \[0, 2\*\*60\] per launch"):
        NExpr("2**61", "bytes_per_launch")(1)
    assert NExpr("n/3", "flops")(4) == 2 and MAX_COUNT_PER_LAUNCH == 1 << 60
    with pytest.raises(ConfigError, match="flops: 'n-8' is -4 at n=4; expected a count >= 0"):
        NExpr("n-8", "flops")(4)
    assert pickle.loads(pickle.dumps(NExpr("2*n")))(3) == 6  # it travels to a sweep worker


def test_geometry_source_and_entry_per_compiler_and_the_spec_checks():
    k = spmv_like()
    assert k.launch(10_000, Dev()) == ((16, 1, 1), (256, 1, 1), 0)  # 4 CUs x 4 blocks, not more than n needs
    assert grid_stride(2, 128)(100, Dev()) == ((1, 1, 1), (128, 1, 1)) and grid_stride(2, 128)(10**6, Dev())[0] == (
        8,
        1,
        1,
    )
    assert fixed_geometry((2, 3), 64)(1, Dev()) == ((2, 3, 1), (64, 1, 1))
    with pytest.raises(ConfigError, match="grid must be a positive int or 1-3 positive ints"):
        fixed_geometry((1, 2, 3, 4), 1)
    assert (
        k.entry_for("host") == "k"
        and k.entry_for("hiprtc") == "k_gpu"
        and k.source_for("nvrtc").startswith("__global__")
    )
    gpu_only = KernelSpec("g", "g", (), gpu_source="__global__ void g() {}")
    with pytest.raises(ConfigError, match="kernel 'g' has no host C source, so it cannot run with compiler 'host'"):
        gpu_only.source_for("host")
    with pytest.raises(ConfigError, match="kernel name must be an identifier-like string"):
        KernelSpec("a kernel", "k", (), gpu_source="x")
    with pytest.raises(ConfigError, match=r"argument names must be unique, got \['a', 'a'\]"):
        KernelSpec("k", "k", (Arg("a", "buffer", "f32"), Arg("a", "buffer", "f32")), gpu_source="x")
    with pytest.raises(ConfigError, match="has neither a GPU nor a host source nor a code object"):
        KernelSpec("k", "k", ())
