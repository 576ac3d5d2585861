"""``hipexplore.devices``: a device by name (``parse_device``, ``get_device``), ``auto`` falling
back to the host and saying why, and the helpers the device tests share. Each backend's own tests
are at its path (test_base.py, test_host.py, test_gpu.py, test_cuda.py, test_hip.py). (CUDA and
HIP runtime calls run on the H200 script; here neither GPU exists, so their absence must be
reported clearly.)"""

from __future__ import annotations

import pytest

from hipexplore.devices import get_device, parse_device
from hipexplore.errors import ConfigError, DeviceUnavailable, UnsupportedOperation


def test_parse_device_and_unknown_kind() -> None:
    assert parse_device("cuda:1") == ("cuda", 1)
    assert parse_device("host") == ("host", 0)
    with pytest.raises(ConfigError, match="'tpu'"):
        get_device("tpu")
    with pytest.raises(ConfigError, match="integer"):
        parse_device("cuda:x")


def _not_here(what: str, reason: str) -> None:
    """A condition no CI flag can ask a machine for (no GPU where one is, another runtime): a skip
    under every flag, through conftest's one helper."""
    from conftest import NOT_REQUIRED, need

    need(what, reason, flag=NOT_REQUIRED)


def _hip_or_missing():
    from conftest import missing
    from hipexplore.devices.hip import hip_runtime

    try:
        return hip_runtime()
    except DeviceUnavailable as exc:
        missing("hip-python with a loadable HIP runtime", str(exc))


def _gpu_present(kind: str) -> bool:
    try:
        get_device(kind).close()
    except DeviceUnavailable:
        return False
    return True


def test_auto_falls_back_to_host_and_says_why() -> None:
    if _gpu_present("cuda") or _gpu_present("hip"):
        _not_here("a machine without a GPU", "a GPU is present here: auto does not fall back to the host")
    dev = get_device("auto")
    assert dev.kind == "host"
    reasons = dev.auto_reasons
    assert len(reasons) == 2 and reasons[0].startswith("HIP") and reasons[1].startswith("CUDA")


# --- the stream hold's signals, LLC sources and overrides, peak bandwidth, ROCm 5 refusal (issue 17) --


# --- capabilities are members of the device base: an answer, or one refusal line -----------------


def _one_line_refusal(call, *words: str) -> str:
    with pytest.raises(UnsupportedOperation) as info:
        call()
    text = str(info.value)
    assert "\n" not in text and all(w in text for w in words), text
    return text
