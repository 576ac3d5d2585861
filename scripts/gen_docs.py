#!/usr/bin/env python3
"""Write the generated parts of the documentation, or check them (``--check``).

    python scripts/gen_docs.py            # rewrite them
    python scripts/gen_docs.py --check    # exit 1 naming each stale file (tests/docs/test_generated_docs.py)

What is generated, and from what:
  docs/guide/settings.md   the table between its markers: hipexplore.settings.markdown_table()
  docs/figures.md          the current figures: benchmarks/figures.py over the recorded data in data/
  BENCHMARKS.md            the same table between its markers, at the top
  docs/guide/cache.md      the table "where each cache is wrong": benchmarks/compile/stale_keys.py's
                           recorded run in data/compile/stale-keys/ (a GPU host's where there is one)
  docs/guide/verdicts.md   the A/A calibration table between its markers: data/calibration/*/calibrate.json
  docs/troubleshooting.md  the real error messages: each case runs the real CLI (a child process,
                           on the host device, in a temporary directory) and records its stderr
                           and exit status

So no page states a number, a setting or an error message that the code or the data no longer
produces: the test fails until this script is run again.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def between(text: str, name: str, body: str, where: str) -> str:
    pattern = re.compile(rf"(<!-- {name}:begin -->\n).*?(\n<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{where} has no <!-- {name}:begin --> ... <!-- {name}:end --> markers")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text, count=1)


# -- figures ----------------------------------------------------------------------------------------
FIGURES_HEAD = """# Current figures

The numbers these docs quote, each computed from the recorded data it names (by
`benchmarks/figures.py`; `tests/docs/test_generated_docs.py` fails when this page and the data
disagree). *Command* is the command that recorded the data, *revision* the tree it ran at, and
"(log)" marks a field the data file does not hold, taken from the run's record in `BENCHMARKS.md`.
Nothing here ran on an AMD GPU ([what ran where](guide/what-ran-where.md)); host-CPU figures are
CPU timings, not GPU measurements. The chronological log of every measurement, with its conditions,
is the appendix of `BENCHMARKS.md`; the scripts are in `benchmarks/` (by what they measure).

"""


def figures_page() -> str:
    import figures

    return FIGURES_HEAD + "<!-- figures:begin -->\n" + figures.markdown_table() + "\n<!-- figures:end -->\n"


def benchmarks_md(text: str) -> str:
    import figures

    return between(text, "figures", figures.markdown_table(), "BENCHMARKS.md")


def settings_page(text: str) -> str:
    from hipexplore import settings

    return between(text, "settings", settings.markdown_table(), "docs/guide/settings.md")


def verdicts_page(text: str) -> str:
    """The A/A calibrations recorded under data/calibration/*/calibrate.json, one row each."""
    import json

    from hipexplore.calibrate import markdown_table

    records = {
        p.parent.name: json.loads(p.read_text())
        for p in sorted((REPO / "data" / "calibration").glob("*/calibrate.json"))
    }
    return between(text, "calibration", markdown_table(records), "docs/guide/verdicts.md")


# -- troubleshooting ----------------------------------------------------------------------------------
HOST_C = "void k(float* y, const float* x, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) y[i] = 2 * x[i]; }\n"
ARGS = "out:y:f32[n], in:x:f32[n], n:u64=n"


@dataclass(frozen=True)
class Case:
    section: str
    title: str
    argv: tuple[str, ...]
    fix: str
    env: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    before: tuple[tuple[str, ...], ...] = ()


