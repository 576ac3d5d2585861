"""Launch geometry as expressions and the output check (issue 10, parts 2 and 5).

A 2-D transpose shaped like a real one (rows/cols derived from the size, a 32x32 block grid
following them, a tile of shared memory sized from the block) swept on the host device; a wrong
transpose and a wrong row-sum are caught with the configuration and the worst element named.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import hipexplore as hx
from hipexplore.cli import main
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice
from hipexplore.errors import BenchmarkError, ConfigError
from hipexplore.kernels import catalog
from hipexplore.kernels.geometry import ExprGeometry, evaluate, parse

TRANSPOSE_C = """
void transpose(float* out, const float* in, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      out[(long)c * rows + r] = in[(long)r * cols + c];
}
"""
# forgets the last row: what a kernel dropping its last partial tile does
TRANSPOSE_BAD_C = TRANSPOSE_C.replace("r < rows;", "r < rows - 1;").replace("void transpose", "void transpose_bad")
ARGS = "out:out:f32[rows*cols], in:in:f32[rows*cols], rows:i32=isqrt(n), cols:i32=n//rows"


def transpose_ref(inputs, scalars):
    return {"out": inputs["in"].reshape(scalars["rows"], scalars["cols"]).T.ravel().copy()}


@pytest.fixture(scope="module")
def dev(tmp_path_factory) -> HostDevice:
    d = HostDevice(llc_bytes=256 << 10)
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("gcache"))
    return d


def test_transpose_grid_block_and_shared_from_expressions():
    g = ExprGeometry("cols/32,rows/32", "32,32", "block_x*(block_y+1)*4", scalar_names=["rows", "cols"])
    assert g.launch(1 << 20, None, {"rows": 1024, "cols": 1024}) == ((32, 32, 1), (32, 32, 1), 32 * 33 * 4)
    # a size that is not a multiple of the tile: the grid rounds up to cover every column/row
    assert g.launch(0, None, {"rows": 1000, "cols": 33})[0] == (2, 32, 1)
    one_d = ExprGeometry("ceil(n/256)", 256)
    assert one_d(1000, None) == ((4, 1, 1), (256, 1, 1))
    assert ExprGeometry("min(compute_units*4, cdiv(n, block_x))", 128).launch(
        10**6, type("D", (), {"compute_units": 132})(), {}
    )[0] == (528, 1, 1)
    assert pickle.loads(pickle.dumps(g)).launch(0, None, {"rows": 64, "cols": 64}) == (
        (2, 2, 1),
        (32, 32, 1),
        32 * 33 * 4,
    )
    assert evaluate("isqrt(n)//2", {"n": 4096}, what="x") == 32


@pytest.mark.parametrize(
    "expr,why",
    [
        ("__import__('os').system('true')", "it calls \"__import__('os').system\""),
        ("__import__('os')", "it calls '__import__'"),
        ("n.__class__", "Attribute"),
        ("(lambda: 1)()", "it calls 'lambda: 1'"),
        ("lambda: 1", "Lambda"),
        ("[n for n in range(3)]", "ListComp"),
        ("rows/32", "'rows'"),
        ("n/", "not an arithmetic expression"),
        ("'a'*3", "only numbers"),
        ("2**(3*n)", "out of range"),
    ],
)
@pytest.mark.timeout(15)
def test_bad_expressions_are_config_errors(expr, why):
    with pytest.raises(ConfigError, match=None) as err:
        ExprGeometry(expr, 256, scalar_names=["cols"]).launch(100, None, {"cols": 4})
    assert why in str(err.value) and "grid[0]" in str(err.value)


@pytest.mark.timeout(15)
def test_bad_values_are_config_errors():
    with pytest.raises(ConfigError, match=r"block\[0\]: 'n/3' is 33.3333, not a whole number"):
        ExprGeometry(1, "n/3").launch(100, None)
    with pytest.raises(ConfigError, match=r"grid\[0\]: 'n-100' is 0; expected at least 1"):
        ExprGeometry("n-100", 1).launch(100, None)
    with pytest.raises(ConfigError, match="divides by zero with n=0"):
        ExprGeometry("4/n", 1).launch(0, None)
    with pytest.raises(ConfigError, match="1 to 3"):
        ExprGeometry("1,1,1,1", 1)
    with pytest.raises(ConfigError, match="shared_bytes.*'grid_w'"):
        ExprGeometry(1, 1, "grid_w*4")
    with pytest.raises(ConfigError, match="scalar argument"):
        parse("k", ["n"], what="scalar argument")  # message names what it was for


def test_transpose_sweep_on_host_checks_output(dev, need_host_cc, tmp_path):
    src = tmp_path / "transpose.c"
    src.write_text(TRANSPOSE_C)
    spec = catalog.user_kernel(
        src,
        "transpose",
        ARGS,
        name="test_transpose",
        grid="cols/32,rows/32",
        block="32,32",
        shared_bytes="block_x*(block_y+1)*4",
        bytes_per_launch="8*n",
        reference=transpose_ref,
    )
    try:
        res = hx.sweep(
            spec,
            ["64KiB", "256KiB"],
            [1, 3],
            ["none", "l2-write"],
            device=dev,
            iterations=9,
            reference=False,
            progress=False,
        )
    finally:
        catalog.unregister("test_transpose")
    s = res.summary
    assert len(s) == 8 and (s["median_s"] > 0).all()
    assert set(res.samples.loc[res.samples["rotating"] == 3, "buffer_set"]) == {0, 1, 2}
    assert (res.samples.loc[res.samples["flush"] == "l2-write", "flush_s"] > 0).all()
    assert res.metadata[f"verify.test_transpose.{64 << 10}"].startswith("rel_l2_error=0")


def test_wrong_transpose_names_configuration_and_worst_element(dev, need_host_cc, tmp_path):
    src = tmp_path / "transpose_bad.c"
    src.write_text(TRANSPOSE_BAD_C)
    spec = catalog.user_kernel(
        src,
        "transpose_bad",
        ARGS,
        name="test_transpose_bad",
        grid="cols/32,rows/32",
        block="32,32",
        reference=transpose_ref,
        register_it=False,
    )
    with pytest.raises(BenchmarkError) as err:
        hx.sweep(spec, ["16KiB"], device=dev, iterations=3, reference=False, progress=False)
    msg = str(err.value)
    # 16 KiB of f32 = 4096 elements: rows = cols = 64; the last input row (r = 63) is never written,
    # so out[c * 64 + 63] keeps its poison for every c: the first of them, index 63, is reported
    assert "kernel test_transpose_bad size=16384" in msg and "grid=(2, 2, 1), block=(32, 32, 1)" in msg
    assert "out[63] = nan but expected" in msg and "left unwritten" in msg and "64 of 4096 elements differ" in msg


def _rowsum_ref(inputs, scalars):
    return {"sums": inputs["x"].reshape(scalars["rows"], -1).sum(axis=1).astype(np.float32)}


def test_worst_element_among_many_is_the_largest_excess(dev, need_host_cc, tmp_path):
    """Every row sum is off by a little, one row by a lot: that one is named (index, got, expected)."""
    src = tmp_path / "rowsum.c"
    src.write_text(
        "void rowsum(float* sums, const float* x, int rows, int cols) {\n"
        "  for (int r = 0; r < rows; ++r) { float s = 0; for (int c = 0; c < cols; ++c) s += x[r * cols + c];\n"
        "    sums[r] = s * 1.001f + (r == 5 ? 7.0f : 0.0f); } }\n"
    )
    spec = catalog.user_kernel(
        src,
        "rowsum",
        "out:sums:f32[rows], in:x:f32[n], rows:i32=16, cols:i32=n//rows",
        name="test_rowsum",
        reference=_rowsum_ref,
        rtol=1e-6,
        register_it=False,
    )
    with pytest.raises(
        BenchmarkError,
        match=r"output check failed for kernel test_rowsum size=4096 .*: sums\[5\] = .* "
        r"but expected .*; 16 of 16 elements differ",
    ):
        hx.sweep(spec, ["4KiB"], device=dev, iterations=3, reference=False, progress=False)
    # the same kernel within a looser tolerance, except row 5
    loose = catalog.user_kernel(
        src,
        "rowsum",
        "out:sums:f32[rows], in:x:f32[n], rows:i32=16, cols:i32=n//rows",
        name="test_rowsum_loose",
        reference=_rowsum_ref,
        rtol=2e-3,
        register_it=False,
    )
    with pytest.raises(BenchmarkError, match=r"sums\[5\].*1 of 16 elements differ"):
        hx.sweep(loose, ["4KiB"], device=dev, iterations=3, reference=False, progress=False)


def test_second_kernel_as_reference(dev, need_host_cc, tmp_path):
    good = tmp_path / "t.c"
    good.write_text(TRANSPOSE_C)
    bad = tmp_path / "tb.c"
    bad.write_text(TRANSPOSE_BAD_C)
    ref_kernel = catalog.user_kernel(good, "transpose", ARGS, name="test_transpose_refk", register_it=False)
    ok = catalog.user_kernel(
        good, "transpose", ARGS, name="test_transpose_k2", check_kernel=ref_kernel, register_it=False
    )
    res = hx.sweep(ok, ["16KiB"], device=dev, iterations=3, reference=False, progress=False)
    assert res.metadata[f"verify.test_transpose_k2.{16 << 10}"] == "rel_l2_error=0"
    wrong = catalog.user_kernel(
        bad, "transpose_bad", ARGS, name="test_transpose_k3", check_kernel=ref_kernel, register_it=False
    )
    with pytest.raises(BenchmarkError, match=r"out\[63\] = nan"):
        hx.sweep(wrong, ["16KiB"], device=dev, iterations=3, reference=False, progress=False)


@pytest.mark.parametrize(
    "flag,value,needle",
    [
        ("--grid", "cols/32,rows/", "grid[1]: 'rows/' is not an arithmetic expression"),
        ("--grid", "os.getpid()", "grid[0]: 'os.getpid()' is not an allowed arithmetic expression"),
        ("--shared-bytes", "block_q*4", "shared_bytes: arithmetic expression 'block_q*4' uses 'block_q'"),
        ("--block", "32,32.5", "argument --block: expected a positive integer, got '32.5'"),
        ("--block", "32,n/3", "block[1]: 'n/3' is 1365.33, not a whole number"),
    ],
)
def test_cli_bad_geometry_is_one_line_exit_2(flag, value, needle, tmp_path, capsys, need_host_cc):
    src = tmp_path / "transpose.c"
    src.write_text(TRANSPOSE_C)
    try:
        rc = main(
            [
                "bench",
                "tr",
                "--device",
                "host",
                "--source",
                str(src),
                "--entry",
                "transpose",
                "--args",
                ARGS,
                "--grid",
                "cols/32,rows/32",
                "--block",
                "32,32",
                flag,
                value,
                "--iterations",
                "3",
                "--no-reference",
                "--no-progress",
                "--size",
                "16KiB",
            ]
        )
    except SystemExit as exc:  # argparse
        rc = exc.code
    err = capsys.readouterr().err.strip()
    assert rc == 2 and needle in err and len(err.splitlines()) == 1, err


def test_sweep_panel_takes_geometry_expressions(need_host_cc, tmp_path, monkeypatch):
    from conftest import need_module

    need_module("ipywidgets")  # the notebook extra
    from hipexplore.widgets import SweepPanel

    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "transpose.c"
    src.write_text(TRANSPOSE_C)
    catalog.user_kernel(src, "transpose", ARGS, name="test_panel_transpose", reference=transpose_ref)
    try:
        panel = SweepPanel(
            device="host",
            kernel="test_panel_transpose",
            sizes="16KiB",
            rotating="1, 2",
            flush=("none",),
            iterations=4,
            grid="cols/32,rows/32",
            block="32,32",
            shared_bytes="block_x*4",
        )
        spec = panel.params()["kernels"]
        assert spec.name == "test_panel_transpose" and spec.launch(4096, None) == ((2, 2, 1), (32, 32, 1), 128)
        panel.run(blocking=True)
        assert len(panel.summary) == 3 and panel.error is None
        # an expression that only fails with this kernel's values: it reached the sweep and is shown
        panel.grid.value = "cols/(rows-64)"
        panel.run_button.click()
        with pytest.raises(ConfigError, match="divides by zero with cols=64, rows=64"):
            panel.wait(60)
        assert "divides by zero" in panel.errors.value
        panel.grid.value = "cols/"
        with pytest.raises(ConfigError, match=r"grid\[0\]: 'cols/' is not an arithmetic expression"):
            panel.params()
    finally:
        catalog.unregister("test_panel_transpose")
