"""The role check (issue 36, item 3): what ``--args`` says each buffer is, tested by one launch.

A stencil ``stencil2d(float* out, const float* in, int nx, int ny)`` compiled by the real host
compiler and run through the real CLI: with its roles swapped the run used to time a wrong call
with exit 0 (``rel_l2_error=nan``: no reference, nothing checked). Now an ``in`` that is written,
an ``out`` element never written and an ``inout`` never changed are each one line, exit 2, before
the (kernel, size) is timed (no samples file); ``--no-verify`` lets the run go on.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cliproc
import hipexplore as hx
from hipexplore.errors import BenchmarkError, ConfigError, KernelFault
from hipexplore.kernels import catalog

REPO = Path(__file__).resolve().parents[2]

STENCIL_C = """
void stencil2d(float* out, const float* in, int nx, int ny) {
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      int k = j * nx + i;
      out[k] = (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) ? in[k]
             : 0.25f * (in[k - 1] + in[k + 1] + in[k - nx] + in[k + nx]);
    }
}
"""
RIGHT = "out:out:f32[nx*ny], in:in:f32[nx*ny], nx:i32=isqrt(n), ny:i32=n//nx"
SWAPPED = "in:in:f32[nx*ny], out:out:f32[nx*ny], nx:i32=isqrt(n), ny:i32=n//nx"
# leaves the last 7 elements of its output alone (a tail loop forgotten)
PARTIAL_C = """
void scale_head(float* y, const float* x, unsigned long long n) {
  for (unsigned long long i = 0; i + 7 < n; ++i) y[i] = 2.0f * x[i];
}
"""


def bench(
    tmp_path: Path, source: str, args: str, *extra: str, name: str = "stencil2d"
) -> tuple[subprocess.CompletedProcess, Path]:
    """The real CLI in a process of its own (forked from a preloaded interpreter: tests/cliproc.py),
    64 KiB (n = 16384 = 128 * 128), writing samples to out.parquet."""
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / "out.parquet"
    argv = [
        "bench",
        name,
        "--source",
        str(src),
        "--args",
        args,
        "--device",
        "host",
        "--size",
        "64KiB",
        "--rotating",
        "1",
        "--flush",
        "none",
        "--iterations",
        "5",
        "--no-reference",
        "--no-progress",
        "--out",
        str(out),
        *extra,
    ]
    proc = cliproc.run(argv, timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    return proc, out


def refused(proc: subprocess.CompletedProcess, out: Path) -> str:
    """The one line of a refused run; nothing was timed (no table, no samples file)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.stdout.strip() == "" and not list(out.parent.glob("out*.parquet")), (
        proc.stdout,
        list(out.parent.iterdir()),
    )
    assert lines[0].startswith("hipexplore bench: error: ") and "--no-verify skips this check" in lines[0]
    return lines[0]


def test_swapped_roles_are_refused_before_timing_and_the_right_order_runs(need_host_cc, tmp_path):
    proc, out = bench(tmp_path, STENCIL_C, SWAPPED)
    line = refused(proc, out)
    assert (
        "argument 1 'in' (in:f32[nx*ny]) was written by stencil2d: 16384 of 16384 elements changed; "
        "an 'in' buffer must be read only"
    ) in line
    assert (
        "argument 2 'out' (out:f32[nx*ny]) was not written by stencil2d: 16384 of 16384 elements were left unwritten"
        in line
    )
    assert "Swapped roles? The C signature is stencil2d(float* out, const float* in, int nx, int ny)" in line
    assert "size 64 KiB (n=16384)" in line
    proc, out = bench(tmp_path, STENCIL_C, RIGHT)
    assert proc.returncode == 0, proc.stderr
    assert len(pd.read_parquet(out)) == 5
    meta = (tmp_path / "out.meta.json").read_text()
    assert '"verify.stencil2d.65536": "rel_l2_error=nan"' in meta  # no reference: the roles were what was checked


