"""The files a hiprtc compile reads, as comgr's own clang lists them, asked of a helper process.

Why a module of its own, and why a process: what hiprtc reads outside the request (absolute includes,
its system search folders: ``/usr/local/include``...) must be in the key (``compile/implicit.py``),
and only comgr's clang knows the list (``-M -MF FILE -v``: the make dependencies and the search
folders). Loading comgr into the caller's process to ask is what isolation avoids (ROCm 5.2's comgr
aborts the process on targets it does not know), so one long-lived helper per library answers these
questions with comgr loaded (~15 ms a question), started on first use, restarted when it dies or when
the environment hiprtc reads changes, isolated from the current directory it ``chdir``s into
(``interpreter.isolated_argv``), and ended at exit. ``HiprtcCompiler.dependencies`` checks the request
and asks; ``deps_from_reply`` reads the answer.
"""

from __future__ import annotations

import atexit
import json
import re
import subprocess
import threading

from ..interpreter import isolated_argv
from . import implicit
from .implicit import Deps
from .inputs import env_values

_HELPER = r"""
import json, os, sys, tempfile
reply = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # nothing the libraries print may reach the reply pipe
from hipexplore.compile.hiprtc import hiprtc_module, program_log
hip = hiprtc_module(sys.argv[1] or None)
for line in sys.stdin:
    job = json.loads(line)
    out = {}
    try:
        os.chdir(job["cwd"])
        folder = tempfile.mkdtemp(prefix="hipexplore-hiprtc-deps-")
        deps, verbose = os.path.join(folder, "deps.d"), os.path.join(folder, "v.txt")
        names = [h[0].encode() for h in job["headers"]]
        texts = [h[1].encode() for h in job["headers"]]
        status, prog = hip.hiprtcCreateProgram(job["source"][1].encode(), job["source"][0].encode(), len(texts),
                                               texts or None, names or None)
        opts = [o.encode() for o in (*job["options"], "-M", "-MF", deps, "-v")]
        saved = os.dup(2)
        with open(verbose, "wb") as v:
            os.dup2(v.fileno(), 2)  # clang's -v goes to file descriptor 2
            try:
                (status,) = hip.hiprtcCompileProgram(prog, len(opts), opts)
            finally:
                os.dup2(saved, 2)
                os.close(saved)
        out["status"] = int(status)
        out["log"] = program_log(hip, prog)
        hip.hiprtcDestroyProgram(prog.createRef())
        for key, path in (("deps", deps), ("verbose", verbose)):
            try:
                with open(path, encoding="utf-8", errors="surrogateescape") as f:
                    out[key] = f.read()
                os.unlink(path)
            except OSError:
                out[key] = ""
        os.rmdir(folder)
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    reply.write(json.dumps(out) + "\n")
    reply.flush()
"""


class DependencyHelper:
    """One long-lived process that answers dependency questions with comgr loaded (started on
    first use, restarted when it dies or the environment hiprtc reads changes)."""

    def __init__(self, library: str) -> None:
        self.library = library
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.env: tuple = ()

    def _start(self) -> subprocess.Popen:
        self.close()
        self.env = env_values("hiprtc")
        # isolated, with this process's path (interpreter.isolated_argv): it chdirs into the
        # compile's folder, and nothing found there may be imported
        self.proc = subprocess.Popen(
            isolated_argv(_HELPER, self.library),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        return self.proc

    def ask(self, job: dict, timeout: float = 300.0) -> dict:
        with self.lock:
            proc = self.proc
            if proc is None or proc.poll() is not None or self.env != env_values("hiprtc"):
                proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps(job) + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self.close()
                raise RuntimeError("the hiprtc dependency helper exited") from None
            timer = threading.Timer(timeout, proc.kill)
            timer.start()
            try:
                line = proc.stdout.readline()
            finally:
                timer.cancel()
            if not line:
                code = proc.wait()
                self.close()
                raise RuntimeError(f"the hiprtc dependency helper died (exit {code})")
            out = json.loads(line)
            if "error" in out:
                raise RuntimeError(out["error"])
            return out

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                proc.kill()
            except OSError:
                pass
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except (OSError, AttributeError):
                    pass


_helpers: dict[str, DependencyHelper] = {}
_helpers_lock = threading.Lock()


def helper(library: str) -> DependencyHelper:
    """This process's helper for ``library`` (started on its first question)."""
    with _helpers_lock:
        found = _helpers.get(library)
        if found is None:
            found = _helpers[library] = DependencyHelper(library)
        return found


@atexit.register
def _close_helpers() -> None:
    for each in list(_helpers.values()):
        each.close()


def deps_from_reply(reply: dict) -> Deps:
    """The files a compile reads, from the helper's reply (comgr's clang's ``-M`` make dependencies and
    its ``-v`` search list): the request's own texts (comgr's temp copies) and comgr's own include
    folder left out; ``error`` when the lists cannot be read."""
    deps_text, log = reply.get("deps", ""), reply.get("log", "")
    sources = [d for d in implicit.make_dependencies(deps_text) if d.endswith("/input/CompileSource")]
    if not sources:
        lines = [x.strip() for x in log.splitlines() if "error" in x]
        why = lines[0] if lines else (log.strip().splitlines() or [f"no dependency output ({reply.get('status')})"])[0]
        return Deps(error=f"hiprtc could not list the files this compile reads (-M): {why[:300]}")
    own = sources[0][: -len("input/CompileSource")]  # comgr's temp folder: the request's own texts
    errors = [x.strip() for x in log.splitlines() if re.search(r"\b(fatal )?error:", x)]
    if errors:
        return Deps(error=f"hiprtc could not list the files this compile reads (-M): {errors[0][:300]}")
    quoted, angled, missing = implicit.search_list(reply.get("verbose", ""))
    if not angled:
        return Deps(error="hiprtc could not list the files this compile reads: no search list under -v")
    keep = [d for d in (*quoted, *angled) if not d.startswith(own) and not re.search(r"/comgr-[^/]+/include$", d)]
    return Deps(
        files=tuple(implicit.parse_make_deps(deps_text, own)),
        quoted=tuple(d for d in quoted if d in keep),
        angled=tuple(d for d in angled if d in keep),
        missing=tuple(missing),
    )


def helper_count() -> int:
    """How many helpers this process has asked for (none in a process that only hit the cache)."""
    with _helpers_lock:
        return len(_helpers)
