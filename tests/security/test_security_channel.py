"""A host kernel that talks to the reviewer's process through its sweep worker's pipe (issue 47, item 1).

The attack: a host kernel runs inside the sweep worker (``bench.worker_main``), and the worker's
pipe to the parent was a pickle stream whose descriptor the worker's command line names. Each
kernel here finds that descriptor as an attacker would (the last word of ``/proc/self/cmdline``)
and, at its first launch, writes a forged frame there: a pickle whose ``__reduce__`` runs a shell
command, an early ``done``, an error that exits 0, lengths of -5 and 2**64-1, bytes that are no
frame, warnings that claim to be hipexplore's own line or carry terminal escapes — each in the old
pickle stream's format and in the new wire's (``bench.wire``: an attacker adapts). Others fork a
``setsid`` child that holds the pipe while the launch hangs, or leave daemons behind.

Real pieces: C kernels compiled by the real ``cc`` through ``--source`` and run by the real CLI
(``hipexplore bench``) and the library (``sweep``), a Python reference function that forges from
the worker too, real processes. What must hold:

* no code runs in the parent (the pickle's marker file never appears; the same bytes unpickled here
  do create it: the payload is live);
* no run ends rc 0 with units missing: every forged frame ends the run with one line on stderr
  naming the kernel and the configuration, exit 2, the finished unit's rows kept on disk;
* nothing waits past the watchdog (``HIPEXPLORE_LAUNCH_TIMEOUT``) plus a few seconds, however the
  pipe is held open (a bound far under the 600 s the child sleeps);
* no process the kernel started survives the sweep;
* the output holds no raw control character.

Before the change: the pickle ran ``touch`` as the parent's pid, an early ``done`` gave rc 0 and
empty files, ``("error", SystemExit(0))`` rc 0 and no output, a length of -5 hung the parent on a
live worker, the ``setsid`` child kept it reading until it exited, 2**64-1 and non-frames were
tracebacks, escapes reached the terminal, and the forked children ran on (ppid 1).
"""

from __future__ import annotations

import os
import pickle
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import need_tool
from hipexplore.bench import wire

ARGS = "inout:a:f32[n],n:u64=n"
#: the kernel, its first launch armed (``GATE``: only in a process that finds the gate file already there,
#: i.e. the second unit's worker, when the first unit's created it) with ``@ATTACK@``
C_KERNEL = r"""
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fired;

/* as an attacker would: the worker's command line names its descriptors, the last one its pipe to the parent */
static int pipe_to_parent(void) {
    static char buf[1 << 16];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    char *last = buf;
    for (char *p = buf; p < buf + n; p += strlen(p) + 1) last = p;
    return atoi(last);
}

/* where the test finds the processes the kernel started */
static void note_pid(const char *what) {
    char path[4096];
    snprintf(path, sizeof path, "@DIR@/pid-%s-%d", what, (int)getpid());
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    if (fd >= 0) close(fd);
}

static const unsigned char PAYLOAD[] = {@PAYLOAD@};

static int armed(void) {
    if (!@GATED@) return 1;
    if (access("@DIR@/gate", F_OK) == 0) return 1;
    int fd = open("@DIR@/gate", O_CREAT | O_WRONLY, 0600);
    if (fd >= 0) close(fd);
    return 0;
}

void forge(float* a, unsigned long long n) {
    if (!fired) {
        fired = 1;
        if (armed()) {
            (void)PAYLOAD; (void)pipe_to_parent; (void)note_pid;
            @ATTACK@
        }
    }
    for (unsigned long long i = 0; i < n; ++i) a[i] = a[i] * 0.5f + 1.0f;
}
"""

WRITE = "{ ssize_t w = write(pipe_to_parent(), PAYLOAD, sizeof PAYLOAD); (void)w; }"
#: a child in a session of its own holding every descriptor of the worker (the pipe too), then a launch that never returns
SETSID_HANG = 'if (fork() == 0) { setsid(); note_pid("holder"); sleep(600); _exit(0); } sleep(600);'
#: a daemon (double fork, own session, every descriptor closed) and a plain child, then the launch returns
DAEMONS = (
    'if (fork() == 0) { setsid(); if (fork() == 0) { for (int f = 0; f < 1024; ++f) close(f); note_pid("daemon"); '
    'sleep(600); _exit(0); } _exit(0); } if (fork() == 0) { note_pid("child"); sleep(600); _exit(0); }'
)
#: escapes and a claim in the worker's stderr, then a crash: the fault line quotes its stderr
STDERR_CRASH = (
    '{ const char m[] = "\\x1b[1;32mhipexplore: cache verified, all results OK\\n"; '
    "ssize_t w = write(2, m, sizeof m - 1); (void)w; raise(SIGSEGV); }"
)


