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
# # Rotating buffers and flush modes
#
# A kernel timed back to back finds its data in the cache the previous launch left behind; a
# "cold" number needs that cache emptied or avoided. Two ways:
#
# * **rotating buffers**: N copies of the kernel's arrays, launch i uses copy i mod N, so the
#   working set outgrows the last-level cache (`auto` derives N from the cache and buffer sizes,
#   capped by free memory — the rocMLIR PR 2188 review);
# * **flushes** between launches: `l2-write` (a memset over the cache, leaves dirty lines the
#   kernel then writes back), `l2-read` (reads a buffer larger than the cache), and on AMD GPUs
#   `icache` / `inline-icache` (`s_icache_inv`).
#
# `cold-reference` is a single launch after an L2 read-flush: the bias of every setting is measured
# against it. The sweep runs on the chosen device (the host CPU by default) or loads recorded data.

# %% tags=["parameters"]
device = "auto"  # "auto", "host", "cuda", "hip"
kernel = "triad"
sizes = ["1MiB", "8MiB"]  # per array (iterations must cover the "auto" count: 2 x LLC / footprint)
rotating = [1, 2, 5, "auto"]  # 5: a fixed default such as rocMLIR PR 2188's, shown against the knee and auto
flush = ["none", "l2-write", "l2-read"]
iterations = 40
counters = True  # count DRAM bytes per configuration after the timed units (the device's profiler; the host has none)
data = "live"  # "live", or a folder of recorded benchmark parquet files (e.g. "data/h200")

# %%
# %matplotlib inline
from hipexplore import plots, report

bench = report.benchmark_data(data, device=device, kernel=kernel, sizes=sizes, rotating=rotating, flush=flush, iterations=iterations,
                              counters=counters)
config = report.bench_configuration(bench)
report.styled_summary(report.summary_table(bench.summary, kernel=config["kernel"], size_bytes=config["size_bytes"]))

# %% [markdown]
# ## How many rotating buffers does this kernel need?
# Timing and the counted cold fraction (DRAM bytes read per launch / bytes of the inputs) against
# the rotating count, flush `none`: the fewest sets whose inputs come from memory (the knee), what
# `auto` chose and a fixed 5 sets. Cold is >= 0.9, warm <= 0.1; a configuration asked to be cold
# (a flush or `auto`) that counted otherwise is flagged in the table's warning column.

# %%
from IPython.display import display

from hipexplore.report.headline import Paragraph
from hipexplore.rotating_need import need_paragraphs, plot_rotating_need

why = bench.provenance.get("counters.status", "")
display(*map(Paragraph, need_paragraphs(bench.summary, kernel=config["kernel"], why_uncounted=why)))
plot_rotating_need(bench.summary, kernel=config["kernel"], size_bytes=config["size_bytes"], why_uncounted=why)

# %% [markdown]
# ## Noise
# Per-sample times of the smallest size (where cache state matters most), then the relative IQR
# of every setting with the 10% and 25% warning levels.

# %%
plots.plot_noise_violins(bench.samples, kernel=config["kernel"], size_bytes=config["size_bytes"])

# %%
plots.plot_noise_ecdf(bench.samples, kernel=config["kernel"], size_bytes=config["size_bytes"])

# %%
plots.plot_iqr_vs_rotating(bench.summary, kernel=config["kernel"], size_bytes=config["size_bytes"])

# %% [markdown]
# ## Bias against the cold reference

# %%
plots.plot_bias(bench.summary, kernel=config["kernel"], size_bytes=config["size_bytes"])

# %% [markdown]
# ## Bandwidth against size
# With the device's peak when it is known (memory clock and bus width, else a datasheet table).

# %%
plots.plot_bandwidth(bench.summary, kernel=config["kernel"])

# %% [markdown]
# ## Explore interactively
# The sweep panel runs the same sweep from widgets; its results stay in `panel.samples` and
# `panel.summary` afterwards. (Executed by papermill it is only displayed, not run.)

# %%
from hipexplore.widgets import SweepPanel

panel = SweepPanel(device=device, kernel=kernel, sizes=", ".join(map(str, sizes)), rotating=", ".join(map(str, rotating)),
                   flush=flush, iterations=iterations)
panel
