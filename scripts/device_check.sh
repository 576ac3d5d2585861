#!/usr/bin/env bash
# Run on a GPU machine (the device tool's nvidia-h200) from the repository root, with $OUT set:
# the GPU-capable tests, `info`, a small bench sweep and an NVRTC tune-replay, against the tree as
# it is. Uses the machine's own python3 (cuda-bindings, numpy, pandas, pyarrow, pytest).
set -uo pipefail
: "${OUT:?set OUT to a folder for the results}"
export PYTHONPATH=$PWD HIPEXPLORE_CACHE_DIR=/tmp/hipexplore-cache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
python3 -m hipexplore info --json > "$OUT/info.json" 2>&1; echo "info rc=$?"
python3 -m pytest -q -p no:cacheprovider tests/test_devices.py tests/test_kernels.py tests/test_bench.py \
  tests/test_sweep.py tests/test_stats.py tests/test_compilers.py tests/test_gemm.py tests/test_tuning_device.py \
  tests/test_cache_memory.py tests/test_request.py 2>&1 | tee "$OUT/pytest.txt" | tail -15
python3 -m hipexplore bench triad --device cuda --size 1MiB,256MiB --rotating 1,auto --flush none,l2-read \
  --iterations 200 --no-progress --out "$OUT/bench.parquet" --json > "$OUT/bench.json" 2> "$OUT/bench.err"; echo "bench rc=$?"
python3 -m hipexplore tune-replay --compiler nvrtc --target sm_90 --jobs 4 --cache memory --json > "$OUT/tune.json" 2> "$OUT/tune.err"; echo "tune rc=$?"
python3 - <<'PY'
import json, os
import pandas as pd
out = os.environ["OUT"]
s = pd.read_parquet(f"{out}/bench.summary.parquet")
print(s[["size_bytes", "rotating_requested", "rotating", "flush", "n", "median_s", "iqr_rel", "bias"]].to_string())
t = json.load(open(f"{out}/tune.json"))
print({k: t[k] for k in ("kernels", "unique_kernels", "compiles", "hits", "seconds", "seconds_without_cache", "seconds_ideal")})
PY