class Runs:
    """The parent runs this if it ever unpickles the payload: ``touch MARKER``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def old_frame(obj) -> bytes:
    """A frame of the old pickle stream (multiprocessing's: a big-endian int32 length, then the pickle)."""
    data = pickle.dumps(obj)
    return struct.pack("!i", len(data)) + data


def raw_frame(header: bytes, body: bytes = b"") -> bytes:
    """A frame of the new wire with whatever header an attacker writes."""
    return wire.PREFIX.pack(wire.MAGIC, len(header), len(body)) + header + body


def _another_runs_result():
    """A result of the unit's own configuration, as another run's (no samples)."""
    import numpy as np

    from hipexplore.bench.outcome import ConfigurationResult, Identity, Rotation, Samples
    from hipexplore.schema import Configuration

    none = Samples({c: np.empty(0, dtype=object if t == wire.TEXT else t) for c, t in wire.SAMPLE_TYPES.items()})
    return ConfigurationResult(
        Configuration("forge", 16384, "1", "none"), 0, Identity("x", "x", "x"), Rotation("1"), none, None
    )


def payloads(marker: Path) -> dict[str, bytes]:
    """Every forged frame, by name (module docstring)."""
    evil = Runs(marker)
    return {
        "pickle-old": old_frame(("done", evil)),
        "pickle-in-frame": raw_frame(pickle.dumps(evil)),
        "done-early": wire.encode(wire.Done(False)),
        "done-early-old": old_frame(("done", False)),
        "stopped-unasked": wire.encode(wire.Done(True)),
        "exit-0": wire.encode(wire.Failed("SystemExit", "0")),
        "exit-0-old": old_frame(("error", SystemExit(0))),
        "length-minus-5-old": struct.pack("!i", -5),
        "length-minus-5": wire.PREFIX.pack(wire.MAGIC, 2**32 - 5, 0),
        "length-2-64-old": struct.pack("!i", -1) + struct.pack("!Q", 2**64 - 1),
        "length-2-64": wire.PREFIX.pack(wire.MAGIC, 16, 2**64 - 1),
        "not-a-frame": b"\x00hello parent, this is no frame\n",
        "half-a-frame": wire.encode(wire.Done(False))[:7],
        "unknown-kind": raw_frame(b'{"kind":"exec","code":"import os"}'),
        "warning-escape": raw_frame(
            b'{"kind":"warn","category":"UserWarning","message":"\\u001b[1;32mhipexplore: cache '
            b'verified, all results OK","lineno":1}'
        ),
        "row-of-another-run": wire.encode(wire.Add(_another_runs_result())),
    }


def c_array(data: bytes) -> str:
    return ",".join(str(b) for b in data) or "0"


def kernel_source(folder: Path, attack: str, payload: bytes = b"", gated: bool = False) -> Path:
    src = folder / "forge.c"
    src.write_text(
        C_KERNEL.replace("@DIR@", str(folder))
        .replace("@PAYLOAD@", c_array(payload))
        .replace("@ATTACK@", attack)
        .replace("@GATED@", "1" if gated else "0")
    )
    return src


def cli(
    folder: Path, src: Path, units: int = 1, env: dict | None = None, timeout: float = 600
) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hipexplore",
            "bench",
            "forge",
            "--source",
            str(src),
            "--entry",
            "forge",
            "--args",
            ARGS,
            "--device",
            "host",
            "--size",
            "16KiB",
            "--rotating",
            "1",
            "--flush",
            "none",
            "--iterations",
            "20",
            "--units",
            str(units),
            "--no-progress",
            "--out",
            str(folder / "run.parquet"),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=folder,
        env={**os.environ, **(env or {})},
    )
    return p, time.monotonic() - t0


def survivors(folder: Path) -> list[int]:
    """The processes the kernel started (they noted their pids) that still run."""
    alive = []
    for note in folder.glob("pid-*"):
        pid = int(note.name.rsplit("-", 1)[1])
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            alive.append(pid)
    return alive


def assert_one_line_fault(p: subprocess.CompletedProcess, *, why: str = "") -> str:
    """Exit 2, one line on stderr naming the kernel and the configuration, no raw control character."""
    assert p.returncode == 2, (p.returncode, p.stderr[-3000:])
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr[-3000:]
    assert re.match(r"hipexplore bench: error: kernel forge faulted in configuration \S", lines[0]), lines[0]
    assert why in lines[0], lines[0]
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", p.stderr + p.stdout), ascii(p.stderr[-2000:])
    return lines[0]


@pytest.fixture
def folder(tmp_path):
    cc = need_tool("cc")
    assert cc
    return tmp_path


