#!/usr/bin/env bash
# The H200 suite: named scenarios, each measuring one thing, run from the repository root on the
# device tool's nvidia-h200 with $OUT set. One or more scenario names per call (each call must stay
# inside the tool's 10 minutes: the limits below say how long each may take):
#
#   gpu-tests     every test file with gpu-marked tests (HIPEXPLORE_REQUIRE_GPU=1: a skip is a failure)  300 s
#   timing        benchmarks/h200/timing_truth.py: chunk position for the default chunk design, the fenced
#                 in-kernel end, the launch floor against the in-kernel timer, l2-write against nvbench's
#                 cold measurement over fresh processes, a default adaptive sweep                       370 s
#   drift         benchmarks/h200/run_to_run.py: 10 runs of 4 passes (each its own process), 4 KiB-256 MiB:
#                 the spread of run medians against the intervals                                        585 s
#   own-kernels   benchmarks/h200/own_kernels.py: transpose, softmax, -I stencil (edited), cubin, torch op,
#                 a faulting kernel; in-process vs worker medians                                        180 s
#   verdicts      benchmarks/h200/verdicts_ab.py --quick: a +5% variant and an identical twin interleaved,
#                 two back-to-back runs                                                                  150 s
#   triton        benchmarks/h200/triton_pick.py: the Triton split-K candidates under rotating buffers
#                 and flushes (cubins compiled off the GPU travel in .triton_cubins)                     190 s
#   counters      benchmarks/h200/counters.py: `hipexplore bench ... --counters --json` (the counter pass, ncu) for
#                 the triad table of issue 35 and a --source stencil and reduction, each beside the same
#                 command without --counters (the pass's cost; `hipexplore compare` plain vs counted must
#                 never say faster/slower); then the counter GPU tests                                  470 s
#                 (copy out/runs/*-counted.counters/ from counters.tar.gz to data/counters/h200-cli/)
#   cluster       benchmarks/h200/many_gpus.py: one GPU against N Dask workers, then the replay over them 90 s
#   verdict-truth benchmarks/verdict_truth.py: #23's done-when at defaults -- the default's wall time against
#                 887bcf3 (carry .old = `git archive 887bcf3 hipexplore`), then as many interleaved runs of
#                 A, byte-identical B and C, +5% S5 and +3% S3 as fit; HX_BASELINE=.old times the old
#                 default first, HX_START=K numbers a later call's runs on (then --analyze DIR... here)  590 s
#   resolution    benchmarks/verdict_truth.py at 1 MiB l2-write with --resolution 1% (#37: a +2.5% change named
#                 slower in >= 9 of 10 runs), HX_RUNS runs (default 10)                                  HX_LIMIT or 300 s
#   small-change  benchmarks/verdict_truth.py at 16 and 256 MiB with a +1% (S1) and a +2% (S2) kernel beside the
#                 identical copies (#37: +1% named slower in >= 9 of 10 runs), HX_RUNS runs (default 10)  HX_LIMIT or 480 s
#   cupti         benchmarks/h200/cupti_probe.py (CUPTI's range profiler through ctypes on torch's launches: passes,
#                 warm/cold/flushed DRAM bytes, user vs auto ranges, the cost per range), then counters.py with
#                 --counters cupti in the range mode the probe found working                            HX_LIMIT+150 (550) s
#   hostile       benchmarks/h200/hostile.py (#51): the hostile-kernel suite (7 families, each with its honest twin)
#                 and the honest set (43 kernels + 8 GEMM pipelines + 4 Triton candidates + a launcher) through the
#                 trust checks, the families twice; what the persisting-L2 reset costs               240 s
#   figures51     benchmarks/h200/figures51.py (#51 item 4, on hx_cmadd, a kernel new for it): the cold fraction
#                 at 4 MiB x 2-5 sets from CUPTI and from ncu, nvbench parity at 1-256 MiB (carry .whl with
#                 cuda-bench), then as many interleaved verdict runs (A,B,C identical, +1%, +2.5%; 1/16/256 MiB,
#                 l2-write, --resolution 1%) as fit: coverage, +1% and +2.5% named slower             540 s
#                 HX_F51_STEPS (e.g. verdicts) and HX_F51_FIRST (the first run's number and seed) let a later call
#                 add runs; figures51.py --analyze DIR1 DIR2 --out DIR gives the figures over both calls' runs
#                 Either with HX_DRY=1 (and PY=.venv/bin/python) runs its host dry run, here, without a GPU
#   wall          benchmarks/verdict_truth.py --runs 0: the default triad's wall time against an older tree's
#                 (HX_BASELINE, default .old = `git archive REV hipexplore`), alternating, HX_REPS times   HX_LIMIT or 200 s
#   cuda-bench    benchmarks/h200/nvbench_files.py: two real cuda-bench (nvbench) runs of the triad cubin, each in a
#                 fresh process with --jsonbin (1/16/256 MiB), read by `hipexplore compare` with their per-sample
#                 data and as summaries only, and by nvbench-compare-legacy (needs .whl/cuda_bench-*.whl)    120 s
#   calibrate     `hipexplore calibrate --device cuda` at its defaults (1/16/256 MiB, 250 s of rounds): the A/A
#                 false-verdict rate, coverage and minimum detectable change; copy calibrate/calibrate.json to
#                 data/calibration/h200/ (or h100/) and run python scripts/gen_docs.py                     330 s
#   tuning-scale  benchmarks/tuning_scale.py: llama3-8b with NVRTC sm_90, serial (ideal twice), 16 jobs, the
#                 second run (warm disk / Redis; carry .redis), 2 Dask workers over Redis (#28)          590 s
#                 HX_STEPS, HX_LISTS, HX_COMPILERS, HX_JOBS, HX_EXTRA (more flags) and HX_LIMIT (seconds)
#                 change what it runs; HX_TAG names its folder and archive (tuning-scale-TAG), so one call
#                 can run it more than once
#   compiler-caches benchmarks/compile/compiler_caches.py (#45): the stale-key cases against NVRTC's own cache
#                 (live here) and hipexplore's; tune-replay --passes 3 (ideal, cold, off, compiler-cache, memory
#                 in alternated rounds, each pass in fresh processes) for llama3-8b and resnet50 with NVRTC
#                 at 16 and 1 job, and Triton at 16 jobs, each list scaled to fit its share of HX_BUDGET  HX_BUDGET+40 (370) s
#   early-checks  benchmarks/cli/early_checks.py: how soon each bad input of issues 47/49 is refused (fresh
#                 processes, median of 5, beside `hipexplore --help`) on an idle host; no GPU used        120 s
#
# e.g.  bash scripts/h200_all.sh gpu-tests timing        (one call)
#       bash scripts/h200_all.sh drift                   (a call of its own)
# Each scenario writes under $OUT/<scenario>/ (packed as $OUT/<scenario>.tar.gz, logs beside it); copy
# it to data/<device>/<question>/ with a MANIFEST.md (data/README.md) and run `python scripts/gen_docs.py`
# when it changes a current figure.
# Wheels the machine lacks travel in .whl (cuda-bench; dask/distributed and their few missing deps).
#   .whl:   pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .whl "dask[distributed]" redis
#   .redis: Debian 12's redis-server with its libraries and loader (the device's glibc may differ):
#           mkdir -p .redis/lib; for l in $(ldd /usr/bin/redis-server | awk '/=>/{print $3} /ld-linux/{print $1}'); do cp -L $l .redis/lib/; done
#           cp -L /usr/bin/redis-server .redis/lib/redis-server.bin, and .redis/redis-server a two-line sh wrapper:
#           exec "$d/ld-linux-x86-64.so.2" --library-path "$d" "$d/redis-server.bin" "$@"   (d: the lib folder beside it)
# Each step has its own timeout and log, so one failing step never loses the others.
# (Until this wave the phases were numbered 1-10; BENCHMARKS.md's log names them as they were.)
set -uo pipefail
: "${OUT:?set OUT}"
[ $# -gt 0 ] || { sed -n '2,62p' "$0"; exit 2; }
pip_in() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@" >/dev/null 2>&1; }
ls .whl/cuda_bench-*.whl >/dev/null 2>&1 && pip_in .whl/cuda_bench-*.whl
for p in dask distributed partd locket zict tblib tornado lazy_importer redis colorama jsondiff tabulate; do ls .whl/${p}-*.whl >/dev/null 2>&1 && pip_in .whl/${p}-*.whl; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HIPEXPLORE_REQUIRE_GPU=1
export HIPEXPLORE_GIT_REVISION=${HX_REV:-unknown}
B=benchmarks/h200
HXDEV=cuda; [ -n "${HX_DRY:-}" ] && HXDEV=host  # hostile, figures51: the host dry run
step() { local name=$1 limit=$2; shift 2; echo "== $name"; timeout "$limit" "$@" > "$R/$name.log" 2>&1; echo "rc=$?" >> "$R/$name.log"; tail -n "${TAIL:-25}" "$R/$name.log"; }
for scenario in "$@"; do
  name=$scenario${HX_TAG:+-$HX_TAG}; R=/tmp/hx-h200/$name; rm -rf "$R"; mkdir -p "$R"
  export HIPEXPLORE_CACHE_DIR=/tmp/hx-cache-$scenario
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$R/nvidia-smi.txt" 2>&1
  case "$scenario" in
    gpu-tests)
      gpu_files=$(grep -rl --include="*.py" "mark.gpu" tests | tr '\n' ' ')
      TAIL=30 step gpu_tests 300 python3 -m pytest -q -p no:cacheprovider -m gpu -rs $gpu_files ;;
    timing)      TAIL=90 step timing 370 python3 $B/timing_truth.py --out "$R/timing" --reps 3 --alternations 2 ;;
    drift)       TAIL=40 step drift 585 python3 $B/run_to_run.py --out "$R/drift" --passes 4 --runs 10 --no-long ;;
    own-kernels) step own_kernels 180 python3 $B/own_kernels.py --out "$R/own_kernels" ;;
    verdicts)    TAIL=40 step verdicts 150 python3 $B/verdicts_ab.py --quick --out "$R/verdicts" ;;
    triton)      step triton 190 python3 $B/triton_pick.py --cubins .triton_cubins --out "$R/triton" ;;
    cluster)     step cluster 90 python3 $B/many_gpus.py --out "$R/cluster" ;;
    early-checks) TAIL=15 step early_checks 120 python3 benchmarks/cli/early_checks.py --rounds 5 --out "$R/early_checks.json" ;;
    hostile)     TAIL=40 step hostile "$(( ${HX_HOSTILE_BUDGET:-210} + 30 ))" "${PY:-python3}" $B/hostile.py --out "$R/hostile" --budget-s "${HX_HOSTILE_BUDGET:-210}" \
                   --device "$HXDEV" ;;
    figures51)   TAIL=40 step figures51 "$(( ${HX_F51_BUDGET:-495} + 45 ))" "${PY:-python3}" $B/figures51.py --out "$R/figures51" --budget-s "${HX_F51_BUDGET:-495}" \
                   --device "$HXDEV" ${HX_F51_STEPS:+--steps "$HX_F51_STEPS"} ${HX_F51_FIRST:+--first-run "$HX_F51_FIRST"} ;;
    counters)    TAIL=60 step counters 470 python3 $B/counters.py --out "$R/out" --budget-s 420 ;;
    verdict-truth)
      TAIL=60 step verdict_truth 590 python3 benchmarks/verdict_truth.py --device cuda --runs 17 --budget-s 480 \
        ${HX_BASELINE:+--baseline "$HX_BASELINE" --baseline-reps 2} ${HX_START:+--start "$HX_START"} --out "$R/vt" ;;
    resolution)
      TAIL=40 step resolution "${HX_LIMIT:-300}" python3 benchmarks/verdict_truth.py --device cuda --runs "${HX_RUNS:-10}" \
        --sizes 1MiB --flush l2-write --bench-extra "--resolution 1%" --budget-s "$(( ${HX_LIMIT:-300} - 60 ))" --out "$R/vt" ;;
    small-change)
      TAIL=40 step small_change "${HX_LIMIT:-480}" python3 benchmarks/verdict_truth.py --device cuda --runs "${HX_RUNS:-10}" \
        --sizes 16MiB,256MiB --variants S1=1,S2=2 --budget-s "$(( ${HX_LIMIT:-480} - 70 ))" --out "$R/vt" ;;
    cupti)
      TAIL=40 step cupti_probe 150 python3 $B/cupti_probe.py --out "$R/probe"
      mode=$(python3 - "$R/probe/cupti_probe.json" <<'PY' 2>/dev/null || echo user
import json, sys
d = json.load(open(sys.argv[1]))
def ok(k):
    v = d.get(k)
    return isinstance(v, dict) and "error" not in v and all("error" not in x for x in v.values() if isinstance(x, dict))
print("user" if ok("user-4") or ok("user-2") else "auto" if ok("auto-4") or ok("auto-2") else "user")
PY
)
      export HIPEXPLORE_CUPTI_RANGES=$mode; echo "CUPTI ranges: $mode" | tee "$R/mode.txt"
      TAIL=60 step counters "${HX_LIMIT:-400}" python3 $B/counters.py --out "$R/out" --budget-s "$(( ${HX_LIMIT:-400} - 40 ))" \
        --backend cupti ;;
    cuda-bench)  TAIL=60 step cuda_bench 120 python3 $B/nvbench_files.py --out "$R/nvbench" ;;
    calibrate)
      mkdir -p "$R/calibrate"
      HIPEXPLORE_CALIBRATION_DIR="$R/calibrate/store" TAIL=30 step calibrate "$(( ${HX_CAL_BUDGET:-250} + 80 ))" python3 -m hipexplore calibrate --device cuda --budget "${HX_CAL_BUDGET:-250}" \
        --out "$R/calibrate/calibrate.json" ;;
    wall)
      TAIL=20 step wall "${HX_LIMIT:-200}" python3 benchmarks/verdict_truth.py --device cuda --runs 0 \
        --baseline "${HX_BASELINE:-.old}" --baseline-reps "${HX_REPS:-3}" --out "$R/vt" ;;
    tuning-scale)
      [ -x .redis/redis-server ] && export PATH=$PWD/.redis:$PATH
      TAIL=60 step tuning_scale "${HX_LIMIT:-590}" python3 benchmarks/tuning_scale.py --out "$R/ts" --lists "${HX_LISTS:-llama3-8b}" \
        --compilers "${HX_COMPILERS:-nvrtc:sm_90}" --steps "${HX_STEPS:-serial,parallel,second-run,cluster}" \
        --jobs "${HX_JOBS:-16}" --ideal-repeats 2 --bundle ${HX_EXTRA:-} ;;
    compiler-caches)
      TAIL=40 step compiler_caches "$(( ${HX_BUDGET:-330} + 40 ))" python3 benchmarks/compile/compiler_caches.py --out "$R/cc" \
        --budget-s "${HX_BUDGET:-330}" --passes "${HX_PASSES:-3}" ${HX_CC_STEPS:+--steps "$HX_CC_STEPS"} ;;
    *) echo "unknown scenario '$scenario' (expected gpu-tests, timing, drift, own-kernels, verdicts, triton, cluster, counters, hostile, figures51, verdict-truth, resolution, small-change, cupti, cuda-bench, calibrate, wall, tuning-scale, compiler-caches, early-checks)" >&2; exit 2 ;;
  esac
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$R/nvidia-smi.txt" 2>&1
  tar -czf "$OUT/$name.tar.gz" -C /tmp/hx-h200 "$name" && echo "packed $(du -h "$OUT/$name.tar.gz" | cut -f1)"
  cp "$R"/*.log "$OUT/" 2>/dev/null | head -0
done
