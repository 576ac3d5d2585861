"""Resume after real kills and real kernel edits (issue 25 item 5).

A real ``hipexplore bench`` process is SIGKILLed at each point of a results write (after the
samples file is replaced, after the summary file is replaced, after meta.json), then the same
command runs again: every configuration must be in the files exactly once, with exactly its own
samples. The kill point is placed by a wrapper that starts the real CLI in a process of its own
(``python -c KILLER``, forked from a preloaded interpreter: tests/cliproc.py) with ``bench.io``'s writer
counting its calls (no hook in the product), and the kill is a real SIGKILL of that process by itself. A kernel edited between two runs of the same command must not resume: its
rows were measured with other code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap

import pandas as pd
import pytest

import cliproc
from hipexplore.schema import Configuration

CONFIGURATION_COLUMNS = Configuration.COLUMNS

#: the real CLI, with the results writer's Nth call (samples, summary alternate) followed by SIGKILL
KILLER = textwrap.dedent("""
    import os, signal, sys
    import hipexplore.bench.io as io
    point, nth = sys.argv[1], int(sys.argv[2])
    calls = {"parquet": 0, "meta": 0}
    write_parquet, write_file = io.write_parquet, io.write_file

    def counted_parquet(*a, **k):
        write_parquet(*a, **k)
        calls["parquet"] += 1
        # calls 2n-1 and 2n write configuration n's samples and summary; a sweep in units writes samples,
        # units file and summary per (configuration, unit): "units" kills after the units file of the nth
        if (point == "samples" and calls["parquet"] == 2 * nth - 1) or (point == "summary" and calls["parquet"] == 2 * nth) \
                or (point == "units" and calls["parquet"] == 3 * nth - 1):
            os.kill(os.getpid(), signal.SIGKILL)

    def counted_file(path, *a, **k):  # meta.json, once it is in place
        done = write_file(path, *a, **k)
        if str(path).endswith(".meta.json"):
            calls["meta"] += 1
            if point == "meta" and calls["meta"] == nth:
                os.kill(os.getpid(), signal.SIGKILL)
        return done

    io.write_parquet, io.write_file = counted_parquet, counted_file
    from hipexplore.cli import main
    sys.exit(main(sys.argv[3:]))
""")
ITERATIONS = 12


def bench_argv(out, *more: str) -> list[str]:
    return [
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "16KiB,32KiB",
        "--rotating",
        "1,2",
        "--flush",
        "none",
        "--iterations",
        str(ITERATIONS),
        "--reference-samples",
        "6",
        "--no-progress",
        "--json",
        "--out",
        str(out),
        *more,
    ]


def run_cli(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """``python -m hipexplore ARGV`` in a process of its own (forked from a preloaded interpreter:
    tests/cliproc.py)."""
    return cliproc.run(argv, env=env, timeout=300)


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, HIPEXPLORE_CACHE_DIR=str(tmp_path / "cache"))


@pytest.mark.parametrize(
    "point, nth, units",
    [("samples", 3, "1"), ("summary", 3, "1"), ("meta", 3, "1"), ("samples", 1, "1"), ("samples", 1, "2")],
)
def test_a_sweep_killed_at_each_write_point_resumes_with_every_configuration_once(tmp_path, env, point, nth, units):
    """One unit writes after every configuration (the nth write: the nth configuration); a sweep
    of several units writes once, at the end."""
    out = tmp_path / "r.parquet"
    argv = bench_argv(out, "--units", units)
    killed = cliproc.run([point, str(nth), *argv], code=KILLER, env=env, timeout=300)  # python -c KILLER ...
    assert killed.returncode == -signal.SIGKILL, killed.stderr  # really killed, at that write
    again = run_cli(argv, env)
    assert again.returncode == 0, again.stderr
    summary, samples = pd.read_parquet(tmp_path / "r.summary.parquet"), pd.read_parquet(out)
    keys = summary[list(CONFIGURATION_COLUMNS)].astype(str).apply(tuple, axis=1)
    assert len(summary) == 6 and keys.is_unique, summary[
        list(CONFIGURATION_COLUMNS)
    ]  # 2 sizes x (2 rotating + reference)
    per_config = samples.groupby(list(CONFIGURATION_COLUMNS)).size()
    assert len(per_config) == 6
    # each configuration has its own samples once: no rows of a configuration measured twice
    assert (per_config[per_config.index.get_level_values("flush") == "none"] == ITERATIONS).all(), per_config
    assert (per_config[per_config.index.get_level_values("flush") == "cold-reference"] == 6).all(), per_config
    assert not samples.duplicated(list(CONFIGURATION_COLUMNS) + ["iteration"]).any()
    if nth > 1:
        assert "resumed" in again.stderr  # what the first process committed was kept, not measured again


HOST_KERNEL = "void k(float* a, unsigned long n) { for (unsigned long i = 0; i < n; i++) a[i] = %s; }\n"


def test_an_edited_kernel_does_not_resume_under_its_new_code(tmp_path, env):
    src = tmp_path / "k.c"
    src.write_text(HOST_KERNEL % "1")
    out = tmp_path / "k.parquet"
    argv = [
        "bench",
        "k",
        "--source",
        str(src),
        "--args",
        "out:a:f32[n],n:u64=n",
        "--device",
        "host",
        "--size",
        "16KiB",
        "--rotating",
        "1,2",
        "--iterations",
        "8",
        "--no-reference",
        "--no-progress",
        "--json",
        "--out",
        str(out),
    ]
    first = run_cli(argv, env)
    assert first.returncode == 0, first.stderr
    import json

    identity = json.loads((tmp_path / "k.meta.json").read_text())["identity.k"]
    unchanged = run_cli(argv, env)  # the same code: every row kept
    assert unchanged.returncode == 0 and "resumed" in unchanged.stderr, unchanged.stderr
    before = (tmp_path / "k.summary.parquet").read_bytes()
    src.write_text(HOST_KERNEL % "2.0f * (float)i")  # other code, the same command
    edited = run_cli(argv, env)
    lines = edited.stderr.strip().splitlines()
    assert edited.returncode == 2 and len(lines) == 1, edited.stderr
    assert "cannot resume" in lines[0] and "rows of k" in lines[0] and "other code" in lines[0], lines[0]
    assert (tmp_path / "k.summary.parquet").read_bytes() == before  # the old rows were left as they were
    fresh = run_cli(argv + ["--no-resume"], env)  # measured again under the new code
    assert fresh.returncode == 0, fresh.stderr
    assert json.loads((tmp_path / "k.meta.json").read_text())["identity.k"] != identity


def test_an_edited_geometry_or_argument_does_not_resume(tmp_path, env):
    src = tmp_path / "k.c"
    src.write_text(HOST_KERNEL % "1")
    out = tmp_path / "g.parquet"
    argv = [
        "bench",
        "k",
        "--source",
        str(src),
        "--args",
        "out:a:f32[n],n:u64=n",
        "--device",
        "host",
        "--size",
        "16KiB",
        "--iterations",
        "8",
        "--no-reference",
        "--no-progress",
        "--json",
        "--out",
        str(out),
    ]
    assert run_cli(argv, env).returncode == 0
    other_block = run_cli(argv + ["--block", "128"], env)
    assert other_block.returncode == 2 and "rows of k" in other_block.stderr, other_block.stderr
