"""hipexplore.bench.check: the output check, element by element with the worst element named.
``compare`` directly (edge values the sweep tests cannot pin), and ``check_outputs`` on the real
host device with catalog kernels compiled by cc."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from hipexplore.bench import rotating as rot
from hipexplore.bench.check import CheckTarget, check_outputs, compare
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice
from hipexplore.errors import BenchmarkError
from hipexplore.kernels import catalog, user_kernel
from hipexplore.kernels.build import kernel_for


@pytest.mark.timeout(30)
def test_compare_within_tolerance_returns_the_relative_l2_error():
    e = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    assert compare("c", "a", e, e, rtol=0, atol=0) == 0.0
    g = e + np.float32(1e-7)
    err = compare("c", "a", g, e, rtol=1e-5, atol=0)
    assert err == pytest.approx(np.linalg.norm(g.astype(float) - e) / np.linalg.norm(e.astype(float)))
    # a zero reference: the largest |got| (no division by zero)
    assert compare("c", "a", np.array([0.0, -3e-7]), np.zeros(2), rtol=0, atol=1e-6) == pytest.approx(3e-7)
    assert compare("c", "a", np.zeros((2, 3)), np.zeros(6), rtol=0, atol=0) == 0.0  # shapes differ, sizes agree


@pytest.mark.timeout(30)
def test_compare_names_the_worst_element_got_expected_and_the_count():
    e = np.arange(12, dtype=np.float64).reshape(3, 4)
    g = e.copy()
    g[0, 1] += 0.5
    g[2, 3] += 2.0  # the worst
    with pytest.raises(BenchmarkError) as exc:
        compare("triad at 4 KiB", "a", g, e, rtol=0.0, atol=0.1)
    text = str(exc.value)
    assert text.startswith(
        "output check failed for triad at 4 KiB: a[(2, 3)] = 13 but expected 11 "
        "(|diff| 2 > 0.1 = atol 0.1 + rtol 0 * |expected|); 2 of 12 elements differ; "
        "||got - ref|| / ||ref|| = "
    )
    assert "\n" not in text
    # rtol scales with |expected|: a 1% change passes at rtol 2%, fails at 0.5%
    assert compare("c", "y", e * 1.01, e, rtol=0.02, atol=0) > 0
    with pytest.raises(BenchmarkError, match=r"y\[\(2, 3\)\]"):
        compare("c", "y", e * 1.01, e, rtol=0.005, atol=0)


@pytest.mark.timeout(30)
def test_compare_a_nan_where_a_number_was_expected_is_the_unwritten_poison():
    e = np.ones(5)
    g = e.copy()
    g[3] = np.nan
    with pytest.raises(
        BenchmarkError, match=r"out\[3\] = nan but expected 1 \(left unwritten: the poison value\).* 1 of 5 elements"
    ):
        compare("c", "out", g, e, rtol=1e-3, atol=1e-3)
    # NaN on both sides agrees, and so does the same infinity: no error, and they add nothing to the
    # relative L2 figure (it stays the finite elements' error, not inf); a NaN only in the reference does not agree
    assert compare("c", "out", np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), rtol=0, atol=0) == 0.0
    e2 = np.array([np.nan, np.inf, -np.inf, 2.0])
    assert compare("c", "out", e2 + [0, 0, 0, 1e-6], e2, rtol=1e-5, atol=0) == pytest.approx(1e-6 / 2)
    assert compare("c", "out", np.array([np.nan, 0.0]), np.array([np.nan, 0.0]), rtol=0, atol=0) == 0.0  # zero norm
    with pytest.raises(BenchmarkError) as exc:
        compare("c", "out", np.array([0.0, 1.0]), np.array([np.nan, 1.0]), rtol=0, atol=0)
    assert "out[0] = 0 but expected nan" in str(exc.value) and "left unwritten" not in str(exc.value)


@pytest.mark.timeout(30)
def test_compare_refuses_sizes_that_differ():
    with pytest.raises(BenchmarkError, match=r"^output check of cfg: output 'o' has 3 elements, the reference 4$"):
        compare("cfg", "o", np.zeros(3), np.zeros(4), rtol=0, atol=0)


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    from conftest import require_compiler

    require_compiler("host")
    d = HostDevice(llc_bytes=256 << 10)
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("ccache"))
    return d


def run_check(dev, spec, n=1000, **kw):
    with rot.BufferSets(dev, spec, n, 2) as sets:
        grid, block = spec.geometry(n, dev)
        err = check_outputs(CheckTarget(dev, spec, sets, kernel_for(dev, spec), grid, block), **kw)
        back = np.empty(n, dtype=np.float32)
        dev.copy_to_host(sets.buffers[0]["a"], back)
        np.testing.assert_array_equal(back, sets.host["a"])  # set 0's outputs restored
    return err


@pytest.mark.timeout(300)
def test_check_outputs_of_the_host_triad(dev):
    triad = catalog.get("triad")
    assert run_check(dev, triad) < 1e-6
    assert math.isnan(run_check(dev, dataclasses.replace(triad, reference=None)))  # nothing to compare
    wrong = dataclasses.replace(triad, reference=lambda host, scalars: {"a": host["b"] + 2 * scalars["s"] * host["c"]})
    with pytest.raises(BenchmarkError, match=r"^output check failed for kernel 'triad' at n=1000: a\[\d+\] = "):
        run_check(dev, wrong)
    with pytest.raises(BenchmarkError, match=r"^output check failed for triad-1000: a\["):
        run_check(dev, wrong, config="triad-1000")
    # a reference that returns a name that is no output argument
    other = dataclasses.replace(triad, reference=lambda host, scalars: {"b": host["b"]})
    with pytest.raises(
        BenchmarkError, match=r"the reference returned 'b', which is not an output argument \(outputs: \['a'\]\)"
    ):
        run_check(dev, other)


@pytest.mark.timeout(300)
def test_check_outputs_against_a_second_kernel(dev, tmp_path):
    """``check_kernel``: a second kernel (same arguments) run on the same inputs is the reference."""
    triad = catalog.get("triad")
    src = tmp_path / "ref.c"
    src.write_text(
        "void ref_triad(float* a, const float* b, const float* c, float s, unsigned long long n) {\n"
        "  for (unsigned long long i = 0; i < n; ++i) a[i] = b[i] + s * c[i]; }\n"
        "void half_triad(float* a, const float* b, const float* c, float s, unsigned long long n) {\n"
        "  for (unsigned long long i = 0; i < n; ++i) a[i] = b[i] + 0.5f * s * c[i]; }\n"
    )
    args = "out:a:f32[n],in:b:f32[n],in:c:f32[n],s:f32=3.0,n:u64=n"
    ref = user_kernel(src, "ref_triad", args, name="test_check_ref", host_source=src, register_it=False)
    half = user_kernel(src, "half_triad", args, name="test_check_half", host_source=src, register_it=False)
    assert run_check(dev, dataclasses.replace(triad, reference=None, check_kernel=ref)) < 1e-6
    with pytest.raises(BenchmarkError, match=r"output check failed for kernel 'triad' at n=1000: a\["):
        run_check(dev, dataclasses.replace(triad, reference=None, check_kernel=half))
