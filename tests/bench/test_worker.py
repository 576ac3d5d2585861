"""A precompiled host library has no source to check ``--args`` against: its sweep runs in a worker
by default, so a spec shorter than the C function faults the worker, never the caller (#25.7)."""
from __future__ import annotations

import subprocess
import sys

from conftest import need_tool


def test_a_wrong_spec_for_a_host_library_is_one_line_not_a_segfault(tmp_path):
    cc = need_tool("cc")
    (tmp_path / "lib.c").write_text(
        "void hx_axpy(float* y, const float* x, float s, unsigned long long n) {\n"
        "  for (unsigned long long i = 0; i < n; ++i) y[i] = s * x[i] + y[i];\n}\n")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(tmp_path / "libaxpy.so"), str(tmp_path / "lib.c")], check=True)
    # the spec names one argument of four: called in-process, x would be whatever a register held
    p = subprocess.run([sys.executable, "-m", "hipexplore", "bench", "ax", "--code-object", str(tmp_path / "libaxpy.so"),
                        "--entry", "hx_axpy", "--args", "inout:y:f32[n]", "--device", "host", "--size", "64KiB",
                        "--iterations", "30", "--units", "1", "--no-progress"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "faulted" in lines[0] and "sweep worker" in lines[0], p.stderr
