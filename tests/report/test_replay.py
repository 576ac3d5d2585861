"""hipexplore.report.replay: the compiler the report's replay uses follows the recorded device."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "props, expected",
    [
        ({"kind": "cuda", "target": "sm_90"}, ("nvrtc", "sm_90")),
        ({"kind": "cuda", "target": "sm_100"}, ("nvrtc", "sm_100")),
        ({"kind": "hip", "target": "gfx942:sramecc+:xnack-"}, ("hiprtc", "gfx942")),
        ({"kind": "host", "target": "host"}, ("host", "host")),
        ({}, ("host", "host")),
    ],
)
def test_replay_compiler_follows_the_device(props, expected):
    from hipexplore.report.replay import replay_compiler_for, resolve_compiler

    assert replay_compiler_for(props) == expected
    assert resolve_compiler("auto", "auto", props) == expected
    assert resolve_compiler("host", "auto", props) == ("host", "host")
    assert resolve_compiler("nvrtc", "auto", {"kind": "host"}) == ("nvrtc", "sm_90")
