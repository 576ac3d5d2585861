"""``hipexplore.tuning.hxrun``: a tuning candidate run and checked on a device against numpy: the
host C twins compute what numpy computes for every epilogue, and the check is not vacuous (an
element never written, or another epilogue, reads as a large error)."""

from __future__ import annotations

import pytest

from hipexplore.tuning import hxgen as g
from hipexplore.tuning import hxrun

from tuning.test_hxgen import CONFIGS, SHAPES, _compiler

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("epilogue", list(g.EPILOGUES))
def test_host_twins_match_numpy_for_every_epilogue(epilogue):
    from hipexplore.devices import get_device

    comp = _compiler("host")
    dev = get_device("host")
    try:
        for m, n, k in SHAPES:
            prob = g.Problem("p", m, n, k, epilogue)
            for cfg in CONFIGS:
                err = hxrun.check_candidate(dev, prob, cfg, comp.compile, seed=m + k)
                assert err < hxrun.DEFAULT_RTOL, (epilogue, (m, n, k), cfg.perf_config, err)
    finally:
        dev.close()


def test_a_wrong_result_is_caught(monkeypatch):
    """The check is not vacuous: an element never written (outputs start as NaN) reads as inf, and
    a kernel computing another epilogue than the reference reads as a large error."""
    import numpy as np
    from hipexplore.devices import get_device

    assert hxrun.relative_error(np.array([1.0, np.nan]), np.array([1.0, 1.0])) == float("inf")
    comp = _compiler("host")
    dev = get_device("host")
    try:
        cfg = CONFIGS[1]
        real = hxrun.reference
        monkeypatch.setattr(hxrun, "reference", lambda problem, *a: real(g.Problem("p", 16, 16, 32, "bias_relu"), *a))
        assert hxrun.check_candidate(dev, g.Problem("p", 16, 16, 32, "bias"), cfg, comp.compile, seed=1) > 1e-2
    finally:
        dev.close()