def test_no_verify_lets_the_swapped_call_run(need_host_cc, tmp_path):
    proc, out = bench(tmp_path, STENCIL_C, SWAPPED, "--no-verify")
    assert proc.returncode == 0, proc.stderr
    assert len(pd.read_parquet(out)) == 5


def test_an_out_left_partly_unwritten_is_refused_with_the_count(need_host_cc, tmp_path):
    proc, out = bench(tmp_path, PARTIAL_C, "out:y:f32[n], in:x:f32[n], n:u64=n", name="scale_head")
    line = refused(proc, out)
    assert (
        "argument 1 'y' (out:f32[n]) was not written by scale_head: 7 of 16384 elements were left unwritten "
        "(still the poison NaN 0xffffffff put there before the launch; the first at index 16377)"
    ) in line
    assert "The C signature is scale_head(float* y, const float* x, unsigned long long n)" in line
    assert "declares it 'inout'" in line and "Swapped" not in line
    # the way out the line names: a buffer the kernel only partly writes, declared inout
    proc, out = bench(tmp_path, PARTIAL_C, "inout:y:f32[n], in:x:f32[n], n:u64=n", name="scale_head")
    assert proc.returncode == 0, proc.stderr


def test_an_inout_never_changed_is_refused(need_host_cc, tmp_path):
    proc, out = bench(tmp_path, STENCIL_C, "out:out:f32[nx*ny], inout:in:f32[nx*ny], nx:i32=isqrt(n), ny:i32=n//nx")
    line = refused(proc, out)
    assert (
        "argument 2 'in' (inout:f32[nx*ny]) was not changed by stencil2d: none of its 16384 elements differ after "
        "the launch; an 'inout' buffer is read and written (one only read is 'in')"
    ) in line


INT_C = """
void clamp8(signed char* y, const signed char* x, unsigned long long n) {
  for (unsigned long long i = 0; i < n; ++i) y[i] = 127;  /* the first integer poison's value, written */
}
void skip8(signed char* y, const signed char* x, unsigned long long n) {
  for (unsigned long long i = 1; i < n; ++i) y[i] = x[i];  /* element 0 never */
}
"""


def test_integer_outputs_a_written_poison_value_is_not_unwritten(need_host_cc, tmp_path):
    (tmp_path / "k.c").write_text(INT_C)
    args = "out:y:i8[n], in:x:i8[n], n:u64=n"
    clamp = catalog.user_kernel(
        tmp_path / "k.c", "clamp8", args, name="test_oc_clamp8", element_dtype="int8", register_it=False
    )
    res = hx.sweep(clamp, ["4KiB"], device="host", iterations=3, reference=False, progress=False)
    assert len(res.summary) == 1
    skip = catalog.user_kernel(
        tmp_path / "k.c", "skip8", args, name="test_oc_skip8", element_dtype="int8", register_it=False
    )
    with pytest.raises(
        ConfigError,
        match=r"argument 1 'y' \(out:i8\[n\]\) was not written by skip8: 1 of 4096 elements were "
        r"left unwritten \(still the poison 0x7f put there before the launch; the first at index 0\)",
    ):
        hx.sweep(skip, ["4KiB"], device="host", iterations=3, reference=False, progress=False)


AXPY_C = """
void axpy(float* y, const float* x, float a, unsigned long long n) {
  for (unsigned long long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
void two_outs(float* y, float* z, const float* x, unsigned long long n) {
  for (unsigned long long i = 0; i < n; ++i) y[i] = x[i];  /* z never */
}
"""


def axpy_ref(inputs, scalars):
    return {"y": (np.float32(scalars["a"]) * inputs["x"] + inputs["y"]).astype(np.float32)}


def copy_ref(inputs, scalars):
    return {"y": inputs["x"].copy()}


