# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (hipexplore)
#     language: python
#     name: hipexplore
# ---

# %% [markdown]
# # The compile cache, with a tuning-list replay
#
# A split-K tuner compiles, for every candidate tile configuration, the GEMM kernel **plus** a
# zero fill, a pointwise tail and (split > 1) a reduction. Only the GEMM depends on the
# candidate, so the tails repeat across candidates; that repetition is what a compile cache can
# save (the motivation of MIGraphX PR 5270).
#
# hipexplore's cache (`hipexplore.compile.CompileCache`):
#
# * key = canonical JSON of the request (sources, headers, kernels, options, target, mode) plus the
#   compiler's identity; its SHA-256 is only an index, the full record is compared on every hit;
# * diagnostics (`dump-source`, `dump-asm`, `trace`) bypass the cache, so a hit never skips a dump;
# * every lookup is an event: `compiled`, `memory-hit`, `disk-hit`, `joined` (waited on an identical
#   compile in flight), `failed`, `bypassed`; "seconds saved" is a sum of recorded compile times.
#
# This notebook replays a tuning list once per scenario (`ideal`: one cold compile per unique
# request, measured in a pass of its own, so its own noise can put it above a cached pass; `off`:
# every request compiles; then the chosen cache mode) and plots the events.

# %% tags=["parameters"]
compiler = "host"  # "host", "hiprtc" (ROCm), "nvrtc" (CUDA)
target = "host"  # "host", "gfx90a", "sm_90", ...
problems = 2  # GEMM problems of one transformer layer (a count, or names such as "qkv,mlp_up")
candidates = 6  # candidates per problem (tiles x split-K)
jobs = 1  # compiles at once (recorded data: the pass with this many jobs)
cache = "memory"  # "memory" or "disk"
passes = 1  # > 1: every scenario that many times in alternated rounds, with the baselines cold and compiler-cache
data = "live"  # "live", or a folder of recorded replay parquet files (e.g. "data/tuning")

# %%
# %matplotlib inline
from IPython.display import display

from hipexplore import plots, report
from hipexplore.report import headline

replay = report.replay_data(data, compiler=compiler, target=target, problems=problems, candidates=candidates, jobs=jobs, cache=cache,
                            passes=passes)
display(replay.scenarios)
# what the cache saved, and what the 'ideal' row is and is not (the floor is computed from every pass)
headline.Paragraph(headline.cache_sentences(replay) + headline.ideal_sentences(replay))

# %% [markdown]
# ## Against the compilers' own caches
# NVRTC 13 caches on its own (in the CUDA driver's compute cache, wherever a driver loads), so the
# saving that answers a reviewer is the one *beyond* it: the cache's pass against `compiler-cache`
# (hipexplore's cache off, the compiler's own on and warm) and against `cold` (every compiler cache
# off), each with its 95% interval over the passes (`passes` > 1, or a recorded replay in rounds:
# `hipexplore tune-replay --passes 3 --frame F.parquet`).

# %%
import pandas as pd

pd.DataFrame([{"comparison": k, **{f: v for f, v in c.items() if f != "interval_over"}}
              for k, c in (replay.savings or {}).items() if c]) if replay.savings else "no passes to compare"

# %% [markdown]
# ## Where the repetition is
# Outcomes by kernel role in the cached pass: GEMMs differ per candidate and compile; fills,
# pointwise tails and reductions repeat and hit.

# %%
replay.by_role

# %% [markdown]
# ## Compile time saved
# Cumulative compile time over the request index. "Cache off" is the measured `off` pass of the
# same run when there is one (else the sum of recorded compile times).

# %%
plots.plot_compile_time_saved(replay.events, baseline=replay.baseline)

# %% [markdown]
# ## Cache hits

# %%
plots.plot_cache_hits(replay.events)

# %%
plots.plot_outcome_counts(replay.events)

# %% [markdown]
# ## Scenarios side by side
# Wall time of each pass as measured (for recorded data, from the replay's `.passes.parquet` when it
# is there; otherwise the sum of lookup times, and the axis says so).

# %%
plots.plot_replay_scenarios(replay.scenarios)

# %% [markdown]
# ## One lookup by hand
# The same request twice through a fresh cache: a compile, then a memory hit carrying the
# original compile time; with a diagnostic switch set it bypasses the cache. (Live runs only: it
# compiles with the chosen compiler on this machine.)

# %%
demo = report.cache_demo(compiler=compiler, target=target) if data == "live" else None
demo

# %% [markdown]
# ## Offline AMD evidence: two Triton candidates for gfx942 (MI300)
# No MI300 here, but Triton's PyPI wheel compiles real gfx942 code objects on this CPU
# (`hipexplore[triton]`). From two GEMM candidates of the Triton list: registers, LDS (Triton's
# dynamic shared memory), spills and the occupancy they allow (waves per SIMD and what limits it),
# the instruction mix of Triton's AMDGCN listing, and the start of the diff between the listings.
# Skipped (with the reason) where triton is not installed.

# %%
from hipexplore.compile.registry import get_compiler
from hipexplore.tuning import amd_evidence

if get_compiler("triton").available():
    evidence = amd_evidence.compare_candidates(target="gfx942")
    print("\n".join(evidence["diff"].splitlines()[:40]))
    display(evidence["resources"], evidence["mix"])
else:
    print("triton unavailable:", get_compiler("triton").unavailable_reason())
