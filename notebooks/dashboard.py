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
# # hipexplore review dashboard

# %% tags=["parameters"]
device = "auto"  # "auto" (best available), "host", "cuda", "hip"
kernel = "triad"
sizes = ["1MiB"]  # per array
rotating = [1, 2, 4, "auto"]  # rotating buffer sets; "auto" derives the count from the cache size
flush = ["none", "l2-read"]
iterations = 40
counters = True  # count DRAM bytes per configuration after the timed units (the device's profiler; the host has none)
compiler = "auto"  # compiler for the tuning replay: "auto" (the benchmarked device's: nvrtc, hiprtc or host), "host", "hiprtc", "nvrtc"
target = "auto"  # its target: "auto" (the device's), "host", "gfx90a", "sm_90", ...
problems = 2  # GEMM problems of the tuning list (count or names such as "qkv,mlp_up")
candidates = 6  # candidates per problem
jobs = 1  # compiles at once (recorded data: the pass with this many jobs)
cache = "memory"  # "memory" or "disk"
data = "live"  # "live", or a folder of recorded benchmark parquet files (e.g. "data/h200")
tuning_data = "live"  # "live", or a folder of recorded replay parquet files (e.g. "data/tuning")
command = ""  # the command line recorded in the provenance table (set by `hipexplore report`)

# %%
# %matplotlib inline
from IPython.display import display

from hipexplore import plots, report
from hipexplore.report import answers, headline, review

bench = report.benchmark_data(data, device=device, kernel=kernel, sizes=sizes, rotating=rotating, flush=flush, iterations=iterations,
                              counters=counters)
replay = report.replay_data(tuning_data, compiler=compiler, target=target, problems=problems, candidates=candidates, jobs=jobs, cache=cache,
                            device_properties=bench.device_properties)
config = report.dashboard_configuration(bench, replay)
display(review.device_banner(bench))  # the device the numbers come from ("host CPU — not a GPU measurement" where so)
# the answer first, in plain words (is the timing precise enough, was the host busy, did the cache save,
# the verdict where the data hold two kernels), then the details (hipexplore.report.answers / headline)
answers.first_screen(bench.summary, bench.samples, replay, kernel=config["kernel"], size_bytes=config["size_bytes"],
                     cores=bench.cores)

# %% [markdown]
# ## Noise | compile time saved | cache hits
#
# Three pieces of evidence side by side for one configuration (its device, kernel, size and tuning
# list are named below):
#
# * **Noise**: relative IQR (IQR / median) of the per-launch times for each rotating-buffer count
#   and flush mode, with the 10% and 25% levels at which `torch.utils.benchmark` warns.
# * **Compile time saved**: a split-K tuning list replayed through the compile cache; cumulative
#   compile time with the cache off (measured in the same run) and on, the saving shaded.
# * **Cache hits**: hit rate over the request index and what each request did.
#
# Everything is computed by the library (`hipexplore.report`, `hipexplore.plots`); this notebook
# only wires parameters to calls. Run it with `hipexplore report` (papermill) or by hand.

# %%
headline.Paragraph(config["title"])  # the device timed, and the compiler/target the tuning list was replayed with

# %%
plots.dashboard_figure(bench.summary, replay.events, baseline=replay.baseline,
                       kernel=config["kernel"], size_bytes=config["size_bytes"], title=config["title"],
                       ideal_s=review.ideal_floor(replay))

# %% [markdown]
# ## The numbers behind the panels
#
# Benchmark summary for the configuration shown (one row per rotating count and flush mode;
# `bias_%` is the median against the cold reference, `iqr_rel_%` and `cv_%` the spread, all in percent
# as in the plots; `warning` is what the harness flagged):

# %%
report.styled_summary(report.summary_table(bench.summary, kernel=config["kernel"], size_bytes=config["size_bytes"]))

# %% [markdown]
# ## How many rotating buffers does this kernel need?
# Median time and the counted cold fraction (DRAM bytes read per launch / bytes of the inputs)
# against the rotating count, flush `none`: the fewest sets whose inputs come from memory, what
# `auto` chose and a fixed 5 (the rocMLIR PR 2188 default). Without counters (the host) the time alone.

# %%
from hipexplore.rotating_need import need_paragraphs, plot_rotating_need

why = bench.provenance.get("counters.status", "")
display(*map(headline.Paragraph, need_paragraphs(bench.summary, kernel=config["kernel"], why_uncounted=why)))
plot_rotating_need(bench.summary, kernel=config["kernel"], size_bytes=config["size_bytes"], why_uncounted=why)

# %% [markdown]
# Tuning replay, one row per scenario (`off`: every request compiles; `ideal`: one cold compile per
# unique request, measured in a pass of its own; what its figures say is written below the table):

# %%
display(replay.scenarios)
headline.Paragraph(headline.ideal_sentences(replay))

# %% [markdown]
# ## Provenance

# %%
report.full_width(report.provenance_for(bench, replay, command))
