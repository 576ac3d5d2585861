"""Hostile inputs (issue 25 items 3 and 7, issue 26 item 3): expressions that would cost minutes or
gigabytes, give complex or infinite numbers, or crash the formatting of their own error message;
``--args`` specs that do not describe the C function (which segfaulted the in-process host run);
files that are not UTF-8; outputs that cannot be written; leftovers of killed processes.

Each expression goes through the real command line (``.venv/bin/hipexplore`` in a subprocess, a
per-case timeout) in one of the flags that take expressions, and through every such place in
process, where its evaluation must take well under a second of CPU time. Every failure is one
line on stderr and exit status 2.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import cliproc
from hipexplore.cli.inputs import ascii_text
from hipexplore.errors import ConfigError
from hipexplore.kernels import catalog
from hipexplore.kernels.geometry import FUNCTIONS, ExprGeometry, evaluate, split_top_level

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("hipexplore")
HOST_KERNEL = "void k(float* a, unsigned long n) { for (unsigned long i = 0; i < n; i++) a[i] = 1; }\n"
ARGS = "out:a:f32[n],n:u64=n"

#: expressions an attacker (or a typo) gives; each must be refused in every place that takes one
HOSTILE = [
    # from the issue
    "round(1,-99999999)",
    "(-1)**0.5",
    "1e999",
    "-1e999",
    "1e999-1e999",
    # huge powers, towers and products: the work must be refused before it is done
    "9**9**9",
    "2**2**2**2**2**2",
    "10**100",
    "(2**128)**3",
    "n**n**n",
    "n**(n*n)",
    "1.5**100000",
    "2**255*2**255",
    "2**200*2**200*2**200*2**200",
    "(10**70)*(10**70)",
    "n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n",
    "int(1e300)",
    "ceil(1e300)",
    "floor(-1e300)",
    "abs(-2**300)",
    "round(2**200, -50)*2**100",
    "1e308*1e308",
    "-(1e308*10)",
    "isqrt(10**200)*10**100",
    "max(2**255, 2**255)*4",
    "0x" + "f" * 70,
    "9" * 400,
    "round(1.5, 1e9)",
    "round(n, -10**9)",
    "round(1, n*99999999)",
    "cdiv(10**300, 1)",
    "min(2**300, 1)",
    # shifts and other operators the evaluator does not allow
    "n<<99999999",
    "1<<10**9",
    "n>>1",
    "~n",
    "n^n",
    "n|n",
    "n&1",
    "n@n",
    # no complex, infinite or undefined results
    "(-8)**(1/3)",
    "sqrt(-1)",
    "log2(0)",
    "log2(-1)",
    "isqrt(-5)",
    "0**-1",
    "0.0**-1",
    "1/0",
    "n//0",
    "n%0",
    "cdiv(n, 0)",
    "cdiv(n, n-n)",
    "1j",
    "n*1j",
    # deep nesting, recursion, very long text
    "(1+" * 100 + "1" + ")" * 100,
    "-" * 400 + "1",
    "max(1," * 60 + "1" + ")" * 60,
    "1+" * 300 + "1",
    "abs(" * 80 + "n" + ")" * 80,
    "x" * 100_000,
    # not arithmetic: calls, attributes, lambdas, comprehensions, strings, names of the interpreter
    "__import__('os').system('true')",
    "n.__class__",
    "n.real",
    "().__class__.__bases__",
    "(lambda: 1)()",
    "lambda: 1",
    "[n for n in range(9)]",
    "{n for n in range(9)}",
    "(n for n in range(9))",
    "{1: 2}",
    "'a'*10**9",
    "b'x'",
    "f'{n}'",
    "True",
    "None",
    "1 if n else 2",
    "n and 1",
    "n == 1",
    "(y := 1)",
    "n[0]",
    "print(1)",
    "eval('1')",
    "exec",
    "globals()",
    "min(*[1, 2])",
    "round(1, ndigits=2)",
    "int('9'*5000)",
    "min(n)",
    "cdiv(n)",
    "nan",
    "inf",
    # unicode digits and look-alikes (int() accepts '١٢٣', the parser does not: refused with the character)
    "\u0661\u0662\u0663",
    "\uff11\uff12",
    "n\u200b",
    "n\u00b2",
    "\u2460",
]

#: (flag, how the expression is put into the command line)
PLACES = [
    ("--grid", lambda e: ["--grid", e]),
    ("--block", lambda e: ["--block", e]),
    ("--shared-bytes", lambda e: ["--shared-bytes", e]),
    ("--args count", lambda e: ["--args", f"out:a:f32[{e}],n:u64=n"]),
    ("--args value", lambda e: ["--args", f"out:a:f32[n],n:u64={e}"]),
    ("--bytes-per-launch", lambda e: ["--bytes-per-launch", e]),
]


def test_the_list_is_long_enough():
    assert len(HOSTILE) >= 40 + 5 and len(set(HOSTILE)) == len(HOSTILE)


class _Dev:
    compute_units = 4
    kind = "host"


def _in_place(place: str, expr: str):
    """Build and evaluate ``expr`` where ``place`` puts it (what bench's pre-flight does)."""
    kw: dict = {"grid": "ceil(n/256)", "block": 256, "shared_bytes": 0, "bytes_per_launch": None}
    args = ARGS
    if place == "--grid":
        kw["grid"] = expr
    elif place == "--block":
        kw["block"] = expr
    elif place == "--shared-bytes":
        kw["shared_bytes"] = expr
    elif place == "--bytes-per-launch":
        kw["bytes_per_launch"] = expr
    elif place == "--args count":
        args = f"out:a:f32[{expr}],n:u64=n"
    else:
        args = f"out:a:f32[n],n:u64={expr}"
    for value in (args, *(v for v in kw.values() if isinstance(v, str))):
        ascii_text(value, "an expression")  # what the command line checks first (int() would take '١٢٣' as 123)
    spec = catalog.user_kernel(HOST_KERNEL, "k", args, name="hostile", register_it=False, **kw)
    n = spec.elements(4096)
    spec.launch(n, _Dev())
    spec.set_bytes(n)
    spec.footprint(n)


# without its bounds (9**9**9 with no bound on ``**``) the evaluator spends minutes in one C call that
# holds the GIL: conftest's faulthandler watchdog ends it HARD_MARGIN_S after this bound (tests/suite/test_bounds.py)
@pytest.mark.timeout(15)
@pytest.mark.parametrize("place", [p for p, _ in PLACES])
def test_every_hostile_expression_is_refused_in_every_place_in_well_under_a_second(place):
    """In process, all of them in all six places: a ConfigError of one short line, and the CPU time
    of building + evaluating bounded (CPU time, not wall time: this machine is shared)."""
    slow = []
    for expr in HOSTILE:
        t0 = time.process_time()
        with pytest.raises(ConfigError) as err:
            _in_place(place, expr)
        spent = time.process_time() - t0
        msg = str(err.value)
        assert "\n" not in msg and len(msg) < 1000, (expr, msg[:300])
        if spent > 0.25:
            slow.append((expr, spent))
    assert not slow, slow


def _cli(tmp_path: Path, *argv: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """``hipexplore ARGV`` (the console script) in a process of its own (forked from a preloaded
    interpreter: tests/cliproc.py)."""
    return cliproc.run(
        argv,
        script=CLI,
        timeout=timeout,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache"), **(env or {})},
    )


def _bench_argv(src: Path, extra: list[str]) -> list[str]:
    argv = [
        "bench",
        "k",
        "--source",
        str(src),
        "--args",
        ARGS,
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "3",
        "--no-reference",
        "--no-progress",
    ]
    if extra[0] == "--args":  # replaces the default spec
        argv[argv.index("--args") + 1] = extra[1]
        return argv
    return argv + extra


#: What runs every case's command line in one interpreter: ``hipexplore.cli.main`` as the console
#: script calls it, its stderr and exit status (argparse's SystemExit included) kept per case; each
#: case is announced before it runs, so a case that hangs is named by the timeout's report.
CLI_LOOP = r"""
import contextlib, io, json, sys, time, traceback
from hipexplore.cli import main
out = sys.stdout
for argv in json.loads(sys.stdin.read()):
    print(json.dumps({"start": argv}), file=out, flush=True)
    err, t0 = io.StringIO(), time.monotonic()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            rc = None
            err.write(traceback.format_exc())
    print(json.dumps({"rc": rc, "stderr": err.getvalue(), "s": time.monotonic() - t0}), file=out, flush=True)
"""


def _case_argv(src: Path, i: int, expr: str) -> tuple[str, list[str]]:
    place, make = PLACES[i % len(PLACES)]
    return place, _bench_argv(src, make(expr))


def _refused_in_one_line(rc, stderr: str) -> bool:
    lines = stderr.strip().splitlines()
    return rc == 2 and len(lines) == 1 and "Traceback" not in stderr


@pytest.mark.timeout(90)
def test_hostile_expressions_through_the_cli_in_one_interpreter(tmp_path, need_host_cc):
    """Each expression in one of the six places (in turn), through the command line's ``main`` as
    ``hipexplore bench`` runs it, all in one child interpreter (what is tested is the parsing and
    the refusal, not the process: the real console script is the next test's): exit status 2, one
    line on stderr, no traceback, each case in well under its bound."""
    src = tmp_path / "k.c"
    src.write_text(HOST_KERNEL)
    cases = [_case_argv(src, i, expr) for i, expr in enumerate(HOSTILE)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache")}
    import json

    try:
        res = subprocess.run(
            [sys.executable, "-c", CLI_LOOP],
            input=json.dumps([argv for _, argv in cases]),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:  # about 4 s at load 13 on 2 cores
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        started = [ln for ln in out.splitlines() if ln.startswith('{"start"')]
        pytest.fail(f"the hostile cases did not finish in 60 s; the last one started: {started[-1:]}")
    records = [json.loads(ln) for ln in res.stdout.splitlines() if ln.startswith('{"rc"')]
    assert res.returncode == 0 and len(records) == len(cases), res.stderr[-3000:]
    failures = [
        (place, argv, r["rc"], r["stderr"][-600:])
        for (place, argv), r in zip(cases, records)
        if not _refused_in_one_line(r["rc"], r["stderr"])
    ]
    assert not failures, failures
    slow = [(place, expr, round(r["s"], 2)) for (place, _), expr, r in zip(cases, HOSTILE, records) if r["s"] > 20]
    assert not slow, slow


def test_hostile_expressions_through_the_real_console_script(tmp_path, need_host_cc):
    """One expression in each of the six places through the real ``hipexplore bench`` process (the
    console script, its own exit status and stderr): exit status 2, one line on stderr naming the
    flag's value, no traceback; a per-case timeout (generous: the interpreter's start-up on a loaded
    2-core machine is most of it)."""
    src = tmp_path / "k.c"
    src.write_text(HOST_KERNEL)

    def one(i_expr):
        i, expr = i_expr
        place, argv = _case_argv(src, i, expr)
        t0 = time.monotonic()
        try:
            res = _cli(tmp_path, *argv, timeout=90)
        except subprocess.TimeoutExpired:
            return (place, expr, "timed out after 90 s")
        if not _refused_in_one_line(res.returncode, res.stderr):
            return (place, expr, f"rc={res.returncode} after {time.monotonic() - t0:.1f} s: {res.stderr[-600:]}")
        return None

    with ThreadPoolExecutor(2) as pool:
        failures = [f for f in pool.map(one, enumerate(HOSTILE[: len(PLACES)])) if f]
    assert not failures, failures


# --- cdiv (issue 26 item 3) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b,want",
    [
        (7, 2, 4),
        (8, 2, 4),
        (1, 256, 1),
        (257, 256, 2),
        (0, 5, 0),
        (-7, 2, -3),
        (-8, 2, -4),
        (7, -2, -3),
        (-7, -2, 4),
        (6.5, 2, 4),
        (6.0, 2, 3),
        (0.1, 1, 1),
        (-0.5, 1, 0),
        (10**30 + 1, 10**30, 2),
    ],
)
def test_cdiv_rounds_up_exactly(a, b, want):
    """No clamp around it (the old test was ``min(compute_units*4, cdiv(...))``, which a cdiv that
    rounds down passed): cdiv(a, b) is the smallest integer >= a/b, for negatives and zero too."""
    assert FUNCTIONS["cdiv"](a, b) == want
    got = evaluate(f"cdiv({a}, {b})", {}, what="t")
    assert got == want and isinstance(got, int)
    got = evaluate("cdiv(a, b)", {"a": a, "b": b}, what="t")
    assert got == want and isinstance(got, int)


def test_cdiv_drives_a_grid_unclamped():
    g = ExprGeometry("cdiv(n, block_x)", 256)
    assert [g.launch(n, None)[0][0] for n in (1, 255, 256, 257, 512, 513, 1000)] == [1, 1, 1, 2, 2, 3, 4]


def test_cdiv_by_zero_is_one_line():
    with pytest.raises(ConfigError, match=r"^grid\[0\]: 'cdiv\(n, n-n\)' divides by zero with n=100$"):
        ExprGeometry("cdiv(n, n-n)", 1).launch(100, None)


# --- --args against the C function (issue 25 item 7) ---------------------------------------------

SCALE_C = (
    "void scale(float* out, const float* in, float s, unsigned long n) {\n"
    "  for (unsigned long i = 0; i < n; ++i) out[i] = s * in[i];\n}\n"
)
GOOD_SCALE = "out:out:f32[n],in:in:f32[n],s:f32=2,n:u64=n"


@pytest.mark.parametrize(
    "args, says",
    [
        (
            "out:out:f32[n],in:in:f32[n]",
            "the spec describes 2 argument(s) (out, in) but scale(float *out, const float *in, float s, long unsigned int n) takes 4",
        ),
        ("out:out:f32[n]", "describes 1 argument(s)"),
        (
            "out:out:f32[n],in:in:f32[n],s:f32=2,n:i32=n",
            "argument 4 'n' is a int32 (4 bytes) but the C parameter 'long unsigned int n' is a 8-byte integer",
        ),
        ("out:out:f64[n],in:in:f32[n],s:f32=2,n:u64=n", "argument 1 'out' is a buffer of float64 (8-byte elements)"),
        (
            "out:out:f32[n],in:in:f32[n],s:f64=2,n:u64=n",
            "argument 3 's' is a float64 (8 bytes) but the C parameter 'float s'",
        ),
        (
            "out:out:f32[n],n:u64=n,s:f32=2,in:in:f32[n]",
            "argument 2 'n' is a scalar uint64 passed by value but the C parameter is 'const float *in' (pointer)",
        ),
        ("out:out:f32[n],in:in:f32[n],s:f32=2,n:u64=n,m:u64=1", "describes 5 argument(s)"),
    ],
)
def test_a_spec_that_does_not_match_the_c_function_is_refused_before_the_call(tmp_path, need_host_cc, args, says):
    """It segfaulted the in-process host run (rc 139, no message); now one line, rc 2, and the
    process lives (a real compile and a real run through the CLI)."""
    src = tmp_path / "scale.c"
    src.write_text(SCALE_C)
    res = _cli(
        tmp_path,
        "bench",
        "scale",
        "--source",
        str(src),
        "--args",
        args,
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "3",
        "--no-reference",
        "--no-progress",
    )
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, (res.returncode, res.stderr[-2000:])
    assert says in lines[0] and "does not match the C function scale()" in lines[0], lines[0]


def test_a_matching_spec_runs_and_typedefs_macros_and_void_pointers_are_understood(tmp_path, need_host_cc):
    src = tmp_path / "scale2.c"
    src.write_text(
        "#include <stddef.h>\n#define REAL float\ntypedef REAL real;\nstruct opaque;\n"
        "void scale(real* restrict out, const void* in, struct opaque* p, real s, size_t n) {\n"
        "  for (size_t i = 0; i < n; ++i) out[i] = s * ((const float*)in)[i];\n}\n"
    )
    res = _cli(
        tmp_path,
        "bench",
        "scale",
        "--source",
        str(src),
        "--args",
        "out:out:f32[n],in:in:f32[n],in:p:u8[16],s:f32=2,n:u64=n",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "3",
        "--no-reference",
        "--no-progress",
        "--json",
    )
    assert res.returncode == 0, res.stderr[-2000:]


def test_launch_geometry_given_for_the_host_is_said_to_be_unused_in_one_line(tmp_path, need_host_cc):
    """A host kernel is one C call: --grid/--block/--shared-bytes were silently dropped there. Now one
    line names each value given and says it is not used (the run goes on: the same command line runs
    on a GPU, where they are); a bad expression is still refused; defaults say nothing."""
    src = tmp_path / "k.c"
    src.write_text(HOST_KERNEL)
    res = _cli(tmp_path, *_bench_argv(src, ["--grid", "ceil(n/256)", "--block", "128", "--json"]))
    lines = [x for x in res.stderr.splitlines() if "not used on the host" in x]
    assert res.returncode == 0 and len(lines) == 1, (res.returncode, res.stderr[-2000:])
    assert "--grid ceil(n/256)" in lines[0] and "--block 128" in lines[0] and "--shared-bytes" not in lines[0], lines[0]
    plain = _cli(tmp_path, *_bench_argv(src, ["--json"]))
    assert plain.returncode == 0 and "not used on the host" not in plain.stderr, plain.stderr[-2000:]
    bad = _cli(tmp_path, *_bench_argv(src, ["--grid", "nope/2"]))
    assert bad.returncode == 2 and "nope" in bad.stderr and "not used on the host" not in bad.stderr, bad.stderr[-2000:]


@pytest.mark.parametrize("size,kernel", [("4097", "triad"), ("1MiB,4098", "copy"), ("4101", "k")])
def test_a_size_that_is_not_whole_elements_is_one_line(tmp_path, need_host_cc, size, kernel):
    """--size 4097 was measured as 1024 floats and recorded as 4097 B (a row that lies about its
    size): one line naming the size, the element and two sizes that work, exit 2, nothing run."""
    src = tmp_path / "k.c"
    src.write_text(HOST_KERNEL)
    argv = (
        _bench_argv(src, ["--size", size])
        if kernel == "k"
        else ["bench", kernel, "--device", "host", "--size", size, "--iterations", "3", "--no-progress"]
    )
    res = _cli(tmp_path, *argv)
    lines = res.stderr.strip().splitlines()
    bad = size.split(",")[-1]
    assert res.returncode == 2 and len(lines) == 1, (res.returncode, res.stderr[-2000:])
    assert f"size {bad} B is not a whole number" in lines[0] and "expected a multiple of 4" in lines[0], lines[0]


FAULTS = {  # kernels as users get them wrong: each faulted the host run in this process (rc 139 or 134, no word)
    "null_store": "void k(float* y, const float* x, unsigned long long n) { volatile float* p = 0; *p = x[0]; }\n",
    "past_the_end": "void k(float* y, const float* x, unsigned long long n) {\n"
    "  for (unsigned long long i = 0; i < n * 4096; ++i) y[i] = x[i]; }\n",
    "abort": "#include <stdlib.h>\nvoid k(float* y, const float* x, unsigned long long n) { if (n > 1) abort(); }\n",
}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_a_faulting_user_kernel_on_the_host_ends_its_worker_not_the_python_process(tmp_path, need_host_cc, name):
    """Through the CLI and through ``sweep()`` in this very process, at the defaults (no ``--worker``):
    the user's own kernel runs in a sweep worker, its fault is one line (exit 2) or a ``KernelFault``
    naming the configuration, and this interpreter goes on to measure a catalog kernel."""
    import hipexplore as hx
    from hipexplore.errors import KernelFault

    src = tmp_path / f"{name}.c"
    src.write_text(FAULTS[name])
    args = "out:y:f32[n], in:x:f32[n], n:u64=n"
    res = _cli(
        tmp_path,
        "bench",
        "k",
        "--source",
        str(src),
        "--args",
        args,
        "--device",
        "host",
        "--size",
        "16KiB",
        "--iterations",
        "4",
        "--no-progress",
    )
    lines = res.stderr.strip().splitlines()
    assert (
        res.returncode == 2
        and lines
        and lines[-1].startswith("hipexplore bench: error: kernel k faulted in configuration")
    ), (res.returncode, res.stderr[-2000:])
    assert "sweep worker" in lines[-1] and "died with SIG" in lines[-1], lines[-1]
    kernel = hx.user_kernel(str(src), "k", args, name="k", register_it=False)
    with pytest.raises(KernelFault, match="kernel k faulted in configuration"):
        hx.sweep(kernel, ["16KiB"], [1], ["none"], device="host", iterations=4, reference=False, progress=False)
    ok = hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=4, reference=False, progress=False)
    assert len(ok.samples) == 4  # this process lives, and measures


def test_a_user_kernel_that_never_returns_is_stopped_and_named(tmp_path, need_host_cc):
    """A host kernel that loops forever cannot be interrupted inside its foreign call: in its sweep
    worker a watchdog stops it after ``HIPEXPLORE_LAUNCH_TIMEOUT`` and the sweep ends in one line
    naming the kernel, the configuration and the limit, the configurations before it kept."""
    src = tmp_path / "spin.c"
    src.write_text(
        "void k(float* y, const float* x, unsigned long long n) {\n"
        "  if (n > 4096) for (volatile int i = 0; ; ) (void)i;\n"
        "  for (unsigned long long i = 0; i < n; ++i) y[i] = x[i]; }\n"
    )
    started = time.monotonic()
    res = _cli(
        tmp_path,
        "bench",
        "k",
        "--source",
        str(src),
        "--args",
        "out:y:f32[n], in:x:f32[n], n:u64=n",
        "--device",
        "host",
        "--size",
        "4KiB,64KiB",
        "--iterations",
        "4",
        "--no-progress",
        "--out",
        "spin.parquet",
        env={"HIPEXPLORE_LAUNCH_TIMEOUT": "2"},
        timeout=120,
    )
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and lines, (res.returncode, res.stderr[-2000:])
    assert lines[-1].startswith("hipexplore bench: error: kernel k faulted in configuration size=65536"), lines[-1]
    assert "one launch of kernel k ran past 2 s (HIPEXPLORE_LAUNCH_TIMEOUT)" in lines[-1], lines[-1]
    assert time.monotonic() - started < 90
    import pandas as pd

    kept = pd.read_parquet(tmp_path / "spin.summary.parquet")
    assert set(kept["size_bytes"]) == {4096}  # the size before the hang is kept


@pytest.mark.parametrize("decl", ["int k = 3;", 'const char k[] = "hi";', "void (*k)(void) = 0;", "float k[16];"])
def test_an_entry_that_names_a_variable_is_refused_not_called(tmp_path, need_host_cc, decl):
    """Called as a function, a variable's address jumps into data (a fault, no word): refused in
    one line naming it and the functions the library does export, in process too (``--in-process``)."""
    src = tmp_path / "var.c"
    src.write_text(f"{decl}\nvoid scale(float* y, const float* x, unsigned long long n) {{ y[0] = x[0]; }}\n")
    for where in ((), ("--in-process",)):
        res = _cli(
            tmp_path,
            "bench",
            "k",
            "--source",
            str(src),
            "--args",
            "out:y:f32[n], in:x:f32[n], n:u64=n",
            "--device",
            "host",
            "--size",
            "16KiB",
            "--iterations",
            "4",
            "--no-progress",
            *where,
        )
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and lines, (where, res.returncode, res.stderr[-2000:])
        assert (
            "kernel 'k' is data in the host module" in lines[-1] and "not a function; it exports scale" in lines[-1]
        ), lines[-1]


@pytest.mark.parametrize(
    "argv, name, content",
    [
        (("report", "--out", "{}"), "notes.html", b"<html>my review notes</html>\n"),
        (("report", "--notebook-out", "{}", "--out", "r.html"), "mine.ipynb", b'{"cells": [], "my": "notebook"}\n'),
        (("compile", "k.c", "--compiler", "host", "--out", "{}"), "k.so", b"my notes\n"),
        (("tune-replay", "--compiler", "host", "--dry-run", "--export-list", "{}"), "mine.jsonl", b'{"mine": 1}\n'),
        (("tune-replay", "--compiler", "host", "--dry-run", "--frame", "{}"), "mine.parquet", b"PAR1 not really\n"),
    ],
)
def test_an_output_file_hipexplore_did_not_write_is_never_replaced_without_force(
    tmp_path, need_host_cc, argv, name, content
):
    """Every command that writes a file the user names: an existing file that is not what it
    writes is refused in one line before any work (exit 2) and left byte for byte; ``--force``
    replaces it; and a file it wrote itself is replaced by the same command again (a report
    rebuilt, a binary compiled again) without ``--force``."""
    (tmp_path / "k.c").write_text(HOST_KERNEL)
    target = tmp_path / name
    target.write_bytes(content)
    cmd = [a.replace("{}", str(target)) for a in argv]
    res = _cli(tmp_path, *cmd, timeout=300)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and lines and "exists and is not" in lines[-1] and "--force" in lines[-1], (
        res.returncode,
        res.stderr[-2000:],
    )
    assert target.read_bytes() == content
    if argv[0] == "report" or "--frame" in argv:
        return  # a notebook run, a whole replay: the same helper (files.check_replace) replaces as the others do
    forced = _cli(tmp_path, *cmd, "--force", timeout=300)
    assert forced.returncode == 0 and target.read_bytes() != content, forced.stderr[-2000:]
    again = _cli(tmp_path, *cmd, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]


def test_a_compiler_that_never_answers_is_killed_with_what_it_started(tmp_path, need_host_cc):
    """A ``CC`` wrapper that answers ``--version`` and then hangs: one line naming the question and
    the timeout (exit 2) instead of a traceback after a fixed minute, and nothing it started left running."""
    marker = f"sleep {900000 + os.getpid() % 90000}"  # a duration no other process sleeps: how it is found again
    cc = tmp_path / "hangcc.sh"
    cc.write_text(f'#!/bin/sh\ncase "$*" in *--version*) exec cc "$@";; esac\n{marker}\n')
    cc.chmod(0o755)
    (tmp_path / "ok.c").write_text("float f(float a) { return a; }\n")
    env = dict(os.environ, CC=str(cc), HIPEXPLORE_COMPILE_TIMEOUT="3")
    started = time.monotonic()
    res = _cli(tmp_path, "compile", "ok.c", "--compiler", "host", env=env)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "did not answer within 3 s and was killed" in lines[0], (
        res.stderr[-2000:]
    )
    assert time.monotonic() - started < 60
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout


@pytest.mark.parametrize(
    "text, says",
    [
        ("out:a:f32[n,n:u64=n", "the '[' at character 10 is never closed"),
        ("out:a:f32[n", "is never closed"),
        ("out:a:f32[n]],n:u64=n", "']' at character 13 closes nothing"),
        ("out:a:f32[min(n,4],n:u64=n", "closes nothing"),
    ],
)
def test_unbalanced_brackets_in_args_are_refused(text, says):
    with pytest.raises(ConfigError, match=None) as err:
        catalog.parse_args(text)
    assert says in str(err.value)
    with pytest.raises(ConfigError):
        split_top_level(text)


# --- files and destinations (issue 25 item 7) -----------------------------------------------------


def test_non_utf8_sources_headers_and_params_are_one_line(tmp_path, need_host_cc):
    (tmp_path / "bad.c").write_bytes(b"void k(float* a) { a[0] = 1; } /* \xff\xfe */\n")
    (tmp_path / "bad.hip").write_bytes(b"__global__ void k(float* a) { } // \x80\n")
    (tmp_path / "bad.h").write_bytes(b"#define X 1 /* \xc3\x28 */\n")
    (tmp_path / "good.c").write_text(HOST_KERNEL)
    (tmp_path / "p.yaml").write_bytes(b"device: host\n\xff\xfe: 1\n")
    cases = [
        ("bench", "k", "--source", "bad.c", "--args", ARGS, "--device", "host", "--iterations", "3"),
        ("bench", "k", "--source", "bad.hip", "--args", ARGS, "--device", "host", "--iterations", "3"),
        (
            "bench",
            "k",
            "--source",
            "good.c",
            "--header",
            "bad.h",
            "--args",
            ARGS,
            "--device",
            "host",
            "--iterations",
            "3",
        ),
        ("compile", "bad.c", "--compiler", "host"),
        ("report", "--params", "p.yaml", "--out", "r.html"),
    ]
    for argv in cases:
        res = _cli(tmp_path, *argv)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1 and "UTF-8" in lines[0], (argv, res.stderr[-1500:])
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    "dest", ["/proc/x.parquet", "/proc/self/x.parquet", "/proc/nodir/x.parquet", "adir", "adir/", "k.c/x.parquet"]
)
def test_unwritable_bench_out_is_one_line_before_anything_runs(tmp_path, need_host_cc, dest):
    (tmp_path / "adir").mkdir()
    (tmp_path / "k.c").write_text(HOST_KERNEL)
    res = _cli(
        tmp_path,
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "3",
        "--no-reference",
        "--no-progress",
        "--out",
        dest,
    )
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and dest.rstrip("/") in lines[0], res.stderr[-1500:]
    assert list((tmp_path / "adir").iterdir()) == []


# --- leftovers of killed processes (issue 25 item 7) ----------------------------------------------


def _leftovers(tmp: Path) -> list[str]:
    """hipexplore's temp folders and worker logs in ``tmp`` (crash logs an error named are not leftovers)."""
    return sorted(
        p.name
        for p in tmp.iterdir()
        if p.name.startswith("hipexplore-host-") or (p.name.startswith("hipexplore-") and "-worker-" in p.name)
    )


def _wait_for(pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and f"\nPPid:\t{pid}\n" in (d / "status").read_text():
                out.append(int(d.name))
        except OSError:
            pass
    return out


SLOW_C = (
    "void slow(float* a, unsigned long n) {\n"
    "  for (int r = 0; r < 20000; ++r) for (unsigned long i = 0; i < n; ++i) a[i] = a[i] * 0.5f + 1.0f;\n}\n"
)


@pytest.mark.parametrize("worker", [False, True], ids=["in-process", "sweep-worker"])
def test_sigkilled_bench_leaves_nothing_after_the_next_run(tmp_path, need_host_cc, worker):
    """A real ``hipexplore bench`` SIGKILLed while it measures (its device folder holds the loaded
    kernel; with --worker a sweep worker and its log exist too); the next run removes what it left."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp_path / "slow.c").write_text(SLOW_C)
    env = {"TMPDIR": str(tmp)}
    argv = [
        str(CLI),
        "bench",
        "slow",
        "--source",
        "slow.c",
        "--args",
        "inout:a:f32[n],n:u64=n",
        "--device",
        "host",
        "--size",
        "64KiB",
        "--iterations",
        "1000",
        "--no-reference",
        "--no-progress",
        *(["--worker"] if worker else []),
    ]
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "HIPEXPLORE_CACHE_DIR": str(tmp_path / "cache"), **env}
    proc = subprocess.Popen(
        argv, cwd=tmp_path, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:

        def measuring() -> bool:  # the kernel is loaded: a module file in a device folder
            return any(p.name.endswith(".so") for d in tmp.glob("hipexplore-host-*") for p in d.iterdir())

        assert _wait_for(measuring, 180), (sorted(os.listdir(tmp)), proc.poll())
        assert proc.poll() is None
        before = _leftovers(tmp)
        children = _children(proc.pid)  # a sweep worker runs in a session of its own: the kill misses it
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert before, os.listdir(tmp)  # the kill left something: the test tests something
    # an orphaned worker notices its parent is gone (its pipe closes) and ends
    assert _wait_for(lambda: not any(Path(f"/proc/{c}").exists() for c in children), 120), children
    res = _cli(
        tmp_path,
        "bench",
        "triad",
        "--device",
        "host",
        "--size",
        "4KiB",
        "--iterations",
        "3",
        "--no-reference",
        "--no-progress",
        env=env,
    )
    assert res.returncode == 0, res.stderr[-1500:]
    assert _wait_for(lambda: _leftovers(tmp) == [], 10), _leftovers(tmp)


def test_sigkilled_compile_worker_parent_leaves_no_log(tmp_path):
    """A hiprtc compile runs in a worker that writes its stderr to a log; SIGKILL the parent while
    the worker lives: the worker ends when its pipe closes, and no log is left (the file has no name
    once both hold it)."""
    from conftest import require_compiler

    require_compiler("hiprtc")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = (
        "import time\nfrom hipexplore.compile.isolation import IsolatedCompiler\n"
        "c = IsolatedCompiler('hiprtc')\nc.identity()\nprint('ready', flush=True)\ntime.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)},
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.kill()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [p.name for p in tmp.iterdir() if p.name.endswith(".log")] == []


def test_cleanup_removes_dead_folders_and_unheld_logs_only(tmp_path):
    """The next start's cleanup, against real processes: a folder of a live pid stays, one of a dead
    pid goes, one whose pid was reused by a later process goes, a log some process holds open stays,
    an unheld one goes, a crash log an error message named stays, nothing is followed through a link."""
    from hipexplore.compile import host

    base = tmp_path / "tmp"
    base.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep").write_text("x")
    try:
        (base / f"hipexplore-host-{dead.pid}-abc").mkdir()
        (base / f"hipexplore-host-{dead.pid}-abc" / "lib.so").write_text("x")
        (base / f"hipexplore-host-{live.pid}-def").mkdir()
        reused = base / f"hipexplore-host-{live.pid}-old"
        reused.mkdir()
        old = time.time() - 4000
        os.utime(reused, (old, old))  # made long before the live process with that pid started
        (base / f"hipexplore-host-{dead.pid}-link").symlink_to(outside)
        held = base / "hipexplore-sweep-worker-held.log"
        unheld = base / "hipexplore-hiprtc-worker-gone.log"
        crash = base / "hipexplore-crash-x.log"
        for p in (held, unheld, crash):
            p.write_text("log")
            os.utime(p, (old, old))
        fh = open(held)  # held open by this process
        unnumbered = base / "hipexplore-host-ab12cd34"
        unnumbered.mkdir()
        os.utime(unnumbered, (old, old))
        try:
            removed = host.clean_leftovers(base)
        finally:
            fh.close()
        left = sorted(p.name for p in base.iterdir())
        assert left == sorted(
            [f"hipexplore-host-{live.pid}-def", held.name, crash.name, f"hipexplore-host-{dead.pid}-link"]
        ), left
        assert removed == 4 and (outside / "keep").exists()
    finally:
        live.kill()
        live.wait()


def test_a_user_kernel_registered_before_the_builder_loads_is_still_checked(tmp_path, need_host_cc):
    """``hipexplore.kernels`` loads ``kernels.build`` on first use, so a script can register its
    kernel before the builder exists. The builder trusts the catalog's own kernels by name
    (``catalog.OWN``), not "whatever was registered when it loaded": the user's spec is checked
    against the C function and refused in one line, not called with the wrong arguments."""
    src = tmp_path / "scale.c"
    src.write_text(SCALE_C)
    script = (
        "import sys\n"
        "from hipexplore.kernels import user_kernel\n"
        "assert 'hipexplore.kernels.build' not in sys.modules, 'the builder loaded with the catalog'\n"
        f"user_kernel({str(src)!r}, 'scale', 'out:out:f32[n],in:in:f32[n]', name='scale')\n"
        "import hipexplore\n"
        "try:\n"
        "    hipexplore.sweep('scale', 4096, device='host', iterations=3, reference=False, progress=False)\n"
        "except hipexplore.ConfigError as exc:\n"
        "    print('REFUSED', exc)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert "REFUSED" in res.stdout and "does not match the C function scale()" in res.stdout, res.stdout[-2000:]
