"""hipexplore.cli.bench_kernels: the kernels a ``hipexplore bench`` command line names, built from the
real parser's namespace on the host device. Nothing here compiles: a kernel's source is read and its
geometry evaluated, and the sweep that would build it is the command's (tests/cli/test_bench_cmd.py;
the host-geometry line end to end in a subprocess: tests/hostile/test_hostile_inputs.py)."""

from __future__ import annotations

import argparse

import pytest

from hipexplore.cli import build_parser
from hipexplore.cli import bench_kernels as bk
from hipexplore.devices import get_device
from hipexplore.errors import ConfigError

HOST_KERNEL = "void {name}(float *a, unsigned long n) {{ for (unsigned long i = 0; i < n; i++) a[i] = 1; }}\n"
ARGS = "out:a:f32[n],n:u64=n"


def _args(*argv: str) -> argparse.Namespace:
    return build_parser(["bench"]).parse_args(["bench", *argv])


def _source(tmp_path, name: str) -> str:
    path = tmp_path / f"{name}.c"
    path.write_text(HOST_KERNEL.format(name=name))
    return str(path)


def test_each_name_gets_its_own_source_and_shares_one_args():
    got = bk.per_kernel(
        _args("a,b", "--source", "a.c", "--source", "b.c", "--args", ARGS, "--entry", "ka", "--entry", "kb")
    )
    assert [(k.kernel, k.source, k.entry, k.args) for k in got] == [("a", "a.c", "ka", ARGS), ("b", "b.c", "kb", ARGS)]
    assert all(isinstance(k, argparse.Namespace) and k.block == "256" for k in got)  # the rest as given


@pytest.mark.parametrize(
    "argv, says",
    [
        (["a,a", "--source", "a.c", "--source", "b.c"], "names a kernel twice"),
        (["a,b", "--source", "a.c"], "1 --source file(s) for 2 kernel name(s)"),
        (
            ["a,b,c", "--source", "a.c", "--source", "b.c", "--source", "c.c", "--args", ARGS, "--args", ARGS],
            "2 --args values for 3 kernel name(s)",
        ),
        (["a,b", "--code-object", "k.so"], "--code-object loads one kernel; KERNEL names 2"),
    ],
)
def test_a_count_that_does_not_match_the_names_is_refused(argv, says):
    with pytest.raises(ConfigError) as got:
        bk.per_kernel(_args(*argv))
    assert says in str(got.value)


def test_catalog_kernels_by_name_and_a_kernel_line_that_names_none():
    assert [k.name for k in bk.kernels_of(_args("triad, copy"))] == ["triad", "copy"]
    with pytest.raises(ConfigError, match="names no kernel; expected e.g. triad or triad,copy"):
        bk.kernels_of(_args(" , "))


def test_a_source_kernel_is_built_under_its_name(tmp_path):
    src = _source(tmp_path, "cli_bench_kernels_one")
    (kernel,) = bk.kernels_of(_args("cli_bench_kernels_one", "--source", src, "--args", ARGS))
    assert kernel.name == "cli_bench_kernels_one" and kernel.launch(1024, get_device("host")) is not None


def test_a_user_kernel_needs_its_args_and_a_code_object_its_entry(tmp_path):
    src = _source(tmp_path, "k")
    with pytest.raises(ConfigError, match="needs --args describing the kernel's arguments"):
        bk.kernels_of(_args("k", "--source", src))
    with pytest.raises(ConfigError, match="--code-object needs --entry NAME"):
        bk.user_kernel(bk.per_kernel(_args("k", "--code-object", str(tmp_path / "k.so"), "--args", ARGS))[0])


def test_preflight_evaluates_the_geometry_at_every_size_before_anything_compiles(tmp_path):
    src = _source(tmp_path, "cli_bench_kernels_pre")
    kernels = bk.kernels_of(_args("cli_bench_kernels_pre", "--source", src, "--args", ARGS, "--grid", "n**n"))
    with pytest.raises(ConfigError, match="cannot evaluate 'n\\*\\*n'"):
        bk.preflight(kernels, ["4KiB"], get_device("host"))
    bk.preflight(kernels, ["not-a-size"], get_device("host"))  # a bad size is the sweep's to name, with the others


def test_geometry_given_for_the_host_is_one_line(tmp_path, capsys):
    src, host = _source(tmp_path, "k"), get_device("host")
    bk.unused_geometry(_args("k", "--source", src, "--grid", "ceil(n/256)", "--block", "128"), host)
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and "--grid ceil(n/256), --block 128: not used on the host" in line, line
    bk.unused_geometry(_args("k", "--source", src), host)  # the defaults: nothing to say
    bk.unused_geometry(_args("triad", "--block", "128"), host)  # a catalog kernel's geometry is its own
    assert capsys.readouterr().err == ""
