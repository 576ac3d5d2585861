"""A real cuda-bench (nvbench) run whose JSON ``hipexplore compare`` reads (issue 46's GPU scenario).

Each side is a fresh process running nvbench's cold measurement of the catalog triad cubin at the
given sizes (``nvbench_cold.nvbench_cold``'s registration, launched on nvbench's stream) with
``--jsonbin FILE``: nvbench's JSON plus its per-sample binary files (FILE-bin/N.bin). Then, in
this process: ``hipexplore compare a.json b.json --json`` (per-sample data: the within-process
interval), the same on copies of the JSON files without their binaries (summaries only: the weaker
interval, named), and nvbench's own compare script on the pair. Everything lands under --out.

Usage (GPU machine, cuda-bench installed): PYTHONPATH=/tmp/site:. python3 benchmarks/h200/nvbench_files.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = r"""
import sys
sys.path.insert(0, sys.argv[3])
from hipexplore.devices import get_device
import nvbench_cold
sizes = [int(float(s) * (1 << 20)) for s in sys.argv[2].split(",")]
nvbench_cold.nvbench_cold(get_device("cuda"), sizes, json_flag="--jsonbin", out_dir=sys.argv[1])
"""


def side(folder: Path, sizes: str) -> Path:
    """One side in a fresh process: FOLDER/nvbench.json and FOLDER/nvbench.json-bin/."""
    folder.mkdir(parents=True, exist_ok=True)
    got = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), sizes, str(HERE)], capture_output=True, text=True, timeout=150
    )
    (folder.parent / f"{folder.name}.log").write_text(got.stdout[-20000:] + got.stderr[-20000:])
    if got.returncode != 0:
        raise SystemExit(f"nvbench side {folder.name} failed (rc {got.returncode}): {got.stderr[-1500:]}")
    return folder / "nvbench.json"


def hx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipexplore", *args], capture_output=True, text=True, timeout=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes-mib", default="1,16,256")
    a = ap.parse_args()
    out = Path(a.out)
    files = {"samples": [], "summaries": []}
    for name in ("a", "b"):
        js = side(out / "samples" / name, a.sizes_mib)
        (out / "summaries" / name).mkdir(parents=True, exist_ok=True)
        shutil.copy(js, out / "summaries" / name / "nvbench.json")  # without its -bin folder: summaries only
        files["samples"].append(js)
        files["summaries"].append(out / "summaries" / name / "nvbench.json")
    report = {}
    for kind, (fa, fb) in files.items():
        got = hx("compare", str(fa), str(fb), "--json")
        table = hx("compare", str(fa), str(fb))
        (out / f"compare_{kind}.txt").write_text(table.stdout + table.stderr)
        report[kind] = {
            "rc": got.returncode,
            "stderr": got.stderr[-2000:],
            "result": json.loads(got.stdout) if got.returncode == 0 else None,
        }
        print(f"== hipexplore compare ({kind}), rc {got.returncode}\n{table.stdout}{table.stderr}")
    legacy = shutil.which("nvbench-compare-legacy")
    if legacy:
        got = subprocess.run(
            [legacy, "--no-color", *map(str, files["samples"])], capture_output=True, text=True, timeout=120, cwd=out
        )
        (out / "nvbench_compare.txt").write_text(got.stdout + got.stderr)
    (out / "nvbench_files.json").write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
