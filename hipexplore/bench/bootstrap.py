"""Block-bootstrap medians: the resampling behind every interval of ``bench.stats``.

Why a module of its own: the stop rule asks for an interval every 10% of growth, each unit of a
sweep in units asks as often as a whole sweep did, and every summary row and bias is bootstrapped
again when units are merged; the per-resample loop these replace (one concatenation and one median
per resample) cost 35 of 70 profiled seconds of a default host sweep. Here the resamples are drawn
as counts per block (``row_counts``; a drawn group's blocks as one multinomial) and their medians
read off the sorted samples in vectorised passes (``resampled_medians``), exactly as ``np.median``
of the concatenated draws would give them. Each step is public so that its tests pin it against
``np.median`` of the explicit draws, one step at a time.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:  # numpy is imported in the functions that compute: `bench --help` loads this module without it
    import numpy as np


def block_labels(chunks: np.ndarray | None, n: int, min_block: int | None = None) -> np.ndarray:
    """Label of the bootstrap block of each sample: consecutive chunks merged until a block holds
    at least ``min_block`` samples (default ``ceil(n ** (1/3))``); no chunk is split. Without
    chunk ids every sample is its own chunk."""
    import numpy as np

    ids = np.arange(n) if chunks is None else np.asarray(chunks).ravel()
    if ids.size != n:
        raise ConfigError(f"chunk ids ({ids.size}) and samples ({n}) differ in number")
    want = max(1, math.ceil(n ** (1 / 3))) if min_block is None else max(1, int(min_block))
    labels = np.empty(n, dtype=np.int64)
    block, size, start = 0, 0, 0
    # runs of equal chunk id (a chunk's samples are consecutive)
    bounds = np.flatnonzero(np.diff(ids)) + 1 if n else np.empty(0, dtype=np.int64)
    for stop in list(bounds) + [n]:
        if size >= want:
            block += 1
            size = 0
        labels[start:stop] = block
        size += stop - start
        start = stop
    if n and size < want and block > 0:  # a short last block joins the one before it
        labels[labels == block] = block - 1
    return labels


def resampled_medians(values: np.ndarray, block: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The median of each resample, given as ``counts[r, b]``: how many times resample ``r`` drew
    block ``b`` (``block[i]``: the block of sample ``values[i]``). Exactly ``np.median`` of the
    concatenated draws (the middle one or two of the samples repeated by their counts), in
    vectorised passes instead of one concatenation per resample: the stop rule asks for an
    interval every 10% of growth, and each unit of a sweep in units asks as often as a whole sweep
    did, so the per-resample loop cost seconds of idle device per configuration.

    Only a window of the sorted samples around the middle is scanned per resample (the draws below
    it are counted per block, a matrix product); a resample whose middle falls outside the window
    is scanned whole."""
    import numpy as np

    order = np.argsort(values, kind="stable")
    vals, blk = values[order], block[order]
    n, resamples = vals.size, counts.shape[0]
    nblocks = counts.shape[1]
    half = max(64, int(8 * math.sqrt(n)))  # the resampled middle rarely moves further (else: scanned whole)
    lo_i, hi_i = max(0, n // 2 - half), min(n, n // 2 + half)
    below = np.bincount(blk[:lo_i], minlength=nblocks).astype(np.int64)  # samples of each block under the window
    out = np.empty(resamples)
    total = counts @ np.bincount(blk, minlength=nblocks).astype(np.int64)  # samples drawn, per resample
    targets = np.stack([(total - 1) // 2, total // 2], axis=1)  # (r, 2): ranks of the middle one or two
    base = counts @ below  # draws under the window, per resample
    inside = np.flatnonzero(
        (targets[:, 0] >= base)
        & (targets[:, 1] < base + counts @ np.bincount(blk[lo_i:hi_i], minlength=nblocks).astype(np.int64))
    )
    rest = np.setdiff1d(np.arange(resamples), inside, assume_unique=True)
    for rows, start, stop in ((inside, lo_i, hi_i), (rest, 0, n)):
        if not rows.size:
            continue
        width = stop - start
        per = max(1, 4_000_000 // max(1, width))  # bound memory: at most ~4M weights at once
        for j in range(0, rows.size, per):
            sel = rows[j : j + per]
            r = sel.size
            c = counts[sel]
            cw = np.cumsum(c[:, blk[start:stop]], axis=1) + (base[sel][:, None] if start else 0)
            top = int(cw[:, -1].max()) + 1
            offset = np.arange(r, dtype=np.int64) * top  # one sorted row after another
            flat = (cw + offset[:, None]).ravel()
            picks = [
                np.searchsorted(flat, targets[sel, t] + offset, side="right") - np.arange(r) * width + start
                for t in (0, 1)
            ]
            out[sel] = (vals[picks[0]] + vals[picks[1]]) / 2
    return out


def row_counts(draws: np.ndarray, k: int) -> np.ndarray:
    """``draws`` (r, m) of indices below ``k`` as counts (r, k)."""
    import numpy as np

    r = draws.shape[0]
    return np.bincount((draws + np.arange(r)[:, None] * k).ravel(), minlength=r * k).reshape(r, k)


def block_medians(samples: np.ndarray, labels: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of ``resamples`` block-bootstrap resamples (blocks drawn with replacement)."""
    import numpy as np

    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.r_[True, np.diff(sorted_labels) != 0])
    groups = np.split(samples[order], starts[1:])
    k = len(groups)
    if k == 1:
        return np.full(resamples, float(np.median(samples)))
    sizes = np.array([g.size for g in groups])
    if np.all(sizes == sizes[0]):  # equal blocks: one vectorised draw
        mat = np.stack(groups)
        picks = rng.integers(0, k, size=(resamples, k))
        return np.median(mat[picks].reshape(resamples, -1), axis=1)
    block = np.repeat(np.arange(k), sizes)
    return resampled_medians(samples[order], block, row_counts(rng.integers(0, k, size=(resamples, k)), k))


def grouped_block_medians(
    samples: np.ndarray, chunks: np.ndarray | None, groups: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Two-stage bootstrap medians: groups (passes) drawn with replacement, then the blocks of each
    drawn group with replacement (blocks labelled within each group by ``block_labels``). A group
    drawn m times contributes m independent draws of its B blocks: together a multinomial of
    m * B draws over its blocks, which is how the counts are drawn."""
    import numpy as np

    values, block, sizes = [], [], []
    for g in np.unique(groups):
        mask = groups == g
        vals = samples[mask]
        labels = block_labels(None if chunks is None else chunks[mask], int(vals.size))
        _, local = np.unique(labels, return_inverse=True)
        values.append(vals)
        block.append(local.ravel() + sum(sizes))
        sizes.append(int(local.max()) + 1)
    k = len(sizes)
    times = row_counts(rng.integers(0, k, size=(resamples, k)), k)  # (r, k): how often each group was drawn
    counts = np.hstack([rng.multinomial(times[:, gi] * b, np.full(b, 1.0 / b)) for gi, b in enumerate(sizes)])
    return resampled_medians(np.concatenate(values), np.concatenate(block), counts)


__all__ = ["block_labels", "block_medians", "grouped_block_medians", "resampled_medians", "row_counts"]
