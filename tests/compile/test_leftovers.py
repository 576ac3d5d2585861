"""What killed processes leave in the temp dir (compile/leftovers.py), here the folders named by a pid
that #45 added: a replay's folder for the compilers' own caches and NVRTC's automatic PCH folders
(NVRTC leaves them behind at exit): removed once their process is dead, never a live one's."""

from __future__ import annotations

import os
import subprocess
import sys

from hipexplore.compile.leftovers import clean_leftovers


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    return int(proc.stdout)


def test_pid_named_folders_of_dead_processes_go_and_live_ones_stay(tmp_path):
    dead, live = _dead_pid(), os.getppid()
    made = [
        tmp_path / f"__nvrtc_auto_pch_{dead}_0",
        tmp_path / f"hipexplore-own-caches-{dead}-abc",
        tmp_path / f"__nvrtc_auto_pch_{live}_0",
        tmp_path / f"hipexplore-own-caches-{live}-abc",
        tmp_path / "__nvrtc_auto_pch_notapid_0",
    ]
    for folder in made:
        folder.mkdir()
        (folder / "gemm_0.pch").write_bytes(b"pch")
    assert clean_leftovers(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in made[2:])
