"""Two small real host sweeps of the catalog triad (3 units each), shared by the interop tests."""

from __future__ import annotations

from pathlib import Path


def two_runs(folder: Path) -> tuple[Path, Path]:
    """base.parquet and new.parquet: the same configurations measured twice (separate runs)."""
    import hipexplore as hx

    paths = []
    for name in ("base", "new"):
        out = folder / f"{name}.parquet"
        hx.sweep(
            ["triad"],
            ["64KiB"],
            [1],
            ["none", "l2-read"],
            device="host",
            iterations=24,
            units=3,
            progress=False,
            out=str(out),
        )
        paths.append(out)
    return paths[0], paths[1]
