"""Tuning lists as files: the GEMM problems of a model and the perf configs tried for each.

Why a file: the kernels a real tuning flow compiles are decided by the model and the tuner, not by
hipexplore. A list file says which problems were tuned with which candidates; ``tune-replay --list
FILE`` expands it into the compile requests of every candidate (``hxgen``: fill, GEMM, pointwise
tail, for hiprtc, NVRTC, Triton or the host compiler) and replays them through the cache. The
shipped lists (``data/tuning/lists/*.jsonl``) are written by ``python -m hipexplore.tuning.generate``;
a user writes the same format from their own tuning run (one line per candidate tried), or
exports a list hipexplore ran with ``tune-replay ... --export-list FILE``.

Format (JSON Lines, UTF-8; blank lines are ignored; every other line one JSON object):

line 1, the header::

    {"format": "hipexplore.tuning-list", "version": 1, "name": "llama3-8b", "model": "...",
     "description": "...", "dtype": "fp32", "problems": 35, "candidates": 550,
     "kernels": 1144, "unique_kernels": 532}

  ``format`` and ``version`` are required; ``name`` defaults to the file's stem; ``problems``,
  ``candidates``, ``kernels`` and ``unique_kernels`` are optional and, when given, must match what
  the file expands to (so a truncated file is caught); ``dtype`` must be ``fp32`` when given.

every further line, one candidate of one problem::

    {"problem": "m256.o_proj", "m": 256, "n": 4096, "k": 4096, "epilogue": "add",
     "perf_config": "v1:64,64,16,4,4,4,2,4", "meta": {"layer": "o_proj", "tokens": 256}}

  ``problem``: a name (no ``/``); ``m``, ``n``, ``k``: C[M,N] = A[M,K] @ B[K,N]; ``epilogue``: the
  fused tail, one of ``hxgen.EPILOGUES`` (default ``none``); ``perf_config``:
  ``v1:BM,BN,BK,TM,TN,VEC,SPLIT,UNROLL`` (block tile, register tile, vector width, split-K, unroll);
  ``meta``: an optional object, kept but never interpreted. Keys starting ``x_`` are the writer's
  own and are ignored; any other key is an error (a misspelt ``epilogue`` must not pass silently).
  Every line of one problem gives the same m, n, k and epilogue; a (problem, perf_config) pair
  appears once. Candidates are replayed in file order, problems in order of first appearance.

A bad file is refused with one line naming the file, the line and the problem. The file is read
as untrusted input (``hipexplore.untrusted``): at most ``MAX_LIST_BYTES`` bytes and lines of at most
``MAX_LINE_CHARS`` characters, JSON nested at most ``untrusted.MAX_DEPTH`` levels with integers of at
most 19 digits and finite numbers, names (problems, the header's texts) printable text, and the
perf config's split-K factor at most ``hxgen.MAX_SPLIT``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..errors import ConfigError
from . import hxgen
from .hxgen import PerfConfig, Problem
from ..untrusted import check_name, load_json, shown

FORMAT = "hipexplore.tuning-list"
VERSION = 1
HEADER_KEYS = (
    "format",
    "version",
    "name",
    "model",
    "description",
    "dtype",
    "generator",
    "problems",
    "candidates",
    "kernels",
    "unique_kernels",
)
ROW_KEYS = ("problem", "m", "n", "k", "epilogue", "perf_config", "meta")
#: where the shipped lists live (a name given to ``--list`` is looked up here)
LISTS_DIR = Path(__file__).resolve().parents[2] / "data" / "tuning" / "lists"
SUFFIX = ".jsonl"
#: the largest list file read (the shipped lists are 0.1-0.2 MB; a tuning run of 100,000 candidates ~25 MB)
MAX_LIST_BYTES = 64 << 20
#: the longest line (a candidate line is ~150 characters; its optional meta a few hundred more)
MAX_LINE_CHARS = 1 << 20
#: the header's texts: how long each may be
_HEADER_TEXT_LIMIT = {"name": 256, "model": 1024, "description": 4096, "generator": 1024}


@dataclass
class ListSpec:
    """A parsed list: header, problems in order, each problem's candidates in order."""

    header: dict[str, Any]
    problems: list[Problem]
    candidates: dict[str, list[PerfConfig]]
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: str = ""

    @property
    def name(self) -> str:
        return str(self.header.get("name") or (Path(self.path).stem if self.path else "list"))

    @property
    def n_candidates(self) -> int:
        return sum(len(v) for v in self.candidates.values())

    def rows(self) -> list[tuple[Problem, PerfConfig]]:
        return [(p, c) for p in self.problems for c in self.candidates[p.name]]

    def select(
        self,
        problems: str | None = None,
        limit: int | None = None,
        every: int | None = None,
        every_problem: int | None = None,
    ) -> "ListSpec":
        """A reduced list: ``problems`` a count N (the first N) or comma-separated names; ``every_problem``
        every K-th problem (the first kept), each with all its candidates, so the repetition of tails
        across candidates stays what it is in the full list; ``limit`` the first N candidates of each
        problem; ``every`` every K-th candidate of the whole list (in file order, the first kept),
        which keeps the mix of problems and tiles but not the repetition."""
        probs = list(self.problems)
        if every_problem is not None:
            if isinstance(every_problem, bool) or not isinstance(every_problem, int) or every_problem < 1:
                raise ConfigError(f"--every-problem must be a positive integer; got {every_problem!r}")
            probs = probs[::every_problem]
        if problems:
            spec = problems.strip()
            if spec.isdigit():
                n = int(spec)
                if not 1 <= n <= len(probs):
                    raise ConfigError(f"--problems count must be 1..{len(probs)} for list {self.name!r}; got {n}")
                probs = probs[:n]
            else:
                by = {p.name: p for p in probs}
                chosen = []
                for name in (s.strip() for s in spec.split(",")):
                    if name not in by:
                        shown = ", ".join(list(by)[:8]) + (" ..." if len(by) > 8 else "")
                        raise ConfigError(f"list {self.name!r} has no problem {name!r}; it has {len(by)}: {shown}")
                    chosen.append(by[name])
                probs = list(dict.fromkeys(chosen))
        for flag, v in (("--limit", limit), ("--every", every)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ConfigError(f"{flag} must be a positive integer; got {v!r}")
        most = max(len(self.candidates[p.name]) for p in probs) if probs else 0
        if limit is not None and limit > most:  # above every problem's candidates: it would silently mean all
            raise ConfigError(
                f"--limit {limit} is above the candidates of every selected problem of list {self.name!r} "
                f"(at most {most}); expected 1..{most} (or no --limit for all)"
            )
        cands: dict[str, list[PerfConfig]] = {}
        i = 0
        for p in probs:
            kept = []
            for c in self.candidates[p.name][: limit or None]:
                if every is None or i % every == 0:
                    kept.append(c)
                i += 1
            if kept:
                cands[p.name] = kept
        probs = [p for p in probs if p.name in cands]
        if not probs:
            raise ConfigError(
                f"the selection left no candidate of list {self.name!r} (problems={problems!r}, "
                f"limit={limit!r}, every={every!r}, every_problem={every_problem!r})"
            )
        header = {
            k: v for k, v in self.header.items() if k not in ("problems", "candidates", "kernels", "unique_kernels")
        }
        return ListSpec(header, probs, cands, {p.name: self.meta.get(p.name, {}) for p in probs}, self.path)


def _where(source: str, line: int) -> str:
    return f"{source}:{line}"


def _int_field(obj: dict, key: str, where: str) -> int:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}: {key!r} must be an integer; got {shown(v)}")
    return v


