"""``hipexplore compile`` and ``hipexplore cache``: JSON reports, two-process disk hits, errors.

Separate processes where the claim is about processes (the done-when check: hiprtc gfx90a
compiled, then disk-hit); in-process ``main()`` elsewhere to keep the suite fast.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
from pathlib import Path

import pytest

import cliproc
from hipexplore.cli import main

REPO = Path(__file__).resolve().parents[2]

HOST_SRC = "int answer(void) { return 17; }\n"
HIP_SRC = """extern "C" __global__ void triad(float* a, const float* b, const float* c, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}
template <int N> __global__ void scale(float* a) { a[threadIdx.x] *= N; }
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(path))
    monkeypatch.delenv("HIPEXPLORE_CACHE_DISK", raising=False)
    return path


def run_json(capsys, *argv: str) -> dict:
    rc = main(list(argv))
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def run_cli(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m hipexplore ARGV`` in a process of its own (forked from a preloaded interpreter:
    tests/cliproc.py)."""
    return cliproc.run(argv, cwd=REPO, timeout=300, env={**os.environ, **(env or {})})


def test_host_compile_json_then_disk_hit_and_out_file(tmp_path, cache_dir, capsys):
    src = tmp_path / "answer.c"
    src.write_text(HOST_SRC)
    out = tmp_path / "libanswer.so"
    first = run_json(capsys, "compile", str(src), "--compiler", "host", "--json", "--out", str(out), "--option=-O2")
    second = run_json(capsys, "compile", str(src), "--compiler", "host", "--json", "--option=-O2")
    assert (first["outcome"], second["outcome"]) == ("compiled", "disk-hit")
    assert first["key"] == second["key"] and len(first["key"]) == 64
    for field in (
        "compile_seconds",
        "lookup_seconds",
        "bytes",
        "compiler",
        "target",
        "kernels",
        "lowered_names",
        "seconds_saved",
    ):
        assert field in first
    assert first["compiler"] == "host" and first["target"] == "host" and first["options"] == ["-O2"]
    assert second["compile_seconds"] == pytest.approx(first["compile_seconds"])
    assert first["bytes"] == out.stat().st_size
    assert ctypes.CDLL(str(out)).answer() == 17
    assert first["cache_dir"] == str(cache_dir)
    stats = run_json(capsys, "cache", "stats", "--json")
    assert stats["entries"] == 1 and stats["by_compiler"] == {"host": 1} and stats["root"] == str(cache_dir)
    # a different option is a different key
    third = run_json(capsys, "compile", str(src), "--compiler", "host", "--json", "--option=-O1")
    assert third["outcome"] == "compiled" and third["key"] != first["key"]


def test_no_cache_compiles_every_time_and_stores_nothing(tmp_path, cache_dir, capsys):
    src = tmp_path / "answer.c"
    src.write_text(HOST_SRC)
    runs = [run_json(capsys, "compile", str(src), "--compiler", "host", "--json", "--no-cache") for _ in range(2)]
    assert [r["outcome"] for r in runs] == ["compiled", "compiled"]
    assert runs[0]["cache_dir"] is None
    assert run_json(capsys, "cache", "stats", "--json")["entries"] == 0


def test_headers_and_diagnostics(tmp_path, cache_dir, capsys, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path / "dumps"))
    (tmp_path / "value.h").write_text("#define VALUE 23\n")
    src = tmp_path / "answer.c"
    src.write_text('#include "value.h"\nint answer(void) { return VALUE; }\n')
    first = run_json(
        capsys,
        "compile",
        str(src),
        "--compiler",
        "host",
        "--header",
        str(tmp_path / "value.h"),
        "--json",
        "-o",
        str(tmp_path / "a.so"),
    )
    assert ctypes.CDLL(str(tmp_path / "a.so")).answer() == 23
    (tmp_path / "value.h").write_text("#define VALUE 24\n")
    second = run_json(
        capsys, "compile", str(src), "--compiler", "host", "--header", str(tmp_path / "value.h"), "--json"
    )
    assert second["outcome"] == "compiled" and second["key"] != first["key"]  # header text is in the key
    bypass = run_json(
        capsys,
        "compile",
        str(src),
        "--compiler",
        "host",
        "--header",
        str(tmp_path / "value.h"),
        "--diagnostic",
        "dump-source",
        "--json",
    )
    assert bypass["outcome"] == "bypassed" and bypass["key"] == second["key"]


def test_cache_verify_and_clear(tmp_path, cache_dir, capsys):
    src = tmp_path / "answer.c"
    for v in (1, 2):
        src.write_text(f"int answer(void) {{ return {v}; }}\n")
        run_json(capsys, "compile", str(src), "--compiler", "host", "--json")
    entries = sorted(cache_dir.rglob("*.hxc"))
    assert len(entries) == 2
    data = bytearray(entries[0].read_bytes())
    data[-40] ^= 0xFF
    entries[0].write_bytes(bytes(data))
    report = run_json(capsys, "cache", "verify", "--json")
    assert (report["checked"], report["ok"], report["corrupt"], report["removed"]) == (2, 1, 1, 1)
    assert main(["cache", "verify"]) == 0 and "1 ok, 0 bad" in capsys.readouterr().out
    assert run_json(capsys, "cache", "clear", "--json")["removed"] == 1
    assert run_json(capsys, "cache", "stats", "--json")["entries"] == 0
    assert main(["cache", "stats"]) == 0 and "0 entries" in capsys.readouterr().out


# -- errors ----------------------------------------------------------------------------------------
def _one_clean_error(capsys, argv: list[str], *needles: str) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"hipexplore {argv[0]}: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


def test_missing_source_and_header(tmp_path, cache_dir, capsys):
    err = _one_clean_error(
        capsys, ["compile", str(tmp_path / "nope.c"), "--compiler", "host"], "nope.c", "does not exist"
    )
    assert len(err.strip().splitlines()) == 1
    src = tmp_path / "answer.c"
    src.write_text(HOST_SRC)
    _one_clean_error(
        capsys, ["compile", str(src), "--compiler", "host", "--header", str(tmp_path / "missing.h")], "missing.h"
    )
    _one_clean_error(capsys, ["compile", str(tmp_path), "--compiler", "host"], "is a directory")


def test_missing_target_for_gpu_compiler(tmp_path, cache_dir, capsys):
    src = tmp_path / "k.hip"
    src.write_text(HIP_SRC)
    _one_clean_error(capsys, ["compile", str(src), "--compiler", "hiprtc"], "--target is required", "gfx90a")


def test_a_gpu_target_for_the_host_compiler_is_refused_before_cc_runs(tmp_path, cache_dir, capsys, monkeypatch):
    # a real CC wrapper that leaves a mark when run: the refusal comes before the compiler is asked anything
    mark = tmp_path / "cc-ran"
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(f'#!/bin/sh\ntouch {mark}\nexec cc "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    src = tmp_path / "answer.c"
    src.write_text(HOST_SRC)
    _one_clean_error(
        capsys, ["compile", str(src), "--compiler", "host", "--target", "gfx90a"], "'gfx90a'", "--target host"
    )
    assert not mark.exists()


def test_compile_error_shows_the_log_tail(tmp_path, cache_dir, capsys):
    src = tmp_path / "bad.c"
    src.write_text("int answer(void) {\n  return undefined_name;\n}\n")
    err = _one_clean_error(capsys, ["compile", str(src), "--compiler", "host"], "undefined_name")
    assert len(err.strip().splitlines()) > 1  # message plus the compiler's last log lines
    assert run_json(capsys, "cache", "stats", "--json")["entries"] == 0  # failures are not cached


def test_cache_dir_that_is_a_file_is_an_error_for_cache_stats(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(blocker))
    _one_clean_error(capsys, ["cache", "stats"], "not a directory")


# -- real hiprtc, separate processes --------------------------------------------------------------------
def _hiprtc_or_skip():
    from conftest import require_compiler

    require_compiler("hiprtc")


def test_hiprtc_gfx90a_compiled_then_disk_hit_in_two_processes(tmp_path):
    """The done-when check of the compile cache."""
    _hiprtc_or_skip()
    src = tmp_path / "k.hip"
    src.write_text(HIP_SRC)
    env = {"HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache")}
    argv = ["compile", str(src), "--compiler", "hiprtc", "--target", "gfx90a", "--kernel", "scale<3>", "--json"]
    runs, binaries = [], []
    for i in range(2):
        out = tmp_path / f"k{i}.co"
        proc = run_cli(*argv, "-o", str(out), env=env)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout))
        binaries.append(out.read_bytes())
    assert [r["outcome"] for r in runs] == ["compiled", "disk-hit"]
    assert runs[0]["key"] == runs[1]["key"]
    assert runs[0]["bytes"] == runs[1]["bytes"] > 1000
    assert runs[1]["lowered_names"] == runs[0]["lowered_names"] and runs[0]["lowered_names"]["scale<3>"].startswith(
        "_Z"
    )
    assert runs[1]["lookup_seconds"] < runs[0]["compile_seconds"]
    # the disk hit hands back the very code object compiled: a gfx90a one with the lowered kernel
    assert binaries[0] == binaries[1] and len(binaries[0]) == runs[0]["bytes"]
    from elfcheck import assert_amdgpu_code_object

    assert_amdgpu_code_object(binaries[1], "gfx90a", runs[0]["lowered_names"]["scale<3>"])


def test_hiprtc_unknown_target_is_one_clean_error_in_a_process(tmp_path):
    _hiprtc_or_skip()
    src = tmp_path / "k.hip"
    src.write_text(HIP_SRC)
    env = {"HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache")}
    bad = run_cli("compile", str(src), "--compiler", "hiprtc", "--target", "bogus", env=env)
    assert bad.returncode == 2 and "bogus" in bad.stderr and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("hipexplore compile: error:")
    broken = tmp_path / "broken.hip"
    broken.write_text("__global__ void k() { this is not C++; }\n")
    fail = run_cli("compile", str(broken), "--compiler", "hiprtc", "--target", "gfx90a", env=env)
    assert fail.returncode == 2 and "Traceback" not in fail.stderr
    lines = fail.stderr.strip().splitlines()
    assert "broken.hip" in lines[0] and "gfx90a" in lines[0]
    assert any("this is not C++" in line for line in lines[1:])  # the compiler's log tail


def test_nvrtc_sm90_compiled_then_disk_hit(tmp_path, cache_dir, capsys):
    from conftest import require_compiler

    require_compiler("nvrtc")
    src = tmp_path / "k.cu"
    src.write_text(HIP_SRC)
    argv = ["compile", str(src), "--compiler", "nvrtc", "--target", "sm_90", "--kernel", "scale<2>", "--json"]
    first = run_json(capsys, *argv, "-o", str(tmp_path / "a.cubin"))
    second = run_json(capsys, *argv, "-o", str(tmp_path / "b.cubin"))
    assert (first["outcome"], second["outcome"]) == ("compiled", "disk-hit")
    assert first["mode"] == "cubin" and first["lowered_names"] == second["lowered_names"]
    other = run_json(capsys, *argv[:5], "sm_80", *argv[6:], "-o", str(tmp_path / "c.cubin"))
    assert other["outcome"] == "compiled" and other["key"] != first["key"]
    from elfcheck import assert_cubin

    a, b = (tmp_path / "a.cubin").read_bytes(), (tmp_path / "b.cubin").read_bytes()
    assert a == b
    assert_cubin(b, 90, first["lowered_names"]["scale<2>"])
    assert_cubin((tmp_path / "c.cubin").read_bytes(), 80, first["lowered_names"]["scale<2>"])