CASES = [
    Case(
        "Sweeps",
        "A kernel name that is neither in the catalog nor given a source",
        ("bench", "triads", "--device", "host"),
        "Catalog kernels are listed by `hipexplore info`; for your own kernel add `--source FILE --args SPEC` "
        "([your own kernels](guide/own-kernels.md)).",
    ),
    Case(
        "Sweeps",
        "Fewer iterations than rotating buffer sets",
        ("bench", "triad", "--device", "host", "--size", "64KiB", "--rotating", "8", "--iterations", "4"),
        "Each set must be used at least once: raise `--iterations`, lower `--rotating`, or leave "
        "`--iterations` out (adaptive). `auto` can mean hundreds of sets for a small size.",
    ),
    Case(
        "Sweeps",
        "A size hipexplore cannot read",
        ("bench", "triad", "--device", "host", "--size", "12parsecs", "--iterations", "8"),
        "Sizes are bytes per array: `4096`, `64KiB`, `1MiB`, `256MiB`, comma separated.",
    ),
    Case(
        "Sweeps",
        "A flush mode the device cannot do",
        ("bench", "triad", "--device", "host", "--size", "64KiB", "--flush", "icache", "--iterations", "8"),
        "`icache` and `inline-icache` are AMD GPU flushes; on the host and on NVIDIA use `none`, `l2-write` or `l2-read`.",
    ),
    Case(
        "Sweeps",
        "Resuming into a file made with other measurement settings",
        (
            "bench",
            "triad",
            "--device",
            "host",
            "--size",
            "64KiB",
            "--iterations",
            "8",
            "--chunk",
            "2",
            "--out",
            "run.parquet",
            "--no-progress",
        ),
        "An `--out` file is resumed only with the same stop rule, chunk, passes and flush settings; "
        "pass `--no-resume` to start over, or another `--out`.",
        before=(
            (
                "bench",
                "triad",
                "--device",
                "host",
                "--size",
                "64KiB",
                "--iterations",
                "8",
                "--out",
                "run.parquet",
                "--no-progress",
            ),
        ),
    ),
    Case(
        "Sweeps",
        "An output file that is not a hipexplore result",
        ("bench", "triad", "--device", "host", "--size", "64KiB", "--iterations", "8", "--out", "notes.parquet"),
        "hipexplore never overwrites a file it did not write: choose another `--out`, or add `--force`.",
        files={"notes.parquet": "my own notes\n"},
    ),
    Case(
        "Own kernels",
        "An argument spec that does not parse",
        ("bench", "k", "--source", "k.c", "--args", "y:f32", "--device", "host"),
        "Buffers are `ROLE:NAME:DTYPE[COUNT]`, scalars `NAME:DTYPE=VALUE` "
        "([the argument spec](guide/own-kernels.md#the-argument-spec)).",
        files={"k.c": HOST_C},
    ),
    Case(
        "Own kernels",
        "A buffer role other than in, out or inout",
        ("bench", "k", "--source", "k.c", "--args", "both:y:f32[n], in:x:f32[n], n:u64=n", "--device", "host"),
        "Use `inout` for a buffer the kernel reads and writes.",
        files={"k.c": HOST_C},
    ),
    Case(
        "Own kernels",
        "A source file that is not there",
        ("bench", "k", "--source", "missing.c", "--args", ARGS, "--device", "host"),
        "Check the path (relative to the current directory).",
    ),
    Case(
        "Own kernels",
        "A grid expression outside the whitelist",
        ("bench", "k", "--source", "k.c", "--args", ARGS, "--device", "host", "--grid", '__import__("os").getpid()'),
        "Expressions see `n`, `compute_units`, the scalar arguments and `block_x/y/z`, with "
        "`ceil floor sqrt isqrt log2 min max abs round int cdiv`; nothing else is evaluated.",
        files={"k.c": HOST_C},
    ),
    Case(
        "Own kernels",
        "A dtype hipexplore does not know",
        ("bench", "k", "--source", "k.c", "--args", "out:y:f16[n], in:x:f32[n], n:u64=n", "--device", "host"),
        "Buffers and scalars take `f32 f64 i8 u8 i16 u16 i32 u32 i64 u64` (or numpy names).",
        files={"k.c": HOST_C},
    ),
    Case(
        "Own kernels",
        "A kernel that faults on the host",
        (
            "bench",
            "k",
            "--source",
            "k.c",
            "--args",
            ARGS,
            "--device",
            "host",
            "--size",
            "16KiB",
            "--iterations",
            "8",
            "--no-progress",
        ),
        "Your own C kernels run in a sweep worker on the host too, so a fault ends the worker, not your Python: "
        "look for a NULL or out-of-range pointer, or an `--args` count larger than the kernel's loop expects. "
        "Finished configurations are kept in `--out`.",
        files={"k.c": "void k(float* y, const float* x, unsigned long long n) { volatile float* p = 0; *p = x[0]; }\n"},
    ),
    Case(
        "Own kernels",
        "An entry that names a variable, not a function",
        ("bench", "k", "--source", "k.c", "--args", ARGS, "--device", "host", "--iterations", "8"),
        "`--entry` (or the kernel name) must be a function the source defines; the message lists those it exports.",
        files={"k.c": "float k[4];\nvoid scale(float* y, const float* x, unsigned long long n) { y[0] = x[0]; }\n"},
    ),
    Case(
        "Compiling",
        "A raw option that would make the compiler read files the key cannot see",
        ("compile", "k.c", "--compiler", "host", "--option=-I/usr/include"),
        "Give include folders as `-I DIR` (hipexplore reads them and keys every header it finds) and "
        "headers as `--header FILE`; only the raw compiler option is refused.",
        files={"k.c": HOST_C},
    ),
    Case(
        "Compiling",
        "An --out file that is not compiler output",
        ("compile", "k.c", "--compiler", "host", "--out", "k.so"),
        "hipexplore never overwrites a file it did not write (compile, report and tune-replay outputs alike): choose "
        "another `--out`, or add `--force`.",
        files={"k.c": HOST_C, "k.so": "my notes\n"},
    ),
    Case(
        "Compiling",
        "A target the compiler does not build for",
        ("compile", "k.c", "--compiler", "host", "--target", "gfx90a"),
        "`hipexplore info` lists each compiler's targets; the host compiler builds for `host` only.",
        files={"k.c": HOST_C},
    ),
    Case(
        "Compiling",
        "A kernel that does not compile",
        ("compile", "bad.c", "--compiler", "host"),
        "The compiler's own log follows the first line; failures are never cached, so the next run compiles again.",
        files={"bad.c": "int f(void) { return }\n"},
    ),
    Case(
        "Settings",
        "An environment variable with a bad value",
        ("cache", "stats"),
        "Every `HIPEXPLORE_*` variable that is set is validated when a command starts, before any work "
        "([settings](guide/settings.md)).",
        env={"HIPEXPLORE_CACHE_DISK_MAX_BYTES": "lots"},
    ),
    Case(
        "Verdicts",
        "Comparing a kernel the run does not hold",
        ("compare", "data/h200/verdicts-twin-and-5pct/interleaved.parquet", "--base", "stream", "--new", "stream2"),
        "The message lists the kernels the run holds; `--base` and `--new` take those names.",
    ),
    Case(
        "Verdicts",
        "Comparing a file that is not there",
        ("compare", "before.parquet", "after.parquet"),
        "`compare` reads the samples file a sweep's `--out` wrote (`NAME.parquet`, beside `NAME.summary.parquet`).",
    ),
    Case(
        "Tuning replay",
        "A target the replay's compiler cannot build",
        ("tune-replay", "--compiler", "host", "--target", "sm_90"),
        "Each compiler has its targets: host `host`, hiprtc `gfx90a`..., NVRTC `sm_XX`, Triton `gfx942`, `gfx950`, `sm_90`.",
    ),
    Case(
        "Many GPUs",
        "A cluster address hipexplore cannot read",
        ("bench", "triad", "--device", "host", "--size", "64KiB", "--cluster", "local:0"),
        "`--cluster local:N` (N ≥ 1 workers started here) or `--cluster tcp://HOST:PORT` (a running scheduler).",
    ),
    Case(
        "Report",
        "A parameters file that is not there",
        ("report", "--params", "params.yml", "--out", "r.html"),
        "`--params` takes a YAML or JSON file of the dashboard notebook's parameters "
        "([the report](guide/notebooks.md#the-notebooks-and-the-report)).",
    ),
    Case(
        "Report",
        "A parameter name or value the notebook does not take",
        ("report", "--params", "params.yml", "--out", "r.html"),
        "Names and values are checked before the notebook starts; the line names the parameter, and a misspelt name "
        "gets the closest one the notebook has.",
        files={"params.yml": 'sizes: ["1MiB"]\nflsuh: ["none", "l2-read"]\n'},
    ),
]
PROGRESS = re.compile(r"\d+%\|")
#: The host LLC every case runs with (HIPEXPLORE_LLC_BYTES): no message depends on it, and a sweep that
#: a case runs (the resume and fault cases) flushes a few MiB per sample instead of a server's 480 MiB
#: L3 times four (~20 s of CPU for the resume case on the review VM, ~1 s with it)
CASE_LLC_BYTES = 8 << 20


