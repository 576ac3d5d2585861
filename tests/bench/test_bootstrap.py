"""hipexplore.bench.bootstrap: block labels and the vectorised resampled medians behind every
interval of bench.stats. The promise pinned here: the medians are *exactly* ``np.median`` of the
concatenated draws (what the per-resample loop they replace computed), whatever path is taken."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench import bootstrap
from hipexplore.bench.bootstrap import block_labels
from hipexplore.errors import ConfigError


def naive_medians(values, block, counts):
    """The loop the module replaced: concatenate each resample's drawn blocks, take the median."""
    out = []
    for row in counts:
        parts = [values[block == b] for b, c in enumerate(row) for _ in range(int(c))]
        out.append(np.median(np.concatenate(parts)))
    return np.array(out)


@pytest.mark.timeout(30)
def test_block_labels_merge_chunks_to_the_minimum_never_splitting_one():
    # no chunk ids: every sample its own chunk, blocks of ceil(n ** (1/3)) samples
    assert block_labels(None, 27).tolist() == [i // 3 for i in range(27)]
    chunks = np.repeat([0, 1, 2, 3, 4], [2, 2, 5, 1, 1])
    labels = block_labels(chunks, chunks.size, min_block=4)
    assert labels.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]  # the short last block (2) joins the one before
    for c in np.unique(chunks):  # a chunk is never split across blocks
        assert np.unique(labels[chunks == c]).size == 1
    assert block_labels(np.zeros(10), 10).tolist() == [0] * 10  # one chunk: one block
    assert block_labels(None, 0).size == 0
    assert block_labels(None, 5, min_block=0).tolist() == [0, 1, 2, 3, 4]  # at least one sample a block


@pytest.mark.timeout(30)
def test_block_labels_refuse_chunk_ids_of_another_length():
    with pytest.raises(ConfigError, match=r"^chunk ids \(3\) and samples \(4\) differ in number$"):
        block_labels(np.arange(3), 4)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("n, nblocks", [(7, 3), (50, 6), (400, 17), (3000, 40)])
def test_resampled_medians_are_exactly_the_median_of_the_concatenated_draws(n, nblocks):
    rng = np.random.default_rng(n)
    values = np.round(rng.lognormal(0, 1, n), 3)  # ties too
    block = np.sort(rng.integers(0, nblocks, n))
    block = np.unique(block, return_inverse=True)[1].ravel()
    k = int(block.max()) + 1
    counts = bootstrap.row_counts(rng.integers(0, k, size=(60, k)), k)
    counts[0] = 0
    counts[0, 0] = 1  # a resample of one block only: its middle lies outside the scanned window
    got = bootstrap.resampled_medians(values, block, counts)
    np.testing.assert_array_equal(got, naive_medians(values, block, counts))


@pytest.mark.timeout(30)
def test_row_counts_count_each_rows_draws():
    draws = np.array([[0, 0, 2], [1, 2, 2]])
    assert bootstrap.row_counts(draws, 4).tolist() == [[2, 0, 1, 0], [0, 1, 2, 0]]


@pytest.mark.timeout(60)
def test_block_medians_equal_and_unequal_blocks_and_one_block():
    rng = np.random.default_rng(7)
    samples = rng.normal(10, 1, 90)
    one = bootstrap.block_medians(samples, np.zeros(90, dtype=int), 20, rng)
    assert (one == np.median(samples)).all()  # one block: every resample is the sample itself
    equal = bootstrap.block_medians(samples, np.repeat(np.arange(9), 10), 200, np.random.default_rng(1))
    unequal = bootstrap.block_medians(samples, np.repeat(np.arange(4), [10, 20, 30, 30]), 200, np.random.default_rng(1))
    for meds in (equal, unequal):
        assert meds.shape == (200,) and meds.min() >= samples.min() and meds.max() <= samples.max()
        assert abs(np.median(meds) - np.median(samples)) < 0.5
    # same seed, same draws: reproducible
    again = bootstrap.block_medians(samples, np.repeat(np.arange(4), [10, 20, 30, 30]), 200, np.random.default_rng(1))
    np.testing.assert_array_equal(unequal, again)


@pytest.mark.timeout(60)
def test_grouped_medians_draw_whole_groups_first():
    """Two passes far apart, 40 samples each: the first stage draws a pass twice (median that
    pass's level, probability 1/4 each) or both once (exactly 40 of each: median 2.0, probability
    1/2), whatever blocks the second stage draws; a one-stage draw over pooled blocks splits 40/40
    only about 1 time in 5."""
    samples = np.r_[np.full(40, 1.0), np.full(40, 3.0)]
    groups = np.repeat([0, 1], 40)
    meds = bootstrap.grouped_block_medians(samples, None, groups, 2000, np.random.default_rng(3))
    assert set(np.unique(meds)) <= {1.0, 2.0, 3.0}
    assert 0.2 < (meds == 1.0).mean() < 0.3 and 0.2 < (meds == 3.0).mean() < 0.3 and 0.45 < (meds == 2.0).mean() < 0.55
    pooled = bootstrap.block_medians(samples, block_labels(None, 80), 2000, np.random.default_rng(3))
    assert (pooled == 2.0).mean() < 0.3


def test_the_two_stage_bootstrap_draws_whole_chunks():
    """Why: a chunk is drawn whole (its samples are correlated): with chunks of three 1s, two 5s
    and three 1s, every resampled median is 1 or 5, and both occur."""
    x = np.array([1.0, 1, 1, 5, 5, 1, 1, 1])
    chunks = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    medians = bootstrap.grouped_block_medians(x, chunks, np.zeros(8, int), 400, np.random.default_rng(0))
    assert set(np.round(medians, 9)) == {1.0, 5.0}
