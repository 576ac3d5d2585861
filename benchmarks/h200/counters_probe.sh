#!/bin/bash
# diagnostic: per-launch cold fraction of triad 1 MiB, rotating 5 and 40, (A) ncu over the timed CLI bench, (B) the
# pipeline's counting unit with 40 timed launches (and their leads and trails: every launch in the range is printed)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=/usr/local/cuda/bin/ncu
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
show() { python3 - "$1" <<'PY'
import csv,io,sys
t=open(sys.argv[1]).read(); L=[l for l in t.splitlines() if l.startswith('"')]
if not L: print("no csv", t[-800:]); sys.exit()
r=list(csv.reader(io.StringIO("\n".join(L)))); h=r[0]; v={}
for x in r[1:]:
  d=dict(zip(h,x)); v.setdefault(int(d["ID"]),{})[d["Metric Name"]]=float(d["Metric Value"].replace(",",""))
print(" ".join(f"{v[i]['dram__bytes_read.sum']/2097152:.2f}" for i in sorted(v)))
PY
}
for R in 5 40; do
  echo "== A: ncu over bench, rotating $R"
  timeout 120 $NCU --cache-control none --clock-control none --target-processes all -k regex:triad --launch-skip 30 --launch-count 30 --metrics $M --csv \
    python3 -m hipexplore bench triad --device cuda --size 1MiB --rotating $R --flush none --iterations 100 --units 1 --no-reference --warmup-s 0 --clock-warmup-s 0 --no-verify --no-progress > $OUT/A$R.log 2>&1
  show $OUT/A$R.log
done
python3 - <<'PY'
# (B) the pipeline's counting unit (hipexplore.bench.counters: the trials' own time_launches, no hold,
# inside the profiler's range) with 40 timed launches, profiler range on and off; before 2026-12-05 this
# was the stand-alone replay child (its recordings: data/counters/h200-probe/BTrue, BFalse)
import os
from pathlib import Path
from hipexplore.bench import SweepSpec
from hipexplore.bench.counters import run_counter_pass
from hipexplore.bench.counters.ncu import NcuBackend
from hipexplore.devices import get_device
from hipexplore.kernels import catalog
out=Path(os.environ["OUT"])
spec=SweepSpec(kernels=(catalog.get("triad"),), sizes=(1<<20,), rotating=("5","40"), flush=("none",))
dev=get_device("cuda")
for pr in (True, False):
    c=run_counter_pass(spec, dev, NcuBackend(profiler_range=pr), list(spec.configurations()), count=40, keep=out/f"B{pr}")
    print("== B profiler_range", pr, [(r.rotating_requested, round(r.cold_fraction,3)) for r in c.records])
PY
for f in $OUT/BTrue/*/group-0/ncu.log $OUT/BFalse/*/group-0/ncu.log; do echo "== $f"; show $f; done
cd $OUT && tar czf probe.tgz A*.log BTrue BFalse && rm -rf BTrue BFalse A*.log