def _header(obj: dict[str, Any], where: str) -> dict[str, Any]:
    """The header line, checked (format, version, known keys, fp32, string fields)."""
    if obj.get("format") != FORMAT:
        raise ConfigError(
            f'{where}: the first line must be the header {{"format": "{FORMAT}", "version": {VERSION}, ...}}; '
            f"got format {shown(obj.get('format'))}"
        )
    if obj.get("version") != VERSION or isinstance(obj.get("version"), bool):
        raise ConfigError(
            f"{where}: list format version {shown(obj.get('version'))} is not supported (this hipexplore reads {VERSION})"
        )
    unknown = sorted(k for k in obj if k not in HEADER_KEYS and not k.startswith("x_"))
    if unknown:
        raise ConfigError(
            f"{where}: unknown header key(s) {', '.join(map(shown, unknown[:8]))}; expected {', '.join(HEADER_KEYS)} "
            f"(or x_* keys of your own)"
        )
    if "dtype" in obj and obj["dtype"] != "fp32":
        raise ConfigError(f"{where}: dtype {shown(obj['dtype'])} is not supported; the replay's kernels are fp32")
    for key, limit in _HEADER_TEXT_LIMIT.items():
        if key in obj and not isinstance(obj[key], str):
            raise ConfigError(f"{where}: header {key!r} must be a string; got {shown(obj[key])}")
        if key in obj:
            check_name(obj[key], f"{where}: header {key!r}", allow_empty=key != "name", limit=limit)
    for key in ("problems", "candidates", "kernels", "unique_kernels"):
        v = obj.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ConfigError(f"{where}: header {key!r} must be a count (an integer >= 0); got {shown(v)}")
    return obj