def test_with_a_reference_the_data_is_restored_and_an_output_it_skips_is_still_checked(need_host_cc, tmp_path):
    (tmp_path / "k.c").write_text(AXPY_C)
    # the role check's launch changes y; the reference check after it must see the original y again
    axpy = catalog.user_kernel(
        tmp_path / "k.c",
        "axpy",
        "inout:y:f32[n], in:x:f32[n], a:f32=2.0, n:u64=n",
        name="test_oc_axpy",
        reference=axpy_ref,
        register_it=False,
    )
    res = hx.sweep(axpy, ["16KiB"], [1, 2], device="host", iterations=4, reference=False, progress=False)
    assert res.metadata[f"verify.test_oc_axpy.{16 << 10}"] == "rel_l2_error=0"
    # z is an output the reference does not return: the roles still say it was never written
    two = catalog.user_kernel(
        tmp_path / "k.c",
        "two_outs",
        "out:y:f32[n], out:z:f32[n], in:x:f32[n], n:u64=n",
        name="test_oc_two",
        reference=copy_ref,
        register_it=False,
    )
    with pytest.raises(ConfigError, match=r"argument 2 'z' \(out:f32\[n\]\) was not written by two_outs: 4096 of 4096"):
        hx.sweep(two, ["16KiB"], device="host", iterations=4, reference=False, progress=False)
    # an output the reference does return: its check speaks first, naming the worst element
    three = catalog.user_kernel(
        tmp_path / "k.c",
        "two_outs",
        "out:y:f32[n], out:z:f32[n], in:x:f32[n], n:u64=n",
        name="test_oc_three",
        reference=lambda i, s: {"y": i["x"].copy(), "z": i["x"].copy()},
        register_it=False,
    )
    with pytest.raises(BenchmarkError, match=r"z\[0\] = nan but expected .* \(left unwritten: the poison value\)"):
        hx.sweep(three, ["16KiB"], device="host", iterations=4, reference=False, progress=False, worker=False)


FAULTY_C = """
void scale_faulty(float* y, const float* x, unsigned long long n) {
  if (n > 2048) *(volatile int*)0 = 1;
  for (unsigned long long i = 0; i < n; ++i) y[i] = 2.0f * x[i];
}
"""


def test_a_kernel_faulting_at_a_later_size_faults_in_its_check_and_keeps_the_earlier_sizes(need_host_cc, tmp_path):
    """The role check launches a kernel that has no reference (before, its check launched nothing):
    a fault at the third size is found in that size's check, after the first two were timed."""
    (tmp_path / "f.c").write_text(FAULTY_C)
    faulty = catalog.user_kernel(
        tmp_path / "f.c", "scale_faulty", "out:y:f32[n], in:x:f32[n], n:u64=n", name="test_oc_faulty", register_it=False
    )
    with pytest.raises(KernelFault) as err:
        hx.sweep(
            faulty, ["4KiB", "8KiB", "16KiB"], device="host", iterations=4, reference=False, progress=False, worker=True
        )
    assert str(err.value).startswith("kernel test_oc_faulty faulted in configuration size=16384 (output check): ")
    assert list(err.value.result.summary["size_bytes"]) == [4096, 8192]


def test_the_catalog_kernels_are_not_role_checked_and_still_verified():
    assert not catalog.get("triad").role_check and not catalog.get("copy").role_check
    res = hx.sweep("triad", ["16KiB"], device="host", iterations=3, reference=False, progress=False)
    assert float(res.metadata[f"verify.triad.{16 << 10}"].split("=")[1]) < 1e-6


# --- hipexplore.bench.roles directly: what the CLI runs above cannot pin ------------------------------

from hipexplore.bench import roles  # noqa: E402