def test_the_pickle_payload_is_live(tmp_path):
    """The bytes the kernels write do run code where they are unpickled (so the next tests can fail)."""
    marker = tmp_path / "ran"
    frame = payloads(marker)["pickle-old"]
    pickle.loads(frame[4:])
    assert marker.exists()


# -- through the CLI ------------------------------------------------------------------------------
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", ["pickle-old", "done-early", "exit-0-old", "length-minus-5-old"])
def test_a_forged_frame_in_the_second_unit_is_one_line_and_keeps_the_first(folder, name):
    """The second unit's kernel forges (the first unit is honest): exit 2, one line naming kernel and
    configuration, no code run here, the first unit's rows on disk, nothing of the kernel left."""
    marker = folder / "pwned"
    src = kernel_source(folder, WRITE, payloads(marker)[name], gated=True)
    p, _ = cli(folder, src, units=2)
    line = assert_one_line_fault(p, why="broke its channel")
    assert not marker.exists(), "the kernel's pickle ran code in the parent"
    units = pd.read_parquet(folder / "run.units.parquet")
    assert set(units["pass_index"]) == {0} and len(units) == 2, units  # the honest unit's two configurations, kept
    assert survivors(folder) == []
    if name == "done-early":
        assert "a done frame with 2 of 2 planned configuration(s) not delivered" in line


@pytest.mark.timeout(600)
def test_a_setsid_child_holding_the_pipe_keeps_nobody_waiting_past_the_watchdog(folder):
    """The launch hangs and a child in a session of its own holds the pipe: the watchdog stops the
    worker, the parent sees it gone (not the pipe's end), ends the child, and returns."""
    src = kernel_source(folder, SETSID_HANG)
    p, wall = cli(folder, src, env={"HIPEXPLORE_LAUNCH_TIMEOUT": "2"})
    line = assert_one_line_fault(p, why="ran past 2 s (HIPEXPLORE_LAUNCH_TIMEOUT)")
    assert "SIGKILL" in line
    assert list(folder.glob("pid-holder-*")), "the kernel never forked its holder"
    assert survivors(folder) == []
    assert wall < 240, wall  # start-up and compile at a loaded host's pace, then 2 s + a few: never the child's 600 s


@pytest.mark.timeout(600)
def test_what_a_kernel_forks_does_not_outlive_its_sweep(folder):
    """A daemon (double fork, own session, no descriptor left) and a plain child: the sweep ends as
    usual (rc 0, every configuration), and neither runs after it."""
    src = kernel_source(folder, DAEMONS)
    p, _ = cli(folder, src, units=2)
    assert p.returncode == 0, p.stderr[-3000:]
    summary = pd.read_parquet(folder / "run.summary.parquet")
    assert len(summary) == 2
    assert (
        len(list(folder.glob("pid-daemon-*"))) == 2 and len(list(folder.glob("pid-child-*"))) == 2
    )  # one each per unit
    assert survivors(folder) == []


@pytest.mark.timeout(600)
def test_a_crash_quotes_the_workers_stderr_escaped(folder):
    src = kernel_source(folder, STDERR_CRASH)
    p, _ = cli(folder, src)
    line = assert_one_line_fault(p, why="SIGSEGV")
    assert "its stderr: \\x1b[1;32mhipexplore: cache verified" in line  # quoted as the worker's, the escape shown


@pytest.mark.timeout(600)
def test_a_warning_the_kernel_forges_is_shown_as_the_workers(folder):
    """A well-formed warning frame is data: shown, as the worker's, never as hipexplore's own line."""
    frame = wire.encode(wire.Warn("CacheWarning", "hipexplore: cache verified, all results OK", 1))
    src = kernel_source(folder, WRITE, frame)
    p, _ = cli(folder, src)
    assert p.returncode == 0, p.stderr[-3000:]
    shown = [ln for ln in p.stderr.splitlines() if "cache verified" in ln]
    assert shown == [
        "hipexplore bench: warning: sweep worker (kernel forge): hipexplore: cache verified, all results OK"
    ]


# -- through the library: every payload, from C and from a Python reference function ----------
def _sweep(kspec, folder: Path):
    from hipexplore.bench.sweep import sweep

    return sweep(
        kspec,
        "16KiB",
        [1],
        ["none"],
        device="host",
        iterations=20,
        units=1,
        progress=False,
        worker=True,
        out=folder / "run.parquet",
    )


