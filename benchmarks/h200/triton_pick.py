"""The Triton split-K candidates on the H200 (sm_90): rotating buffers x flushes, does the pick change?

Two ways to get the cubins, and the output says which it used (DIR/meta.json "cubins"):
  * carried: compiled on a machine with triton >= 3.9 (no GPU needed) and carried in an ignored folder:
        PYTHONPATH=. .venv/bin/python benchmarks/h200/triton_pick.py --export .triton_cubins
    then on the H200 (the run's carry: [".triton_cubins"]):
        PYTHONPATH=. python3 benchmarks/h200/triton_pick.py --cubins .triton_cubins --out DIR
  * compiled there: without --cubins (or for any kernel missing from it) the same backend compiles
    with the H200's own triton (3.6) in worker processes, through the compile cache.
Writes DIR/candidates.parquet (one row per problem x candidate x rotating x flush), DIR/choice.csv
(the pick under each setting against the hot-cache pick) and DIR/meta.json; prints both tables.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd  # noqa: E402

from hipexplore.errors import ConfigError  # noqa: E402
from hipexplore.provenance import collect  # noqa: E402
from hipexplore.tuning.lists import select_problems  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="results directory (device mode)")
    ap.add_argument("--export", metavar="DIR", help="compile every sm_90 kernel of the list here into DIR and stop")
    ap.add_argument("--cubins", metavar="DIR", help="carried cubins (from --export); missing ones are compiled here")
    ap.add_argument("--problems", default=None, help="count or names (default all four)")
    ap.add_argument("--limit", type=int, default=None, help="candidates per problem (default all 12)")
    ap.add_argument("--rotating", default="1,auto")
    ap.add_argument("--flush", default="none,l2-read,l2-write")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    from hipexplore.tuning.triton_list import default_candidates

    problems = select_problems(args.problems)
    cands = default_candidates()[: args.limit] if args.limit else default_candidates()
    if args.export:
        from hipexplore.tuning.triton_workload import export_cubins

        t0 = time.time()
        n = export_cubins(args.export, "sm_90", problems, cands)
        print(f"wrote {n} cubins (+ metadata) to {args.export} in {time.time() - t0:.1f} s")
        return 0
    if not args.out:
        raise ConfigError("--out DIR is required (or --export DIR)")
    if args.cubins and not Path(args.cubins).is_dir():
        raise ConfigError(f"--cubins {args.cubins!r} is not a directory (make it with --export)")
    from hipexplore.devices import get_device
    from hipexplore.tuning.ranking import choice_table
    from hipexplore.tuning.triton_workload import benchmark_triton_candidates

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = get_device(args.device)
    t0 = time.time()
    res, source = benchmark_triton_candidates(
        dev,
        problems,
        cands,
        rotating=tuple(args.rotating.split(",")),
        flush=tuple(args.flush.split(",")),
        iterations=args.iterations,
        carried=args.cubins,
    )
    try:
        import triton

        local_triton = triton.__version__
    except Exception as exc:  # noqa: BLE001 - reported, not needed when every cubin was carried
        local_triton = f"not importable ({exc})"
    used = "carried" if not source["compiled"] else "compiled here" if not source["carried"] else "mixed"
    prov = collect(device=dev, command=" ".join(shlex.quote(a) for a in sys.argv))
    prov.update(
        {
            "cubins": used,
            "cubins_carried": source["carried"],
            "cubins_compiled_here": source["compiled"],
            "local_triton": local_triton,
            "seconds": f"{time.time() - t0:.1f}",
        }
    )
    res.attrs["provenance"] = prov
    res.to_parquet(out / "candidates.parquet", index=False)
    choice = choice_table(res)
    choice.to_csv(out / "choice.csv", index=False)
    (out / "meta.json").write_text(json.dumps(prov, indent=2, sort_keys=True, default=str) + "\n")
    pd.set_option("display.width", 250)
    print(f"cubins: {used} ({source['carried']} carried, {source['compiled']} compiled with triton {local_triton})")
    cols = [
        "problem",
        "rotating_requested",
        "rotating",
        "flush",
        "best",
        "best_median_s",
        "hot_pick",
        "hot_pick_median_s",
        "same_choice",
        "regret",
        "runner_up_gap",
        "distinguishable",
    ]
    print(choice[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ConfigError as exc:
        print(f"triton_h200.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