def _roles_run(tmp_path: Path, source: str, entry: str, args: str, n: int = 1000, **kw) -> str:
    from hipexplore.bench import rotating as rot
    from hipexplore.compile.cache import CompileCache
    from hipexplore.devices.host import HostDevice
    from hipexplore.kernels.build import kernel_for

    src = tmp_path / f"{entry}.c"
    src.write_text(source)
    spec = hx.user_kernel(src, entry, args, name=f"roles_{entry}", host_source=src, register_it=False)
    dev = HostDevice(llc_bytes=64 << 10)
    dev.cache = CompileCache(disk_dir=tmp_path / "cache")
    with rot.BufferSets(dev, spec, n, 1) as sets:
        before = {k: v.copy() for k, v in sets.pristine.items()}
        try:
            return roles.check_roles(dev, spec, sets, kernel_for(dev, spec), (1, 1, 1), (1, 1, 1), **kw)
        finally:  # every buffer of set 0 restored, whatever the check found
            for name, arr in before.items():
                got = np.empty_like(arr)
                dev.copy_to_host(sets.buffers[0][name], got)
                np.testing.assert_array_equal(got, arr)


@pytest.mark.timeout(300)
def test_roles_check_roles_returns_or_raises_what_it_found(need_host_cc, tmp_path):
    assert roles.check_roles.__module__ == "hipexplore.bench.roles"
    assert _roles_run(tmp_path, STENCIL_C.replace("stencil2d", "st_ok"), "st_ok", RIGHT) == ""
    args = "out:y:f32[n], in:x:f32[n], n:u64=n"
    # defer_unwritten: only unwritten outputs found, so the line is returned for the caller to raise later
    text = _roles_run(tmp_path, PARTIAL_C, "scale_head", args, where="at n=1000", defer_unwritten=True)
    assert text.startswith(
        "argument 1 'y' (out:f32[n]) was not written by scale_head: 7 of 1000 elements were left "
        "unwritten (still the poison NaN 0xffffffff put there before the launch; the first at index 993)"
    )
    assert text.endswith("Seen in one checked launch before timing at n=1000; --no-verify skips this check")
    with pytest.raises(ConfigError) as exc:
        _roles_run(tmp_path, PARTIAL_C, "scale_head", args)
    assert str(exc.value).startswith(text.split(". ")[0])
    # an 'in' that is written is raised even with defer_unwritten
    swapped = (
        r"^argument 1 'in' \(in:f32\[nx\*ny\]\) was written by stencil2d: 256 of 256 .* "
        r"Swapped roles\? The C signature is stencil2d\(float\* out, "
    )
    with pytest.raises(ConfigError, match=swapped):
        _roles_run(tmp_path, STENCIL_C, "stencil2d", SWAPPED, n=16 * 16, defer_unwritten=True)


@pytest.mark.timeout(300)
def test_roles_an_int8_output_that_stores_the_poison_value_is_written(need_host_cc, tmp_path):
    src = "void sat(signed char* y, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) y[i] = 127; }\n"
    assert _roles_run(tmp_path, src, "sat", "out:y:i8[n], n:u64=n") == ""  # 0x7f is the first poison: checked twice
    text = _roles_run(tmp_path, src.replace("i < n", "i + 1 < n"), "sat", "out:y:i8[n], n:u64=n", defer_unwritten=True)
    assert "1 of 1000 elements were left unwritten (still the poison 0x7f" in text and "first at index 999" in text


@pytest.mark.timeout(60)
def test_roles_c_signature_and_which_kernels_are_checked():
    spec = hx.user_kernel(STENCIL_C, "stencil2d", RIGHT, host_source=STENCIL_C, register_it=False)
    assert roles.c_signature(spec) == "stencil2d(float* out, const float* in, int nx, int ny)"
    assert roles.applies(spec)
    import dataclasses

    assert roles.c_signature(dataclasses.replace(spec, host_source="", gpu_source="")) == ""
    assert roles.c_signature(dataclasses.replace(spec, entry="other")) == ""  # not defined in the source
    assert not roles.applies(dataclasses.replace(spec, role_check=False))
    assert not roles.applies(catalog.get("triad"))  # the catalog's kernels: their reference checks every output
