"""``hipexplore.bench.modes``: when two modes in a configuration's samples matter: a bimodal flag
only where the modes can move the median beyond its interval, with where they lie."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench.modes import bimodal_note, split, warning_with_modes
from hipexplore.bench.stats import Measurement

pytestmark = pytest.mark.timeout(60)


def test_a_bimodal_flag_only_where_the_modes_move_the_median_beyond_its_interval():
    rng = np.random.default_rng(3)
    far = Measurement(np.r_[rng.normal(1e-6, 2e-9, 300), rng.normal(1.5e-6, 2e-9, 200)])
    assert far.bimodal
    s = far.summary()
    note = warning_with_modes(s["warning"], far, s["ci_low_s"], s["ci_high_s"])
    assert "bimodal: modes at 1.000 and 1.500 us (40% in the upper)" in note and "Sarle" not in note
    # two modes an interval would cover: the same shape, squeezed until the interval spans the gap
    lo, hi, share = split(far.samples)
    assert lo == pytest.approx(1e-6, rel=1e-2) and hi == pytest.approx(1.5e-6, rel=1e-2) and share == pytest.approx(0.4)
    assert bimodal_note(far, s["ci_low_s"], s["ci_low_s"] + (hi - lo) * 1.01) == ""
    assert bimodal_note(far, s["ci_low_s"], s["ci_low_s"] + (hi - lo) * 0.99) != ""
    flat = Measurement(rng.normal(1e-6, 1e-8, 400))
    assert not flat.bimodal and warning_with_modes("noisy: x", flat, 0.9e-6, 1.1e-6) == "noisy: x"