def _row(obj: dict[str, Any], where: str) -> tuple[Problem, PerfConfig]:
    """A candidate line, checked: its problem and perf config."""
    unknown = sorted(k for k in obj if k not in ROW_KEYS and not k.startswith("x_"))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(map(shown, unknown[:8]))}; a candidate line has {', '.join(ROW_KEYS)} "
            f"(or x_* keys of your own)"
        )
    for key in ("problem", "m", "n", "k", "perf_config"):
        if key not in obj:
            raise ConfigError(f"{where}: missing {key!r} (a candidate line needs problem, m, n, k, perf_config)")
    name = obj["problem"]
    if not isinstance(name, str):
        raise ConfigError(f"{where}: 'problem' must be a string; got {shown(name)}")
    m, n, k = (_int_field(obj, key, where) for key in ("m", "n", "k"))
    epilogue = obj.get("epilogue", "none")
    if not isinstance(epilogue, str):
        raise ConfigError(f"{where}: 'epilogue' must be a string; got {shown(epilogue)}")
    if "meta" in obj and not isinstance(obj["meta"], dict):
        raise ConfigError(f"{where}: 'meta' must be an object; got {shown(obj['meta'])}")
    try:
        return Problem(name, m, n, k, epilogue), PerfConfig.parse(obj["perf_config"])
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def parse(text: str, source: str = "<list>") -> ListSpec:
    """Parse a list file's text (see the module doc); ``source`` names it in errors."""
    header: dict[str, Any] | None = None
    problems: list[Problem] = []
    by_name: dict[str, tuple[Problem, int]] = {}
    cands: dict[str, list[PerfConfig]] = {}
    seen: dict[tuple[str, str], int] = {}
    meta: dict[str, dict[str, Any]] = {}
    # JSON Lines: lines end at "\n" only (a U+2028 inside a JSON string is not a line break)
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        where = _where(source, lineno)
        if len(line) > MAX_LINE_CHARS:
            raise ConfigError(
                f"{where}: a line of {len(line)} characters; expected at most {MAX_LINE_CHARS} (one candidate per line)"
            )
        obj = load_json(line, where, hint="each line must be one JSON object")
        if not isinstance(obj, dict):
            raise ConfigError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        if header is None:
            header = _header(obj, where)
            continue
        prob, cfg = _row(obj, where)
        name = prob.name
        if name in by_name:
            first, first_line = by_name[name]
            if first != prob:
                raise ConfigError(
                    f"{where}: problem {name!r} is {prob.m}x{prob.n}x{prob.k} {prob.epilogue} here but "
                    f"{first.m}x{first.n}x{first.k} {first.epilogue} at line {first_line}"
                )
        else:
            by_name[name] = (prob, lineno)
            problems.append(prob)
            cands[name] = []
            meta[name] = dict(obj.get("meta", {}))
        key = (name, cfg.perf_config)
        if key in seen:
            raise ConfigError(f"{where}: candidate {cfg.perf_config} of problem {name!r} repeats line {seen[key]}")
        seen[key] = lineno
        cands[name].append(cfg)
    if header is None:
        raise ConfigError(
            f'{source}: empty list file (expected a header line {{"format": "{FORMAT}", ...}} and candidate lines)'
        )
    if not problems:
        raise ConfigError(f"{source}: the list has a header but no candidate lines")
    spec = ListSpec(header, problems, cands, meta, source)
    for key, have in (("problems", len(problems)), ("candidates", spec.n_candidates)):
        if key in header and header[key] != have:
            raise ConfigError(
                f"{source}: the header says {shown(header[key])} {key} but the file has {have} (truncated or edited?)"
            )
    return spec


