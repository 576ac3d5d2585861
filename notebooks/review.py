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
# # hipexplore A/B review
#
# Is the candidate faster than the baseline, and how sure are we? One row per configuration: the
# ratio of the medians (candidate / baseline) with its 95% interval (a block bootstrap over the
# timed chunks), the Mann–Whitney p-value, the smallest change this noise could call, and the
# verdict of the decision rule stated below. Everything is computed by the library
# (`hipexplore.compare`, `hipexplore.report.review`); this notebook only wires parameters to calls.
# Run it with `hipexplore report --baseline BASE.parquet --candidate NEW.parquet` (two runs) or
# `hipexplore report --run RUN.parquet --baseline A --candidate B` (two kernels of one interleaved run).

# %% tags=["parameters"]
baseline = "live"  # a sweep's samples .parquet, or "live": an interleaved sweep of base_kernel and new_kernel now
candidate = "none"  # the candidate run's samples .parquet, or "none": compare two kernels of the baseline run
base_kernel = "copy"  # with one run: the baseline kernel
new_kernel = "triad"  # with one run: the candidate kernel
threshold = 0.02  # practical threshold of the decision rule (0.02: ±2%)
allow_other_device = False  # compare runs measured on different devices anyway
device = "auto"  # live only: "auto", "host", "cuda", "hip"
sizes = ["256KiB", "1MiB"]  # live only: bytes per array
rotating = [1]  # live only
flush = ["none"]  # live only
iterations = 64  # live only: samples per configuration and kernel
tuning_data = "none"  # "none": no compile section (the runs record no compiles of the code under review); "live" or a replay folder: the cache on a tuning list
compiler = "host"  # live replay: "host", "hiprtc", "nvrtc"
target = "host"
problems = 1
candidates = 4
command = ""  # the command line recorded in the provenance table (set by `hipexplore report`)

# %%
# %matplotlib inline
from IPython.display import display

from hipexplore import calibrate, report
from hipexplore.report import headline, review

data = review.review_data(baseline, None if candidate == "none" else candidate, base_kernel=base_kernel,
                          new_kernel=new_kernel, threshold=threshold, allow_other_device=allow_other_device,
                          device=device, sizes=sizes, rotating=rotating, flush=flush, iterations=iterations)
replay = None if tuning_data == "none" else report.replay_data(tuning_data, compiler=compiler, target=target,
                                                               problems=problems, candidates=candidates)
display(review.Banner(data.base_metadata, data.new_metadata))
# the answer first: the verdict with its changes, the noise and the smallest change it lets the rule call,
# the cache's saving where a replay was asked for (sentences from hipexplore.report.headline)
display(headline.HeadlineBox(headline.headline(verdicts=data.verdicts, replay=replay, base_label=data.base_label,
                                               new_label=data.new_label, threshold=data.threshold)))
display(review.Headline(data))  # what is compared, the decision rule, the verdicts (escaped: the labels are file names)
# this device's A/A calibration, where `hipexplore calibrate` kept one: how often identical code was called different
calibration = calibrate.cite(data.base_metadata)
if calibration:
    display(headline.Paragraph(f"Calibration: {calibration}."))

# %% [markdown]
# ## Verdicts

# %%
review.plot_forest(data.verdicts)

# %%
review.wrapped(review.verdict_table(data.verdicts))

# %% [markdown]
# ## Noise, both sides

# %%
review.plot_noise_both(data.verdicts, data.base_label, data.new_label)

# %% [markdown]
# ## Compile time

# %%
display(review.compile_section(data, replay))  # why there is none, or which tuning list the figures are about
if replay is not None:  # the scenarios against the cache off: one pass's seconds, the saving's 95% interval, the verdict
    display(review.plot_cache_review(replay))
    display(review.wrapped(review.cache_verdicts(replay, data.threshold)))

# %% [markdown]
# ## Provenance, both sides
#
# Including the code under review: a content hash of each benchmarked kernel's source, entry,
# arguments and options, where it was read from and, in a git work tree, its revision and whether
# the file was modified.

# %%
review.wrapped(review.provenance_pair(data))
