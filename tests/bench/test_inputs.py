"""``hipexplore.bench.inputs``: a sweep's seeded inputs drawn once and shared with its units'
worker processes (mapped read-only from the sweep's private folder, a torn file drawn again), and
the folders of killed sweeps removed by the next one."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench import sweep
from hipexplore.kernels import catalog

pytestmark = pytest.mark.timeout(300)


def test_unit_workers_draw_each_input_layout_once_between_them(tmp_path) -> None:
    """Units in worker processes (as on a GPU): the first draws the seeded inputs of each size and
    the later ones map them from the sweep's private folder (bench.inputs), which is gone after the
    sweep; the outputs still check against the reference in unit 0."""
    import glob
    import os
    import tempfile

    # this process's folders only: the suite runs in parallel, and another worker's sweep has its own
    mine = f"hipexplore-inputs-{os.getpid()}-*"
    before = set(glob.glob(os.path.join("/dev/shm", mine)) + glob.glob(os.path.join(tempfile.gettempdir(), mine)))
    res = sweep(
        "triad",
        ["64KiB", "256KiB"],
        [1],
        ["none"],
        device="host",
        worker=True,
        units=3,
        iterations=12,
        progress=False,
        reference=False,
    )
    assert res.metadata["sweep.unit_location"] == "worker"
    assert res.metadata["inputs.unit.0"] == "drawn 2, mapped 0"
    assert res.metadata["inputs.unit.1"] == res.metadata["inputs.unit.2"] == "drawn 0, mapped 2"
    assert set(res.summary["passes"]) == {3} and "verify.triad.65536" in res.metadata
    after = set(glob.glob(os.path.join("/dev/shm", mine)) + glob.glob(os.path.join(tempfile.gettempdir(), mine)))
    assert after <= before  # the folder went with the sweep


def test_shared_inputs_are_the_drawn_ones_and_a_torn_file_is_drawn_again(tmp_path) -> None:
    from hipexplore.bench import inputs

    spec = catalog.get("triad")
    n = spec.elements(1 << 16)
    inputs.share_in(str(tmp_path))
    try:
        inputs.HOST_INPUTS.clear()
        drawn = inputs.host_inputs(spec, n, spec.scalars(n), 3)
        files = sorted(tmp_path.iterdir())
        assert len(files) == len(spec.buffers())
        inputs.HOST_INPUTS.clear()
        mapped = inputs.host_inputs(spec, n, spec.scalars(n), 3, copy=False)
        for k in drawn:
            np.testing.assert_array_equal(mapped[k], drawn[k])
            assert not mapped[k].flags.writeable
        files[0].write_bytes(files[0].read_bytes()[:100])  # torn: not mapped, drawn again
        inputs.HOST_INPUTS.clear()
        again = inputs.host_inputs(spec, n, spec.scalars(n), 3)
        for k in drawn:
            np.testing.assert_array_equal(again[k], drawn[k])
    finally:
        inputs.share_in(None)
        inputs.HOST_INPUTS.clear()


def test_a_killed_sweeps_input_folder_is_removed_by_the_next_sweep(tmp_path) -> None:
    """A SIGKILLed sweep cannot remove its shared input folder (under /dev/shm: memory); the next
    sweep removes the folders of dead creators and keeps a live one's."""
    import os
    import subprocess
    import sys

    from hipexplore.bench import inputs

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = tmp_path / f"{inputs.PREFIX}{dead.pid}-abc"
    gone.mkdir()
    (gone / "x.npy").write_bytes(b"0" * 100)
    alive = tmp_path / f"{inputs.PREFIX}{os.getppid()}-def"  # a running process that made it (pytest's parent)
    alive.mkdir()
    os.utime(alive, (1e10, 1e10))  # made "after" that process started
    assert inputs.clean_leftovers(str(tmp_path)) == 1
    assert not gone.exists() and alive.exists()