def resolve(name_or_path: str | Path) -> Path:
    """A list file's path: an existing file, else a shipped list's name (``llama3-8b``)."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    if p.exists():
        raise ConfigError(f"--list {str(name_or_path)!r} is not a regular file")
    shipped = LISTS_DIR / f"{name_or_path}{SUFFIX}"
    if "/" not in str(name_or_path) and shipped.is_file():
        return shipped
    names = ", ".join(sorted(q.stem for q in LISTS_DIR.glob(f"*{SUFFIX}"))) if LISTS_DIR.is_dir() else "none found"
    raise ConfigError(
        f"--list {str(name_or_path)!r}: no such file, and no shipped list of that name (shipped: {names})"
    )


def read(name_or_path: str | Path) -> ListSpec:
    """Read and check a list file (a path, or a shipped list's name)."""
    path = resolve(name_or_path)
    try:
        size = path.stat().st_size
        if size > MAX_LIST_BYTES:
            raise ConfigError(
                f"list {str(path)!r} is {size} bytes; a list file is at most {MAX_LIST_BYTES} bytes "
                f"({MAX_LIST_BYTES >> 20} MiB)"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read list {str(path)!r}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); a list file is JSON Lines") from None
    spec = parse(text, str(path))
    _check_counts(spec)
    return spec


def _check_counts(spec: ListSpec) -> None:
    """The header's kernels / unique_kernels, where given, against what the list expands to."""
    want = {k: spec.header[k] for k in ("kernels", "unique_kernels") if k in spec.header}
    if not want:
        return
    have = counts(spec)
    for k, v in want.items():
        if v != have[k]:
            raise ConfigError(f"{spec.path}: the header says {v!r} {k} but the list expands to {have[k]}")


def counts(spec: ListSpec) -> dict[str, int]:
    """kernels (compiles without a cache) and unique_kernels of the list, from what each kernel
    depends on (``hxgen.kernel_key``): the same for every compiler, and what ``expand`` gives
    (tests/tuning/test_lists.py checks both on every backend), without building a request."""
    keys = [hxgen.kernel_key(role, p, c) for p, c in spec.rows() for role in hxgen.roles(p, c)]
    return {"kernels": len(keys), "unique_kernels": len(set(keys))}


def dumps(spec: ListSpec, header_extra: dict[str, Any] | None = None) -> str:
    """The list as file text (header with its counts, then one line per candidate)."""
    c = counts(spec)
    header = {"format": FORMAT, "version": VERSION, "name": spec.name}
    for key in ("model", "description", "generator"):
        if key in spec.header:
            header[key] = spec.header[key]
    header.update(header_extra or {})
    header.update({"dtype": "fp32", "problems": len(spec.problems), "candidates": spec.n_candidates, **c})
    lines = [json.dumps(header, ensure_ascii=False)]
    for p in spec.problems:
        for cfg in spec.candidates[p.name]:
            row: dict[str, Any] = {
                "problem": p.name,
                "m": p.m,
                "n": p.n,
                "k": p.k,
                "epilogue": p.epilogue,
                "perf_config": cfg.perf_config,
            }
            if spec.meta.get(p.name):
                row["meta"] = spec.meta[p.name]
            lines.append(json.dumps(row, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def write(spec: ListSpec, path: str | Path, header_extra: dict[str, Any] | None = None) -> Path:
    """Write the list to ``path`` (atomically and through no one's link: ``files.write_file``)."""
    from ..files import write_file

    return write_file(path, dumps(spec, header_extra), what="list")


def from_rows(
    name: str, rows: Iterable[tuple[Problem, Sequence[PerfConfig], dict[str, Any]]], **header: Any
) -> ListSpec:
    """A spec from (problem, configs, meta) rows (the generator's and ``--export-list``'s path)."""
    problems, cands, meta = [], {}, {}
    for prob, cfgs, m in rows:
        if prob.name in cands:
            raise ConfigError(f"problem name {prob.name!r} appears twice")
        problems.append(prob)
        cands[prob.name] = list(cfgs)
        meta[prob.name] = dict(m)
    return ListSpec({"format": FORMAT, "version": VERSION, "name": name, **header}, problems, cands, meta)


def relabel(request: Any, label: str) -> Any:
    """``request`` with another label, without validating its texts again: ``with_`` re-runs the
    request's checks (10 ms for the prelude's headers), once per list entry; the label is not part of
    the request's identity (``compare=False``), so a shallow copy with the label replaced is the
    same request."""
    import copy

    new = copy.copy(request)
    object.__setattr__(new, "label", label)
    return new


def expand(spec: ListSpec, compiler: str, target: str):  # -> TuningList
    """Every candidate of the list as the compile requests it issues, in launch order."""
    from .lists import ListEntry, TuningList

    entries: list[ListEntry] = []
    memo: dict[tuple, Any] = {}
    for prob in spec.problems:
        for cfg in spec.candidates[prob.name]:
            for role in hxgen.roles(prob, cfg):
                label = f"{prob.name}/{cfg.name}/{role}"
                key = hxgen.kernel_key(role, prob, cfg)
                base = memo.get(key)
                if base is None:  # one request per distinct kernel (Triton requests walk the kernel file)
                    base = memo[key] = hxgen.request(role, compiler, target, prob, cfg)
                entries.append(ListEntry(len(entries), prob.name, cfg.name, role, relabel(base, label)))
    distinct = tuple(dict.fromkeys(c for p in spec.problems for c in spec.candidates[p.name]))
    return TuningList(
        compiler,
        target,
        tuple(spec.problems),
        distinct,
        tuple(entries),  # type: ignore[arg-type]
        name=spec.name,
        source=spec.path,
    )


def from_builtin(tuning_list: Any) -> ListSpec:
    """The built-in transformer list (``lists.build_list``) in the file format, for
    ``--export-list``: its problems with the pointwise tail as an epilogue (act(x + bias)) and
    its tile configs as perf configs (vector width 4)."""
    epi = {"none": "bias", "relu": "bias_relu", "gelu": "bias_gelu"}
    rows = []
    for p in tuning_list.problems:
        cfgs = [PerfConfig(c.bm, c.bn, c.bk, c.tm, c.tn, 4, c.split, c.unroll) for c in tuning_list.candidates]
        rows.append((Problem(p.name, p.shape.m, p.shape.n, p.shape.k, epi[p.activation]), cfgs, {}))
    return from_rows(
        "transformer",
        rows,
        model="hipexplore's built-in transformer layer (tune-replay without --list)",
        description="exported by tune-replay --export-list",
    )


__all__ = [
    "FORMAT",
    "LISTS_DIR",
    "ListSpec",
    "VERSION",
    "counts",
    "dumps",
    "expand",
    "from_builtin",
    "from_rows",
    "parse",
    "read",
    "resolve",
    "write",
]
