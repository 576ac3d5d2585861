"""Files a compile reads outside its request (its *implicit inputs*), so the cache key holds them.

Why: the request carries the source and the headers given to it, but compilers read more: the
host compiler the headers it finds through ``CPATH`` or in ``/usr/local/include``, every compiler
an absolute ``#include "/abs/x.h"``, NVRTC a quoted include beside the source's *name* in the
current directory. An edit to any of those was served stale from the cache (issue 12). Like
ccache's direct mode, the key now lists ``(path, sha256)`` of each such file, found the way each
compiler really finds them (checked with the compilers installed here):

* **host**: the compiler's own dependency output, ``cc -M -v`` run with the request's options on
  its sources laid out in a build folder as for the compile (``host.py``); every file listed
  outside that folder is keyed. Conditions, macros and ``#include_next`` are the compiler's.
* **NVRTC** (13.x): a header given in the request wins by exact spelling; else an absolute
  spelling is opened as written; else a quoted include is looked up beside the including file's
  *name*: for the main source and request headers that name is relative to the process's
  current directory (``"cfg.h"`` in ``k.cu`` reads ``./cfg.h``), for a file read from disk it is
  that file's folder. Angled includes have no search directories ("no directories in search list").
* **hiprtc** (ROCm 5.2's comgr): request headers are written to a folder first on its search
  list and the source to a folder of its own, so a quoted include of the main source never
  sees the current directory; absolute spellings are opened as written; a quoted include from a
  file read from disk looks beside that file first; then come the system folders comgr's clang
  lists under ``-v`` (libstdc++, ``lib/clang/<v>/include`` *relative to the current directory*
  on Debian's build, ``/usr/local/include``, ``/usr/include``...). That list is learned by a
  probe compile in a subprocess (its ``-v`` text goes to file descriptor 2, not the program log),
  once per (identity, target, options), only for requests whose includes reach those folders,
  and again when a folder it ignored as missing appears or a listed one goes (~0.4 s here).

For NVRTC and hiprtc every ``#include``/``#include_next`` line and ``__has_include`` probe is
resolved whatever the preprocessor conditions (a superset: at worst a spurious miss, never a
stale hit); ``#include NAME`` uses every ``#define NAME "x"`` / ``-DNAME="x"`` spelling seen in
the texts walked or the options. Not covered: a ``#include NAME`` whose spelling is built by
other macro means, and file systems whose timestamps are coarser than ``RACY_NS``.

Memo (a memory hit must stay cheap): per (request, identity) the files read and their stat
signature (mtime, ctime, size, inode, device), plus the signature of every folder where a file
could appear that would shadow or add one (search folders and the folders on the paths of each
candidate), are remembered; a later lookup only re-stats them and resolves again on any change.
A signature younger than ``RACY_NS`` (file times are coarse) is not trusted: the next lookup
resolves again. A resolution that fails (``cc -M`` exits non-zero: a missing header) yields an
``Implicit`` with ``error`` set; the cache then compiles without storing (the compile reports
the error). The first lookup of a request in a process pays the resolution (host: one
``cc -M``, ~15 ms); a memory hit pays one ``stat`` per path remembered.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterator

from .request import CompileRequest, CompilerIdentity

#: Backends whose compiles read files relative to the current directory (workers started in
#: another directory are retired, isolation.py).
READS_CWD = frozenset({"nvrtc", "hiprtc"})
#: A file or folder changed this recently may change again within the same timestamp tick.
RACY_NS = 1_000_000_000
_MEMO_ENTRIES = 1024


@dataclass(frozen=True)
class Implicit:
    """The files read outside the request, as (path as opened, sha256); ``error`` when they could
    not be listed (then nothing is cached)."""

    files: tuple[tuple[str, str], ...] = ()
    error: str = ""

    def record(self) -> list | dict:
        if self.error:
            return {"error": self.error}
        return [{"path": p, "sha256": h} for p, h in self.files]


Sig = tuple


def _sig(st: os.stat_result) -> Sig:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev, stat.S_IFMT(st.st_mode))


def _stat_sig(path: str) -> Sig | None:
    try:
        return _sig(os.stat(path))
    except OSError:
        return None


class Collector:
    """Gathers what one resolution read and watched; ``snapshot`` makes it a memo entry."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}  # path as opened -> sha256
        self.checks: dict[str, Sig | None] = {}  # absolute path -> signature at resolution
        self.now = time.time_ns()
        self.racy = False
        self.cwd: str | None = None
        self._absent: set[str] = set()  # folders found missing during this resolution

    def _note(self, path: str, sig: Sig | None) -> None:
        self.checks[path] = sig
        if sig is not None and (self.now - sig[1] < RACY_NS or self.now - sig[0] < RACY_NS):
            self.racy = True

    def read(self, opened: str, path: str) -> bytes | None:
        """Key the regular file at ``path`` (opened as ``opened``) and return its bytes; None (and
        its folder watched) when there is none."""
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            self.watch_missing(path)
            if st is not None:
                self._note(path, _sig(st))
            return None
        sig = _sig(st)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.watch_missing(path)
            self.racy = True
            return None
        self._note(path, sig)
        self.files[opened] = hashlib.sha256(data).hexdigest()
        return data

    def watch_missing(self, path: str) -> None:
        """Watch the deepest existing folder on ``path``'s way: creating ``path`` changes it."""
        folder = os.path.dirname(path)
        while folder and folder not in self.checks:
            sig = None if folder in self._absent else _stat_sig(folder)
            if sig is not None:
                self._note(folder, sig)
                return
            self._absent.add(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                return
            folder = parent

    def watch_dir(self, path: str) -> None:
        """Watch folder ``path`` (a file added or removed there changes it); when it is missing,
        the deepest folder that exists on its way (creating it changes that one)."""
        if path not in self.checks:
            sig = _stat_sig(path)
            if sig is None:
                self.watch_missing(os.path.join(path, "x"))
            else:
                self._note(path, sig)


@dataclass
class _Memo:
    implicit: Implicit
    checks: tuple[tuple[str, Sig | None], ...]
    cwd: str | None
    trusted: bool


def unchanged(checks: tuple[tuple[str, Sig | None], ...], _stat=os.stat, _fmt=stat.S_IFMT) -> bool:
    """True when every path still has its signature (one ``stat`` each: the cost of a memory hit)."""
    for path, sig in checks:
        try:
            st = _stat(path)
        except OSError:
            if sig is not None:
                return False
            continue
        if sig is None or (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev, _fmt(st.st_mode)) != sig:
            return False
    return True


_memo: OrderedDict[tuple, _Memo] = OrderedDict()
_memo_lock = threading.Lock()


def current(request: CompileRequest, identity: CompilerIdentity, resolve: Callable[[Collector], str]) -> Implicit:
    """The implicit inputs of ``request``: from the memo when nothing it watched changed, else
    by ``resolve(collector)`` (which returns an error text, "" on success)."""
    memo_key = (request, identity)
    with _memo_lock:
        memo = _memo.get(memo_key)
    if memo is not None and memo.trusted and (memo.cwd is None or memo.cwd == os.getcwd()) and unchanged(memo.checks):
        return memo.implicit
    col = Collector()
    error = resolve(col)
    implicit = Implicit(files=tuple(sorted(col.files.items())), error=error)
    if memo is not None and memo.implicit == implicit:
        implicit = memo.implicit  # the same object: the cache's key memo compares by identity first
    entry = _Memo(implicit, tuple(col.checks.items()), col.cwd, trusted=not (col.racy or error))
    with _memo_lock:
        _memo[memo_key] = entry
        _memo.move_to_end(memo_key)
        while len(_memo) > _MEMO_ENTRIES:
            _memo.popitem(last=False)
    return implicit


# -- compiler output --------------------------------------------------------------------------
def search_list(text: str) -> tuple[list[str], list[str], list[str]]:
    """(quoted, angled, ignored-missing) folders from gcc/clang ``-v`` output."""
    quoted: list[str] = []
    angled: list[str] = []
    missing: list[str] = []
    into: list[str] | None = None
    for line in text.splitlines():
        m = re.match(r'ignoring nonexistent directory "(.*)"$', line.strip())
        if m:
            missing.append(m.group(1))
        elif line.startswith('#include "..." search starts here'):
            into = quoted
        elif line.startswith("#include <...> search starts here"):
            into = angled
        elif line.startswith("End of search list"):
            into = None
        elif into is not None and line.startswith(" "):
            into.append(line.strip().removesuffix(" (framework directory)"))
    return quoted, angled, missing


def make_dependencies(text: str) -> list[str]:
    """The prerequisites of a make rule as ``cc -M`` writes it (backslash-newlines, ``\\ `` in names)."""
    body = text.replace("\\\r\n", " ").replace("\\\n", " ")
    _, _, deps = body.partition(": ")
    out, word, i = [], [], 0
    while i < len(deps):
        c = deps[i]
        if c == "\\" and i + 1 < len(deps) and deps[i + 1] in " #\\":
            word.append(deps[i + 1])
            i += 2
            continue
        if c == "$" and deps[i + 1:i + 2] == "$":
            word.append("$")
            i += 2
            continue
        if c.isspace():
            if word:
                out.append("".join(word))
                word = []
        else:
            word.append(c)
        i += 1
    if word:
        out.append("".join(word))
    return out


def watch_shadows(col: Collector, deps: list[str], roots: list[str]) -> None:
    """Watch every folder where a file could appear that a search would find before one of
    ``deps``: for each search root (and each dependency's folder), the folders on the way to
    root/<the last 1-4 components of each dependency>."""
    heads = list(dict.fromkeys([*roots, *(os.path.dirname(d) for d in deps)]))
    for dep in deps:
        parts = dep.strip("/").split("/")
        for k in range(1, min(len(parts), 5)):
            rel = "/".join(parts[-k:])
            for root in heads:
                col.watch_missing(os.path.join(root, rel))


# -- NVRTC and hiprtc: resolve as they do ------------------------------------------------------
_DIRECTIVE = re.compile(
    r'^[ \t]*#[ \t]*(include_next|include|import)[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>|([A-Za-z_]\w*))'
    r'|__has_include(_next)?[ \t]*\([ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)', re.M)
_DEFINE = re.compile(r'^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+(?:"([^"\n]+)"|<([^>\n]+)>)', re.M)
_OPT_DEFINE = re.compile(r'^(?:-D|--define-macro=?)([A-Za-z_]\w*)=(?:"([^"]+)"|<([^>]+)>)$')


def _directives(text: str, macros: dict[str, list[tuple[str, bool]]]) -> Iterator[tuple[str, bool, bool]]:
    """(spelling, quoted, next) of each include line and ``__has_include`` probe in ``text``."""
    for m in _DEFINE.finditer(text):
        spelling = (m.group(2) or m.group(3), m.group(2) is not None)
        if spelling not in macros.setdefault(m.group(1), []):
            macros[m.group(1)].append(spelling)
    for m in _DIRECTIVE.finditer(text):
        kind, q, a, name, has_next, hq, ha = m.groups()
        if kind is None:
            yield (hq or ha), hq is not None, has_next is not None
        elif name is not None:
            yield from ((s, quoted, kind == "include_next") for s, quoted in macros.get(name, ()))
        else:
            yield (q or a), q is not None, kind == "include_next"


def _option_macros(options: tuple[str, ...]) -> dict[str, list[tuple[str, bool]]]:
    macros: dict[str, list[tuple[str, bool]]] = {}
    joined = [a + b for a, b in zip(options, options[1:]) if a in ("-D", "--define-macro")] + list(options)
    for opt in joined:
        m = _OPT_DEFINE.match(opt)
        if m:
            macros.setdefault(m.group(1), []).append((m.group(2) or m.group(3), m.group(2) is not None))
    return macros


def walk(col: Collector, request: CompileRequest, dirs: Callable[[], list[str]] | None) -> None:
    """Resolve every include of ``request`` as NVRTC (``dirs`` None) or hiprtc (``dirs`` gives
    its system search folders, asked only when a search reaches them) does, keying files read."""
    nvrtc = dirs is None
    memory = {h.name: h.text for h in request.headers}
    if not nvrtc:
        memory = {os.path.normpath(n): t for n, t in memory.items()}
    cwd = os.getcwd()
    macros = _option_macros(request.options)
    # (text, where: None for hiprtc's main source, ("mem", name) or ("disk", opened, path), found-at index)
    todo: list[tuple[str, tuple | None, int]] = [(request.source.text, ("mem", request.source.name) if nvrtc else None, -1)]
    walked: list[tuple[str, tuple | None, int]] = []
    seen: set = set()
    done: set = set()
    known = -1
    while todo or known != sum(map(len, macros.values())):
        if not todo:  # macros learned later (a header's #define) may spell includes of texts walked before
            known = sum(map(len, macros.values()))
            todo = list(walked)
            walked = []
        text, where, index = todo.pop()
        walked.append((text, where, index))
        for spelled, quoted, nxt in list(_directives(text, macros)):
            if (where, index, spelled, quoted, nxt) in done:
                continue
            done.add((where, index, spelled, quoted, nxt))
            for cand in _candidates(spelled, quoted, nxt, where, index, nvrtc, dirs):
                if cand[0] == "mem":
                    if cand[1] in memory:
                        if cand not in seen:
                            seen.add(cand)
                            todo.append((memory[cand[1]], cand, -1))
                        break
                    continue
                _, opened, idx = cand
                path = opened if os.path.isabs(opened) else os.path.join(cwd, opened)
                if not os.path.isabs(opened):
                    col.cwd = cwd
                data = col.read(opened, path)
                if data is not None:
                    if (path, idx) not in seen:
                        seen.add((path, idx))
                        todo.append((data.decode("utf-8", "replace"), ("disk", opened, path), idx))
                    break


def _candidates(spelled: str, quoted: bool, nxt: bool, where: tuple | None, index: int, nvrtc: bool,
                dirs: Callable[[], list[str]] | None) -> Iterator[tuple]:
    """Where the compiler looks for ``spelled``, in order: ("mem", name) or ("disk", opened, index)."""
    if nvrtc:
        yield ("mem", spelled)
        if os.path.isabs(spelled):
            yield ("disk", spelled, -1)
        elif quoted and where is not None:
            base = os.path.dirname(where[1])  # the including name (main source, request header or file)
            yield ("disk", os.path.join(base, spelled) if base else spelled, -1)
        return
    if os.path.isabs(spelled):
        yield ("disk", spelled, -1)
        return
    if quoted and where is not None and where[0] == "disk":
        yield ("disk", os.path.join(os.path.dirname(where[1]), spelled), -1)
    elif quoted and where is not None:
        yield ("mem", os.path.normpath(os.path.join(os.path.dirname(where[1]), spelled)))
    start = index + 1 if nxt and index >= 0 else 0
    if start == 0:
        yield ("mem", os.path.normpath(spelled))
    assert dirs is not None
    for i, d in enumerate(dirs()):
        if i >= start:
            yield ("disk", os.path.join(d, spelled), i)


# -- hiprtc's system search list -----------------------------------------------------------------
_PROBE = r"""
import json, sys
sys.path[:0] = json.loads(sys.argv[1])
from hipexplore.compile.hiprtc import HiprtcCompiler
from hipexplore.compile.request import CompileRequest, Source
comp = HiprtcCompiler(library=sys.argv[2] or None, allow_unknown_targets=True)
comp.compile(CompileRequest(Source("probe.hip", "\n"), "hiprtc", sys.argv[3], options=(*json.loads(sys.argv[4]), "-v")))
"""
#: (identity, library, target, options) -> (system folders, [(folder, exists)] it depends on, cwd or None)
_probes: dict[tuple, tuple[list[str], tuple[tuple[str, bool], ...], str | None]] = {}


def hiprtc_dirs(col: Collector, library: str, identity: CompilerIdentity, request: CompileRequest) -> list[str]:
    """comgr's system include folders for this target and options (after the request-header
    folder it writes itself), with the folders it ignored as missing watched. The probe is run
    again when one of those appears or a listed one goes. Raises ``RuntimeError`` when it fails."""
    key = (identity, library, request.target, request.options)
    cwd = os.getcwd()
    hit = _probes.get(key)
    if hit is None or (hit[2] is not None and hit[2] != cwd) or any(os.path.isdir(d) != e for d, e in hit[1]):
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, json.dumps(sys.path), library, request.target, json.dumps(request.options)],
            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        quoted, angled, missing = search_list(proc.stderr + proc.stdout)
        if proc.returncode != 0 or not angled:
            tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise RuntimeError(f"the hiprtc search-list probe failed: {tail[:300]}")
        system = [d for d in (*quoted, *angled) if not re.search(r"/comgr-[^/]+/include$", d)]
        state = tuple((os.path.join(cwd, d), d in system) for d in dict.fromkeys((*system, *missing)))
        relative = any(not os.path.isabs(d) for d in (*system, *missing))
        hit = (system, state, cwd if relative else None)
        _probes[key] = hit
    system, state, used_cwd = hit
    for folder, _ in state:  # one appearing or going changes the list: resolve (and probe) again
        col.watch_dir(folder)
    if used_cwd is not None:
        col.cwd = used_cwd
    return system


def runtime_inputs(request: CompileRequest, identity: CompilerIdentity, library: str | None = None) -> Implicit:
    """The implicit inputs of an NVRTC (``library`` None) or hiprtc request."""
    def resolve(col: Collector) -> str:
        if request.compiler == "nvrtc":
            walk(col, request, None)
            return ""
        cached: list[list[str]] = []

        def dirs() -> list[str]:
            if not cached:
                cached.append(hiprtc_dirs(col, library or "", identity, request))
            return cached[0]
        try:
            walk(col, request, dirs)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            return str(exc)
        return ""
    return current(request, identity, resolve)


__all__ = ["Collector", "Implicit", "READS_CWD", "current", "make_dependencies", "runtime_inputs", "search_list",
           "unchanged", "walk", "watch_shadows"]
