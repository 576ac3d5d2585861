"""``hipexplore.devices.cuda``: without an NVIDIA GPU here, the absent device is named by what was
looked for (the driver library, or the driver's own error). (Runtime calls on a GPU:
tests/gpu/test_gpu_cuda.py.)"""

from __future__ import annotations

import ctypes

import pytest

from hipexplore.devices import available, get_device
from hipexplore.errors import DeviceUnavailable

from devices.test_devices import _gpu_present, _not_here


def test_cuda_absent_names_what_was_looked_for() -> None:
    if _gpu_present("cuda"):
        _not_here(
            "a machine without an NVIDIA GPU",
            "an NVIDIA GPU is present here: the absent-device error cannot be produced",
        )
    with pytest.raises(DeviceUnavailable) as exc:
        get_device("cuda")
    msg = str(exc.value)
    assert msg.endswith(f"; devices here: {', '.join(available())}"), msg  # issue 49.5: the devices that are here
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:  # no NVIDIA driver here: the message names the library that was looked for
        assert msg.startswith("CUDA: looked for the NVIDIA driver library libcuda.so.1")
    else:  # a driver without a usable GPU: cuInit's or cuDeviceGetCount's own error, by name
        assert msg.startswith("CUDA: cu") and "CUDA_ERROR_" in msg
