#!/usr/bin/env bash
# The GPU evidence of the second wave in two device calls (each well inside 10 minutes), run from
# the repository root on the device tool's nvidia-h200 with $OUT set:
#   bash scripts/h200_all.sh 1   GPU tests (every file with gpu-marked tests), measurement truth, own kernels
#   bash scripts/h200_all.sh 2   Triton candidates, verdicts, Dask on the GPUs there, newcomer checks
#   bash scripts/h200_all.sh 3   run-to-run drift: 10 runs alternating 1 pass / 4 passes (each its own process), 4 KiB-256 MiB
#   bash scripts/h200_all.sh 4   truth 2: chunk position at 2000 iterations, the launch floor, l2-write vs nvbench over
#                                fresh processes; then the GPU tests of the floor and passes
#   bash scripts/h200_all.sh 5   an idle CUDA context elsewhere vs none; 4 passes vs 1; chunk position vs launch parity
#   bash scripts/h200_all.sh 6   run-to-run drift: 10 runs of 4 passes (each its own process), 4 KiB-256 MiB
#   bash scripts/h200_all.sh 7   session 4: GPU tests, then truth 3 (random chunk lead vs none, the fenced in-kernel
#                                end vs the fenceless one, nvbench over fresh processes, a default adaptive sweep)
#   bash scripts/h200_all.sh 9   session 4: the chunk trail: GPU tests, then chunk position with the trail against without
#   bash scripts/h200_all.sh 10  session 4: every GPU test file but Triton's, then a trail of 1 against a trail of 2
#   bash scripts/h200_all.sh 8   session 4: run-to-run drift, 10 runs of 4 passes in one call (t-floored intervals)
# Wheels the machine lacks travel in .whl (cuda-bench; dask/distributed and their few missing deps);
# Triton cubins compiled here travel in .triton_cubins. Each step has its own timeout and log, so one
# failing step never loses the others; everything lands in $OUT/<phase>.tar.gz plus the logs.
set -uo pipefail
: "${OUT:?set OUT}"
PHASE=${1:?phase 1 or 2}
R=/tmp/hx-h200/$PHASE; rm -rf "$R"; mkdir -p "$R"
pip_in() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@" >/dev/null 2>&1; }
ls .whl/cuda_bench-*.whl >/dev/null 2>&1 && pip_in .whl/cuda_bench-*.whl
for p in dask distributed partd locket zict tblib tornado lazy_importer; do ls .whl/${p}-*.whl >/dev/null 2>&1 && pip_in .whl/${p}-*.whl; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HIPEXPLORE_REQUIRE_GPU=1 HIPEXPLORE_CACHE_DIR=/tmp/hx-cache-$PHASE
export HIPEXPLORE_GIT_REVISION=${HX_REV:-unknown}
step() { local name=$1 limit=$2; shift 2; echo "== $name"; timeout "$limit" "$@" > "$R/$name.log" 2>&1; echo "rc=$?" >> "$R/$name.log"; tail -n "${TAIL:-25}" "$R/$name.log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$R/nvidia-smi.txt" 2>&1
if [ "$PHASE" = 1 ]; then
  gpu_files=$(grep -l "mark.gpu" tests/*.py | tr '\n' ' ')
  TAIL=30 step gpu_tests 300 python3 -m pytest -q -p no:cacheprovider -m gpu -rs $gpu_files
  step byok 180 python3 benchmarks/byok_h200.py --out "$R/byok"
  TAIL=60 step truth 300 python3 benchmarks/h200_truth.py --out "$R/truth"
elif [ "$PHASE" = 3 ]; then
  TAIL=60 step drift 540 python3 benchmarks/drift_h200.py --out "$R/drift" --passes 1 4 --runs 10 --no-long
elif [ "$PHASE" = 4 ]; then
  TAIL=60 step truth2 330 python3 benchmarks/truth2_h200.py --out "$R/truth2"
  TAIL=30 step gpu_tests4 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rs tests/test_floor.py tests/test_gpu_cuda.py
elif [ "$PHASE" = 5 ]; then
  TAIL=70 step contexts 260 python3 benchmarks/contexts_h200.py --out "$R/contexts" --runs 3
elif [ "$PHASE" = 6 ]; then
  TAIL=40 step drift4 545 python3 benchmarks/drift_h200.py --out "$R/drift4" --passes 4 --runs 10 --no-long
elif [ "$PHASE" = 7 ]; then
  TAIL=30 step gpu_tests7 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rs tests/test_gpu_cuda.py tests/test_floor.py tests/test_gpu_byok.py tests/test_compilers.py
  TAIL=90 step truth3 370 python3 benchmarks/truth3_h200.py --out "$R/truth3" --reps 3 --alternations 2
elif [ "$PHASE" = 9 ]; then
  TAIL=30 step gpu_tests9 150 python3 -m pytest -q -p no:cacheprovider -m gpu -rs tests/test_gpu_cuda.py tests/test_floor.py
  TAIL=100 step truth3b 300 python3 benchmarks/truth3_h200.py --out "$R/truth3b" --reps 2 --designs random:1,random:0 --skip N S nofence
elif [ "$PHASE" = 10 ]; then
  TAIL=30 step gpu_tests10 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rs tests/test_gpu_cuda.py tests/test_floor.py tests/test_gpu_byok.py tests/test_compilers.py tests/test_verdicts.py
  TAIL=100 step truth3c 300 python3 benchmarks/truth3_h200.py --out "$R/truth3c" --reps 3 --designs random:1,random:2 --skip N S nofence
elif [ "$PHASE" = 8 ]; then
  TAIL=40 step drift8 585 python3 benchmarks/drift_h200.py --out "$R/drift8" --passes 4 --runs 10 --no-long
else
  step gpu_tests2 100 python3 -m pytest -q -p no:cacheprovider -m gpu -rs tests/test_gpu_triton.py tests/test_verdicts.py
  step triton 190 python3 benchmarks/triton_h200.py --cubins .triton_cubins --out "$R/triton"
  TAIL=40 step verdicts 150 python3 benchmarks/verdict_h200.py --quick --out "$R/verdicts"
  step cluster 90 python3 benchmarks/cluster_gpu.py --out "$R/cluster"
  step newcomer 30 python3 -c "from hipexplore.devices import get_device; from hipexplore.report.replay import replay_compiler_for; from hipexplore.provenance import collect; d=get_device('cuda'); print(replay_compiler_for(d.properties.as_dict()), collect(compilers=False)['hostname_hash'])"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$R/nvidia-smi.txt" 2>&1
tar -czf "$OUT/phase$PHASE.tar.gz" -C /tmp/hx-h200 "$PHASE" && echo "packed $(du -h "$OUT/phase$PHASE.tar.gz" | cut -f1)"
cp "$R"/*.log "$OUT/" 2>/dev/null | head -0
