"""hip-python's two layouts with the real packages: 6.x-7.x (what the venv pins) in this process, and
hip-python 10.x (``rocm.bindings``, put in .hip-python-10 by ``setup.sh --dev``) in a subprocess
whose path puts it first: hiprtc compiles a real gfx90a code object through each, and the HIP
runtime path loads through each. A layout chosen wrongly, or a library not pointed at ROCm 5.2's
libamdhip64.so.5, fails the compile (10.x alone would look for libhiprtc.so, which Debian lacks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import missing, require_compiler

REPO = Path(__file__).resolve().parents[2]
OVERLAY = REPO / ".hip-python-10"

PROBE = r"""
import json, struct
from hipexplore.compile import hip_bindings
from hipexplore.compile.hiprtc import HiprtcCompiler
from hipexplore.compile.request import CompileRequest, Source
from hipexplore.devices import hip as hipdev
from hipexplore.errors import DeviceUnavailable
c = HiprtcCompiler()
code = c.compile(CompileRequest(Source("t.hip", 'extern "C" __global__ void k(float* a) { a[threadIdx.x] *= 2.0f; }'),
                                "hiprtc", "gfx90a", kernels=("k",)))
try:
    devices = hipdev.device_count()
except DeviceUnavailable as exc:
    devices = str(exc)
print(json.dumps({"layout": hip_bindings.layout(), "machine": struct.unpack_from("<H", code.binary, 18)[0],
                  "hip_python": dict(c.identity().extra)["hip_python"], "runtime_module": hip_bindings.module("hip").__name__,
                  "devices": devices}))
"""


def _probe(extra_path: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*extra_path, str(REPO)])}
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_classic_layout_is_used_when_installed():
    require_compiler("hiprtc")
    out = _probe([])
    assert out["layout"].startswith("hip-python 6.x-7.x") and out["hip_python"].startswith("7.")
    assert out["machine"] == 224 and out["runtime_module"] == "hip.hip"


def test_rocm_bindings_layout_of_hip_python_10():
    require_compiler("hiprtc")
    if not (OVERLAY / "rocm" / "bindings").is_dir():
        missing("hip-python 10 in .hip-python-10", "run ./setup.sh --dev (it installs the rocm.bindings wheels there)")
    out = _probe([str(OVERLAY)])
    assert out["layout"].startswith("hip-python >= 10") and out["hip_python"].startswith("10.")
    assert out["machine"] == 224  # a real AMDGPU code object, compiled by ROCm 5.2's hiprtc through rocm.bindings
    assert out["runtime_module"] == "rocm.bindings.hip"
    # no GPU here: the runtime was loaded and answered (hipErrorNoDevice), it did not fail to import
    assert isinstance(out["devices"], int) or "hipGetDeviceCount" in out["devices"]