def fresh_cli(argv: list[str], cwd: Path, env: dict[str, str], check: bool = False) -> subprocess.CompletedProcess:
    """``python -m hipexplore ARGV`` in a fresh interpreter: how a case runs by default."""
    return subprocess.run(
        [sys.executable, "-m", "hipexplore", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=check,
    )


def run_case(case: Case, tmp: Path, cli=fresh_cli) -> tuple[int, str]:
    """``cli``: how a command runs (``fresh_cli``'s arguments; the suite's forks a preloaded interpreter)."""
    work = tmp / re.sub(r"\W+", "_", case.title)[:40]
    work.mkdir()
    (work / "data").symlink_to(REPO / "data")
    for name, text in case.files.items():
        (work / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPEXPLORE_")}
    # the disk tier and the compiler facts a CLI remembers (compile/memo.py) stay in the case's folder;
    # the host's LLC is CASE_LLC_BYTES, so a case's sweep flushes megabytes, not a server's 2 GiB
    env.update(
        PYTHONPATH=str(REPO),
        HIPEXPLORE_CACHE_DIR=str(work / "cache"),
        XDG_CACHE_HOME=str(work / "xdg"),
        HIPEXPLORE_LLC_BYTES=str(CASE_LLC_BYTES),
        COLUMNS="100",
        **case.env,
    )
    for before in case.before:
        cli(list(before), work, env, check=True)
    res = cli(list(case.argv), work, env)
    lines = [ln for ln in res.stderr.replace("\r", "\n").splitlines() if ln.strip() and not PROGRESS.search(ln)]
    text = "\n".join(lines).replace(str(work.resolve()), ".").replace(str(work), ".").replace(str(REPO), "<repo>")
    return res.returncode, normalize(text)


def normalize(text: str) -> str:
    """The parts of a message that differ between machines and runs: a compile's temporary build
    folder and the host CPU's name."""
    text = re.sub(r"/tmp/hipexplore-host-[\w-]+", "BUILD", text)
    text = re.sub(r"\(pid \d+\)", "(pid PID)", text)  # a sweep worker's process id
    return re.sub(r"host device '[^']*'", "host device 'CPU'", text)


def shell(case: Case) -> str:
    import shlex

    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in case.env.items())
    return (env + " " if env else "") + "hipexplore " + shlex.join(case.argv)


TROUBLE_HEAD = """# Troubleshooting

Every error hipexplore raises for a bad input is **one line on stderr and exit status 2**
(`HIPEXPLORE_DEBUG=1` shows the traceback instead); a compile error adds the compiler's log below
its line. The messages below are the real ones: `scripts/gen_docs.py` runs each command (on the
host device, in an empty directory) and records what it printed (a temporary build folder and the
CPU's name are replaced), and `tests/docs/test_generated_docs.py` fails when a message changes and this
page was not regenerated.

"""


def collect(cli=fresh_cli) -> list[tuple[Case, int, str]]:
    """Run every case: (case, exit status, stderr as the page shows it); ``cli`` as in ``run_case``."""
    with tempfile.TemporaryDirectory(prefix="hx-trouble-") as d:
        results = [(case, *run_case(case, Path(d), cli)) for case in CASES]
    bad = [f"{case.title!r}: exit {rc}\n{text}" for case, rc, text in results if rc != 2 or "Traceback" in text]
    if bad:  # never record a crash as a documented message
        raise RuntimeError("a troubleshooting case did not fail with one clear line (exit 2):\n" + "\n".join(bad))
    return results


def troubleshooting_page(results: list[tuple[Case, int, str]] | None = None) -> str:
    out = [TROUBLE_HEAD]
    section = None
    for case, rc, text in collect() if results is None else results:
        if case.section != section:
            section = case.section
            out.append(f"## {section}\n")
        setup = "".join(f"`hipexplore {' '.join(b)}`, then " for b in case.before)
        files = ", ".join(f"`{n}`" for n in case.files)
        given = f" (given {files})" if files else ""
        out.append(
            f"### {case.title}\n\n{setup}`{shell(case)}`{given} exits {rc}:\n\n```text\n{text}\n```\n\n{case.fix}\n"
        )
    return "\n".join(out)


# -- where each cache is wrong ----------------------------------------------------------------------
def stale_keys_page(text: str) -> str:
    """docs/guide/cache.md's comparison table: the recorded run of benchmarks/compile/stale_keys.py."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("stale_keys", REPO / "benchmarks" / "compile" / "stale_keys.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    table = module.markdown_table(REPO / "data" / "compile" / "stale-keys", REPO)
    return between(text, "stale-keys", table, "docs/guide/cache.md")


# -- driver -----------------------------------------------------------------------------------------
def generated() -> dict[Path, str]:
    settings = REPO / "docs" / "guide" / "settings.md"
    bench = REPO / "BENCHMARKS.md"
    cache = REPO / "docs" / "guide" / "cache.md"
    verdicts = REPO / "docs" / "guide" / "verdicts.md"
    return {
        cache: stale_keys_page(cache.read_text()),
        settings: settings_page(settings.read_text()),
        REPO / "docs" / "figures.md": figures_page(),
        bench: benchmarks_md(bench.read_text()),
        REPO / "docs" / "troubleshooting.md": troubleshooting_page(),
        verdicts: verdicts_page(verdicts.read_text()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file")
    args = ap.parse_args(argv)
    stale = []
    for path, text in generated().items():
        if path.exists() and path.read_text() == text:
            continue
        stale.append(str(path.relative_to(REPO)))
        if not args.check:
            path.write_text(text)
    if args.check and stale:
        print("stale (run python scripts/gen_docs.py): " + ", ".join(stale))
        return 1
    print(("rewrote: " + ", ".join(stale)) if stale else "all generated docs are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
