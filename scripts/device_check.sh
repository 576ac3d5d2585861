#!/usr/bin/env bash
# Run on a GPU machine (the device tool's nvidia-h200) from the repository root, with $OUT set:
# the GPU tests (marked gpu; HIPEXPLORE_REQUIRE_GPU=1 so none can skip), the GPU-capable rest of the
# suite, `info`, a small bench sweep and an NVRTC tune-replay, against the tree as it is; optional
# extra commands in $HX_EXTRA run after (write under $HX_RUN to have it packed). Everything lands in $OUT/device_check.tar.gz (plus the
# pytest log and summary as plain files), because only 8 files come back from the machine.
# Uses the machine's own python3 (cuda-bindings, numpy, pandas, pyarrow, pytest).
set -uo pipefail
: "${OUT:?set OUT to a folder for the results}"
R=/tmp/hx-device-check/run; rm -rf "$R"; mkdir -p "$R"; export HX_RUN=$R  # outside $OUT: only the archive and logs come back
export PYTHONPATH=$PWD HIPEXPLORE_CACHE_DIR=/tmp/hipexplore-cache PYTHONUNBUFFERED=1 HIPEXPLORE_REQUIRE_GPU=1
export HIPEXPLORE_GIT_REVISION=${HIPEXPLORE_GIT_REVISION:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$R/nvidia-smi.txt" 2>&1
python3 -m hipexplore info --json > "$R/info.json" 2>&1; echo "info rc=$?"
python3 -m pytest -q -p no:cacheprovider -m gpu -rs tests/gpu/test_gpu_cuda.py tests/gpu/test_gpu_byok.py tests/compile/test_backends.py 2>&1 | tee "$R/pytest_gpu.txt" | tail -25
python3 -m pytest -q -p no:cacheprovider -m "not gpu" tests/devices/test_devices.py tests/kernels/test_catalog.py tests/bench/test_run.py \
  tests/bench/test_sweep.py tests/bench/test_stats.py tests/compile/test_backends.py tests/tuning/test_gemm.py tests/tuning/test_ranking.py \
  tests/compile/test_cache_memory.py tests/compile/test_request.py 2>&1 | tee "$R/pytest.txt" | tail -5
python3 -m hipexplore bench triad --device cuda --size 1MiB,256MiB --rotating 1,auto --flush none,l2-read \
  --iterations 200 --no-progress --out "$R/bench.parquet" --json > "$R/bench.json" 2> "$R/bench.err"; echo "bench rc=$?"
python3 -m hipexplore tune-replay --compiler nvrtc --target sm_90 --jobs 4 --cache memory --json > "$R/tune.json" 2> "$R/tune.err"; echo "tune rc=$?"
python3 - <<'PY'
import json, os
import pandas as pd
r = "/tmp/hx-device-check/run"
try:
    s = pd.read_parquet(f"{r}/bench.summary.parquet")
    print(s[["size_bytes", "rotating_requested", "rotating", "flush", "n", "median_s", "iqr_rel", "bias"]].to_string())
    t = json.load(open(f"{r}/tune.json"))
    print({k: t[k] for k in ("kernels", "unique_kernels", "compiles", "hits", "seconds", "seconds_without_cache", "seconds_ideal")})
except Exception as exc:
    print("summary failed:", exc)
PY
if [ -n "${HX_EXTRA:-}" ]; then echo "extra: $HX_EXTRA"; bash -c "$HX_EXTRA" 2>&1 | tee "$R/extra.txt" | tail -40; fi
cp "$R/pytest_gpu.txt" "$R/pytest.txt" "$OUT/" 2>/dev/null
tar -czf "$OUT/device_check.tar.gz" -C "$(dirname "$R")" run && echo "packed $(du -h "$OUT/device_check.tar.gz" | cut -f1)"