def _assert_refused(folder: Path, kspec, marker: Path) -> str:
    from hipexplore.errors import KernelFault

    t0 = time.monotonic()
    with pytest.raises(KernelFault) as err:
        _sweep(kspec, folder)
    assert time.monotonic() - t0 < 240
    text = str(err.value)
    assert err.value.kernel == kspec.name and err.value.configuration, text
    assert "\n" not in text and not re.search(r"[\x00-\x1f\x7f]", text), ascii(text)
    assert not marker.exists()
    assert survivors(folder) == []
    return text


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", list(payloads(Path("/nonexistent"))))
def test_every_forged_frame_from_a_c_kernel_ends_the_run_in_one_line(folder, name):
    from hipexplore.kernels.catalog import user_kernel

    marker = folder / "pwned"
    kspec = user_kernel(
        kernel_source(folder, WRITE, payloads(marker)[name]), "forge", ARGS, name=f"forge_{name.replace('-', '_')}"
    )
    text = _assert_refused(folder, kspec, marker)
    assert ("raised SystemExit: 0" if name == "exit-0" else "broke its channel") in text, (name, text)


PY_FORGER = '''
import os

PAYLOAD = bytes.fromhex("@HEX@")


def reference(inputs, scalars):
    """A reference function that, run in the sweep worker's output check, writes to the worker's pipe."""
    fd = int(open("/proc/self/cmdline", "rb").read().split(b"\\0")[-2])
    os.write(fd, PAYLOAD)
    return {"a": inputs["a"] * 0.5 + 1.0}
'''


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", ["pickle-old", "done-early", "exit-0", "length-2-64"])
def test_a_python_reference_function_in_the_worker_cannot_forge_either(folder, monkeypatch, name):
    """A Python callable that reaches the pipe: a user kernel's reference function runs in the worker
    (its output check). (A ``callable_kernel`` runs in the caller's own process: it has no pipe to forge.)"""
    from hipexplore.kernels.catalog import user_kernel

    marker = folder / "pwned"
    module = f"forger_{name.replace('-', '_')}"
    (folder / f"{module}.py").write_text(PY_FORGER.replace("@HEX@", payloads(marker)[name].hex()))
    monkeypatch.syspath_prepend(str(folder))
    reference = __import__(module).reference
    kspec = user_kernel(
        kernel_source(folder, ""), "forge", ARGS, name=f"pyforge_{name.replace('-', '_')}", reference=reference
    )
    _assert_refused(folder, kspec, marker)


# -- on a cluster ---------------------------------------------------------------------------------
def _register_forge(source: str, name: str) -> int:
    """On a Dask worker: the kernel registered there (as a user registers kernels on their workers); its pid."""
    from hipexplore.kernels.catalog import user_kernel

    user_kernel(source, "forge", ARGS, name=name)
    return os.getpid()


@pytest.mark.timeout(900)
def test_a_kernel_on_a_cluster_forges_only_to_its_own_sweep_worker(folder):
    """On a Dask worker the kernel runs in a sweep worker child of it, never in the process whose
    messages the client unpickles: its forged pickle reaches the Dask worker's checked channel, and
    the client gets one ``KernelFault`` naming kernel and configuration; no code ran anywhere."""
    from conftest import need_module

    distributed = need_module("distributed")
    import cloudpickle

    from hipexplore.bench.cluster import ClusterOptions, local_cluster, run_cluster
    from hipexplore.bench.result import RunOptions
    from hipexplore.bench.spec import SweepSpec
    from hipexplore.bench.stats import StopRule
    from hipexplore.errors import KernelFault
    from hipexplore.kernels.catalog import user_kernel

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    marker = folder / "pwned"
    src = kernel_source(folder, 'note_pid("kernel"); ' + WRITE, payloads(marker)["pickle-old"])
    user_kernel(src, "forge", ARGS, name="forge_on_cluster")
    lc = local_cluster(1)
    client = distributed.Client(lc)
    try:
        dask_pids = set(client.run(_register_forge, str(src), "forge_on_cluster").values())
        spec = SweepSpec(
            kernels=("forge_on_cluster",),
            sizes=("16KiB",),
            rotating=(1,),
            flush=("none",),
            stop=StopRule(iterations=20),
        )
        with pytest.raises(KernelFault) as err:
            run_cluster(
                spec,
                client,
                ClusterOptions(device="host", retries=0),
                RunOptions(out=folder / "run.parquet", progress=False),
            )
    finally:
        client.close()
        lc.close()
    text = str(err.value)
    assert err.value.kernel == "forge_on_cluster" and "broke its channel" in text and "\n" not in text, text
    assert not marker.exists()
    kernel_pids = {int(p.name.rsplit("-", 1)[1]) for p in folder.glob("pid-kernel-*")}
    assert kernel_pids and not kernel_pids & dask_pids, (
        kernel_pids,
        dask_pids,
    )  # the kernel ran in a process of its own
