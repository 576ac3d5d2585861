"""Files a compile reads outside its request (its *implicit inputs*), so the cache key holds them.

Why: the request carries the source and the headers given to it, but compilers read more: the
host compiler the headers it finds through ``CPATH`` or in ``/usr/local/include``, every compiler
an absolute ``#include "/abs/x.h"``, NVRTC a quoted include beside the source's *name* in the
current directory. An edit to any of those was served stale from the cache (issue 12). Like
ccache's direct mode, the key now lists ``(path, sha256)`` of each such file, found the way each
compiler really finds them (checked with the compilers installed here):

Every list comes from the compiler itself, never from a scan of our own (a hand-written scanner
missed ``%:include``, ``#inc\\<newline>lude``, ``#include /*c*/ "x"``, issue 25): conditions,
macros, digraphs, trigraphs, line splices, comments and ``#include_next`` are the compiler's.

* **host**: ``cc -M -v`` run with the request's options on its sources laid out in a build folder
  as for the compile, and the driver's ``-###`` plan of the real command (``host.py``): every
  file listed outside that folder is keyed, and so is every file operand the plan hands to
  cc1/as/ld (object files, archives, assembler sources, linker scripts and what their
  GROUP/INPUT name, each ``-l`` library as ld finds it through the driver's and its own folders).
* **NVRTC** (13.x): its front end's make-dependency mode (``-Xcudafe -M -Xcudafe -o FILE``) on the
  same program and options, in this process (~15 ms). Relative paths are relative to the current
  directory (quoted includes are looked up beside the including *name*: ``"cfg.h"`` in ``k.cu``
  reads ``./cfg.h``); a path that is also a request header's name is keyed if it exists on disk
  (a superset: at worst a spurious miss). NVRTC has no search folders, so nothing can shadow.
* **hiprtc** (ROCm 5.2's comgr): clang's ``-M -MF FILE -v`` through ``hiprtcCompileProgram`` on
  the same program and options, in a helper process kept for it (comgr stays out of the caller;
  ~15 ms a call); comgr's own temp folder (the source and request headers) is dropped. Its ``-v``
  search list (libstdc++, ``lib/clang/<v>/include`` *relative to the current directory* on
  Debian's build, ``/usr/local/include``, ``/usr/include``) is watched for shadowing headers and
  for folders it ignored as missing appearing. Targets absent from comgr's ISA list are not
  tried (they abort ROCm 5.2): such a request is not cached.

A dependency output lists the files found, not the places a ``__has_include`` looked in vain:
those places are watched (beside the including file, the search folders) for a literal operand;
for an operand built by a macro they cannot be placed, and the resolution is then not trusted
(done again on every lookup). A request provably reading nothing outside itself (every include a
plain ``#include "x"``/``<x>`` of a request header, no other file-reading word after line
splicing but on whole-line ``//`` comments of a text without ``/*`` or ``??``, only known harmless
options: ``reads_only_request``) skips the compiler's list. When a
compiler cannot say (it fails, or its output is missing), the request is compiled uncached.

Memo (a memory hit must stay cheap): per (request, identity) the files read and their stat
signature (mtime, ctime, size, inode, device), plus the signature of every folder where a file
could appear that would shadow or add one (search folders and the folders on the paths of each
candidate), are remembered; a later lookup only re-stats them and resolves again on any change.
A signature younger than ``RACY_NS`` (file times are coarse) is not trusted: the next lookup
resolves again. A resolution that fails (``cc -M`` exits non-zero: a missing header) yields an
``Implicit`` with ``error`` set; the cache then compiles without storing (the compile reports
the error). The first lookup of a request in a process pays the resolution (host: ``cc -M`` and
``cc -###``, ~30 ms; NVRTC/hiprtc ~15 ms, hiprtc's helper start ~1 s once); a memory hit pays one
``stat`` per path remembered.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from .inputs import env_values
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


def _disk_key(request: CompileRequest, identity: CompilerIdentity) -> list:
    from .request import canonical_json

    return [canonical_json(request.record()).decode("utf-8", "surrogatepass"), identity.record()]


def _from_disk(request: CompileRequest, identity: CompilerIdentity) -> _Memo | None:
    """A resolution an earlier process made of the same request and compiler (``memo.py``), trusted
    only as far as an in-process one: the same directory, every watched path re-``stat``ed."""
    from . import memo as disk

    held = disk.load("implicit", _disk_key(request, identity))
    try:
        checks = tuple((str(p), None if sig is None else tuple(int(x) for x in sig)) for p, sig in held["checks"])
        files = tuple((str(p), str(h)) for p, h in held["files"])
        return _Memo(Implicit(files=files), checks, held["cwd"], trusted=True)
    except (KeyError, TypeError, ValueError):
        return None


def current(request: CompileRequest, identity: CompilerIdentity, resolve: Callable[[Collector], str]) -> Implicit:
    """The implicit inputs of ``request``: from the memo (this process's, else one an earlier
    process left on disk: a first hit in a new process asks no compiler) when nothing it watched
    changed, else by ``resolve(collector)`` (which returns an error text, "" on success)."""
    memo_key = (request, identity)
    with _memo_lock:
        memo = _memo.get(memo_key)
    if memo is None:
        memo = _from_disk(request, identity)
        if memo is not None:
            with _memo_lock:
                _memo[memo_key] = memo
    if memo is not None and memo.trusted and (memo.cwd is None or memo.cwd == os.getcwd()) and unchanged(memo.checks):
        return memo.implicit
    col = Collector()
    error = resolve(col)
    implicit = Implicit(files=tuple(sorted(col.files.items())), error=error)
    if memo is not None and memo.implicit == implicit:
        implicit = memo.implicit  # the same object: the cache's key memo compares by identity first
    entry = _Memo(implicit, tuple(col.checks.items()), col.cwd, trusted=not (col.racy or error))
    if entry.trusted and (
        entry.cwd is not None or entry.checks
    ):  # the compiler was asked (not: a request reading only itself)
        from . import memo as disk

        disk.store(
            "implicit",
            _disk_key(request, identity),
            {
                "files": [list(f) for f in implicit.files],
                "cwd": entry.cwd,
                "checks": [[p, None if sig is None else list(sig)] for p, sig in entry.checks],
            },
        )
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
        if c == "$" and deps[i + 1 : i + 2] == "$":
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


# -- NVRTC and hiprtc: ask the compiler ------------------------------------------------------
@dataclass(frozen=True)
class Deps:
    """What a compiler's own dependency output said: the files its preprocessor opened (as it
    printed them: relative ones are relative to the current directory), the folders it searches
    (hiprtc's ``-v``), and an error text when it could not say."""

    files: tuple[str, ...] = ()
    quoted: tuple[str, ...] = ()
    angled: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    error: str = ""


#: Options that cannot make a runtime compiler read a file (nor change where it looks): only with
#: these does the fast path below skip the compiler's dependency output.
_SAFE_OPTION = re.compile(
    r"^(?:-[DU].+|-O\w*|--?std=[\w+]+|-g\w*|-w|-W[\w=-]+|-G|-lineinfo|--generate-line-info|--device-debug|"
    r"--?use_fast_math|-ffast-math|--(?:fmad|ftz|prec-div|prec-sqrt|extra-device-vectorization|relocatable-device-code|"
    r"device-int128|dlink-time-opt|extensible-whole-program|restrict|expt-relaxed-constexpr|extended-lambda|"
    r"maxrregcount|default-device|device-as-default-execution-space|minimal)(?:=\w+)?|"
    r"-(?:dc|rdc=\w+|dlto|ewp|maxrregcount=\d+|default-device|fgpu-rdc|fno-gpu-rdc|munsafe-fp-atomics|mcumode|"
    r"mno-cumode|mwavefrontsize64|mno-wavefrontsize64|fno-[\w-]+|ffp-contract=\w+|fgpu-flush-denormals-to-zero|"
    r"fno-gpu-flush-denormals-to-zero|funsafe-math-optimizations|ffinite-math-only|fno-finite-math-only|"
    r"fgpu-approx-transcendentals|fno-gpu-approx-transcendentals))$"
)
#: Words without which no preprocessor reads a file: a directive name (include, include_next,
#: import, embed), a probe (__has_include), a pragma that opens one (GCC dependency, clang module).
#: Line splices are removed first; trigraphs and UCNs send the text to the compiler's own list.
_TRIGGER = re.compile(r"include|import|embed|dependency|module|\\[uU]|\?\?")
_SPLICE = re.compile(r"(?:\\|\?\?/)[ \t]*\r?\n")
_SIMPLE_INCLUDE = re.compile(r'^[ \t]*(?:#|%:)[ \t]*include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)[ \t]*(?://[^\n]*)?$')
#: a whole (spliced) line that is a ``//`` comment: never a directive. Trusted only in a text with no
#: ``/*`` anywhere (a line opening inside a block comment, ``// */ #include "x.h"``, is a directive once
#: the comment is replaced by a space) and no ``??`` anywhere in the original text (``// ... ??/``
#: splices the next line only where trigraphs are on, ``spliced`` always: that line may be a directive).
_LINE_COMMENT = re.compile(r"^[ \t]*//")
_HAS_INCLUDE = re.compile(r"__has_include(?:_next)?\b")
_HAS_LITERAL = re.compile(r'__has_include(_next)?[ \t]*\([ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)[ \t]*\)')


def spliced(text: str) -> str:
    """``text`` after translation phase 2 (backslash-newline removed; ``??/``-newline too, and a
    backslash followed by blanks before the newline, which gcc and clang also splice)."""
    return _SPLICE.sub("", text)


def reads_only_request(request: CompileRequest, nvrtc: bool) -> bool:
    """True only when the compile provably reads no file outside the request: every text has no
    word a file-reading directive needs, except plain ``#include "x"``/``<x>`` lines naming a
    request header by the spelling the compiler matches, and every option is a known harmless
    one. Anything else (a comment inside a directive, a digraph, a macro, ``__has_include``, a
    trigraph, an unknown option) is left to the compiler's own dependency output."""
    if not all(_SAFE_OPTION.match(o) for o in request.options):
        return False
    names = {h.name for h in request.headers} if nvrtc else {os.path.normpath(h.name) for h in request.headers}
    for text in (request.source.text, *(h.text for h in request.headers)):
        body = spliced(text)
        if not _TRIGGER.search(body):
            continue
        comments_plain = "/*" not in body and "??" not in text  # see _LINE_COMMENT
        for line in body.splitlines():
            if not _TRIGGER.search(line):
                continue
            if comments_plain and _LINE_COMMENT.match(line):
                continue  # "// the prelude every kernel includes first": no directive (see _LINE_COMMENT)
            m = _SIMPLE_INCLUDE.match(line)
            if m is None:
                return False
            spelled = m.group(1) or m.group(2)
            if os.path.isabs(spelled) or (spelled if nvrtc else os.path.normpath(spelled)) not in names:
                return False
    return True


def _has_include_probes(
    col: Collector, text: str, here: str | None, cwd: str, quoted_bases: list[str], angled_bases: list[str]
) -> None:
    """Watch where each ``__has_include`` in ``text`` looks, so that a file appearing there (which
    the dependency output, listing only files found, cannot show) resolves again. ``here``: the
    folder of the file the text came from (None for a request text). An operand that is not a
    literal (a macro) cannot be placed: the resolution is then not trusted (done again on every
    lookup)."""
    body = spliced(text)
    probes = _HAS_INCLUDE.findall(body)
    if not probes:
        return
    literal = list(_HAS_LITERAL.finditer(body))
    if len(literal) != len(probes):
        col.racy = True
    for m in literal:
        q, a = m.group(2), m.group(3)
        spelled = q or a
        if os.path.isabs(spelled):
            col.watch_missing(spelled)
            continue
        bases = ([here] if q is not None and here is not None else []) + (
            quoted_bases if q is not None else angled_bases
        )
        for base in bases:
            col.watch_missing(os.path.normpath(os.path.join(cwd, base, spelled)))


def runtime_inputs(
    request: CompileRequest, identity: CompilerIdentity, probe: Callable[[CompileRequest], Deps]
) -> Implicit:
    """The implicit inputs of an NVRTC or hiprtc request, from the compiler's own dependency
    output (``probe``: NVRTC's front end ``-M``, hiprtc's clang ``-M -MF``, run with the request's
    texts and options in the current directory). Every file it lists that exists on disk is
    keyed; the folders where a ``__has_include`` would find a new file, and hiprtc's search
    folders (where a new header could shadow one found later on the list), are watched."""
    nvrtc = request.compiler == "nvrtc"

    def resolve(col: Collector) -> str:
        if reads_only_request(request, nvrtc) and not env_values(request.compiler):
            return ""  # (a variable the compiler reads could add options: then it is asked)
        cwd = os.getcwd()
        col.cwd = cwd
        deps = probe(request)
        if deps.error:
            return deps.error
        texts: list[tuple[str, str | None]] = [(request.source.text, None), *((h.text, None) for h in request.headers)]
        for dep in deps.files:
            path = os.path.normpath(os.path.join(cwd, dep))
            data = col.read(dep, path)
            if data is not None:
                texts.append((data.decode("utf-8", "replace"), os.path.dirname(path)))
        system = [*deps.quoted, *deps.angled]
        if nvrtc:  # quoted: beside the including *name* (request texts: relative to the current directory)
            names = [os.path.dirname(n) for n in (request.source.name, *(h.name for h in request.headers))]
            quoted, angled = list(dict.fromkeys(names)), []
        else:  # hiprtc: request headers are in comgr's own folder; then the system folders
            quoted, angled = system, list(deps.angled)
        for text, here in texts:
            _has_include_probes(col, text, here, cwd, quoted, angled)
        for folder in (*system, *deps.missing):
            col.watch_dir(os.path.normpath(os.path.join(cwd, folder)))  # a header added there: look again
        if system:  # a header appearing earlier on the search list than one found would shadow it
            found = [os.path.normpath(os.path.join(cwd, o)) for o in col.files]
            watch_shadows(col, found, [os.path.normpath(os.path.join(cwd, d)) for d in system])
        return ""

    return current(request, identity, resolve)


def parse_nvrtc_deps(text: str, source_name: str) -> list[str]:
    """NVRTC's front end ``-M``: one ``<object>: <path>`` line per file, names unescaped. The
    first is the main source (read from memory); built-in pseudo files are dropped by the caller
    (they do not exist on disk)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    target = lines[0].split(": ", 1)[0] + ": "
    deps = [line[len(target) :] if line.startswith(target) else line for line in lines]
    if deps and deps[0] == source_name:
        deps = deps[1:]
    return deps


def parse_make_deps(text: str, skip_prefix: str = "") -> list[str]:
    """clang's ``-M -MF`` (make syntax); paths under ``skip_prefix`` (comgr's own temp folder:
    the source and the request headers it wrote there) are dropped."""
    return [d for d in make_dependencies(text) if not (skip_prefix and d.startswith(skip_prefix))]


__all__ = [
    "Collector",
    "Deps",
    "Implicit",
    "READS_CWD",
    "current",
    "make_dependencies",
    "parse_make_deps",
    "parse_nvrtc_deps",
    "reads_only_request",
    "runtime_inputs",
    "search_list",
    "spliced",
    "unchanged",
    "watch_shadows",
]
