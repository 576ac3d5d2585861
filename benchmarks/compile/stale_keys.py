"""Where each cache is wrong: hipexplore's stale-key cases against NVRTC's own cache and hipexplore's (issue 45, item 4).

Each case compiles a kernel whose output depends on an input outside its source text, changes that
input, and compiles again, the way a user's flow would: every compile a new process (a tuning
script run again), NVRTC reading its headers itself (``--include-path``, the current directory).

  header-edited     a header edited in place (``#include "cfg.h"`` beside the source)
  header-shadowed   a new header earlier on the include path shadowing the old one (-I A -I B)
  define-from-env   a ``-D`` the flow takes from the environment (NVRTC itself reads no variable that
                    adds one: ``compile/inputs.py``)
  symlink-swapped   the include folder is a symbolic link, swapped to another version's folder
  clock-macro       ``__TIME__`` (``__DATE__`` the same, a day later), compiled again 1.1 s later
  compiler-upgrade  the same source through another libnvrtc (``--other-nvrtc PATH``; not staged without)

Against:
  nvrtc-own   NVRTC's own cache (on, in a private CUDA_CACHE_PATH, ``--enable-cache-trace``), called
              directly (ctypes on libnvrtc: any library file can be the compiler). It needs a loaded
              CUDA driver: on a host without one it is inert and every row says so (``live`` false).
  hipexplore  ``hipexplore compile ... --json`` with its disk tier in a private folder and NVRTC's
              own cache off (HIPEXPLORE_COMPILER_CACHE=off), so each cache is tested alone.

Each row: the binary of the first compile, of the second, and of a reference (the changed inputs
compiled with no cache at all). ``stale``: the second equals the first while the reference
differs; ``correct``: the second equals the reference; ``not observable``: the change does not
change the binary. Writes OUT/stale_keys.json (rows, provenance) and OUT/stale_keys.parquet;
``scripts/gen_docs.py`` renders the recorded run in docs/guide/cache.md.

Usage:
  .venv/bin/python benchmarks/compile/stale_keys.py --out DIR                     # this host (NVRTC's cache inert)
  python3 benchmarks/compile/stale_keys.py --out DIR [--other-nvrtc LIB]        # a GPU host: the real answer
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

CASES = ("header-edited", "header-shadowed", "define-from-env", "symlink-swapped", "clock-macro", "compiler-upgrade")
KERNEL = """#include {include}
extern "C" __global__ void stamp(int* out) {{ out[threadIdx.x] = VALUE; }}
"""
CLOCK = """__device__ const char when[] = __TIME__;
extern "C" __global__ void stamp(char* out) { out[threadIdx.x] = when[threadIdx.x % 8]; }
"""
DEFINE = """extern "C" __global__ void stamp(int* out) { out[threadIdx.x] = VALUE; }
"""


# -- one NVRTC compile, in a process of its own ------------------------------------------------------
def nvrtc_once(lib: str, source: str, name: str, options: list[str]) -> dict[str, Any]:
    """Compile through the libnvrtc at ``lib`` (ctypes: the library file is the compiler)."""
    nv = ctypes.CDLL(lib)
    prog = ctypes.c_void_p()
    status = nv.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    status = status or nv.nvrtcCompileProgram(prog, len(options), opts)
    size = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value or 1)
    nv.nvrtcGetProgramLog(prog, log)
    binary = b""
    if status == 0:
        nv.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        nv.nvrtcGetCUBIN(prog, buf)
        binary = buf.raw
    nv.nvrtcDestroyProgram(ctypes.byref(prog))
    return {
        "status": int(status),
        "sha256": hashlib.sha256(binary).hexdigest() if binary else "",
        "log": log.value.decode("utf-8", "replace"),
    }


def _nvrtc_child(lib: str, work: Path, source: str, options: list[str], env: dict[str, str]) -> dict[str, Any]:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import stale_keys as s; "
        "r = s.nvrtc_once(sys.argv[2], sys.argv[3], 'k.cu', json.loads(sys.argv[4])); print('\\nHXJSON ' + json.dumps(r))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), lib, source, json.dumps(options)],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("HXJSON ")), None)
    if line is None:
        return {"status": -1, "sha256": "", "log": (proc.stderr or proc.stdout)[-500:], "trace": ""}
    out = json.loads(line[7:])
    trace = [
        x
        for x in (proc.stdout + proc.stderr + out["log"]).splitlines()
        if not x.startswith("HXJSON ")
        and ("nvrtc cache" in x.lower() or "driver cache" in x.lower() or "cache miss" in x.lower())
    ]
    out["trace"] = "\n".join(dict.fromkeys(trace))[-800:]
    return out


def _hipexplore_child(work: Path, source_file: str, flags: list[str], env: dict[str, str]) -> dict[str, Any]:
    out_file = work.parent / f"out-{time.time_ns()}.cubin"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hipexplore",
            "compile",
            source_file,
            "--compiler",
            "nvrtc",
            "--target",
            TARGET,
            *flags,
            "--json",
            "--out",
            str(out_file),
        ],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if proc.returncode != 0:
        return {"status": proc.returncode, "sha256": "", "outcome": "error", "log": proc.stderr.strip()[-500:]}
    report = json.loads(proc.stdout)
    data = out_file.read_bytes()
    out_file.unlink()
    return {
        "status": 0,
        "sha256": hashlib.sha256(data).hexdigest(),
        "outcome": report["outcome"],
        "compiler_cache": report.get("compiler_cache", ""),
    }


TARGET = "sm_90"


# -- the cases ------------------------------------------------------------------------------------------
class Case:
    """A case's files in ``work``: ``prepare`` writes the first version, ``change`` makes the second;
    ``source``/``nvrtc_options``/``flags`` say how each cache is asked."""

    def __init__(self, name: str, work: Path) -> None:
        self.name, self.work = name, work
        self.include = '"cfg.h"'
        self.nvrtc_options: list[str] = []
        self.flags: list[str] = []
        self.env: dict[str, str] = {}
        self.text = ""

    def header(self, folder: Path, value: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "cfg.h").write_text(f"#define VALUE {value}\n")

    def prepare(self) -> None:
        w = self.work
        if self.name == "header-edited":
            self.header(w, 1)
        elif self.name == "header-shadowed":
            self.include = "<cfg.h>"
            self.header(w / "B", 1)
            (w / "A").mkdir()
            self.nvrtc_options = ["--include-path=A", "--include-path=B"]
            self.flags = ["-I", "A", "-I", "B"]
        elif self.name == "symlink-swapped":
            self.include = "<cfg.h>"
            self.header(w / "v1", 1)
            self.header(w / "v2", 2)
            (w / "inc").symlink_to("v1")
            self.nvrtc_options, self.flags = ["--include-path=inc"], ["-I", "inc"]
        elif self.name == "define-from-env":
            self.env = {"HX_VALUE": "1"}
        self.text = (
            CLOCK
            if self.name == "clock-macro"
            else DEFINE
            if self.name == "define-from-env"
            else KERNEL.format(include=self.include)
        )
        (w / "k.cu").write_text(self.text)

    def change(self) -> None:
        w = self.work
        if self.name == "header-edited":
            self.header(w, 2)
        elif self.name == "header-shadowed":
            self.header(w / "A", 2)
        elif self.name == "symlink-swapped":
            (w / "inc.new").symlink_to("v2")
            os.replace(w / "inc.new", w / "inc")
        elif self.name == "define-from-env":
            self.env = {"HX_VALUE": "2"}
        elif self.name == "clock-macro":
            time.sleep(1.1)

    def defines(self) -> list[str]:
        return [f"-DVALUE={self.env['HX_VALUE']}"] if "HX_VALUE" in self.env else []


def verdict(first: dict, second: dict, reference: dict, clock: bool = False) -> str:
    """``stale``/``correct``/``not observable``/``wrong``/``error``. A clock macro's reference is the
    second compile itself (a later compile expands a later time): stale when it equals the first."""
    if clock and first.get("sha256") and second.get("sha256"):
        return "stale" if second["sha256"] == first["sha256"] else "correct"
    if not (first.get("sha256") and second.get("sha256") and reference.get("sha256")):
        return "error"
    if reference["sha256"] == first["sha256"]:
        return "not observable"
    if second["sha256"] == reference["sha256"]:
        return "correct"
    return "stale" if second["sha256"] == first["sha256"] else "wrong"


def run_case(name: str, base: Path, lib: str, other: str, env: dict[str, str]) -> list[dict[str, Any]]:
    """The case against both caches; a fresh folder (and fresh caches) for each."""
    rows = []
    for cache in ("nvrtc-own", "hipexplore"):
        if name == "compiler-upgrade" and not other:
            rows.append(
                {
                    "case": name,
                    "cache": cache,
                    "verdict": "not staged",
                    "why": "no second libnvrtc given (--other-nvrtc PATH)",
                }
            )
            continue
        work = base / f"{name}-{cache}" / "work"
        work.mkdir(parents=True)
        case = Case(name, work)
        case.prepare()
        ask = _asker(case, cache, lib, other, env, base / f"{name}-{cache}")
        first = ask("first")
        case.change()
        second = ask("second")
        reference = ask("reference")
        rows.append(
            {
                "case": name,
                "cache": cache,
                "verdict": verdict(first, second, reference, name == "clock-macro"),
                "first": first,
                "second": second,
                "reference": reference,
            }
        )
    return rows


def _asker(case: Case, cache: str, lib: str, other: str, env: dict[str, str], root: Path) -> Callable[[str], dict]:
    nv_cache = root / "nv-cache"
    hx_cache = root / "hx-cache"

    def ask(which: str) -> dict[str, Any]:
        use_lib = other if case.name == "compiler-upgrade" and which != "first" else lib
        if cache == "nvrtc-own":
            opts = [f"-arch={TARGET}", *case.nvrtc_options, *case.defines(), "--enable-cache-trace"]
            if which == "reference":
                opts.append("--no-cache")
            child_env = {**env, "CUDA_CACHE_PATH": str(nv_cache)}
            return _nvrtc_child(use_lib, case.work, case.text, opts, child_env)
        if case.name == "compiler-upgrade":  # hipexplore's key holds the library's stamp: asked by key
            return _by_key(use_lib, which)
        child_env = {
            **env,
            "HIPEXPLORE_CACHE_DIR": str(hx_cache if which != "reference" else root / f"ref-{time.time_ns()}"),
            "HIPEXPLORE_COMPILER_CACHE": "off",
        }
        return _hipexplore_child(
            case.work, "k.cu", [*case.flags, *(f"--option={d}" for d in case.defines())], child_env
        )

    return ask


def _by_key(lib: str, which: str) -> dict[str, Any]:
    from hipexplore.compile._common import file_stamp

    return {"status": 0, "sha256": hashlib.sha256(file_stamp(lib).encode()).hexdigest(), "outcome": f"key ({which})"}


# -- the docs table (scripts/gen_docs.py) ----------------------------------------------------------------
DESCRIBED = {
    "header-edited": "a header edited in place",
    "header-shadowed": "a new header earlier on the include path",
    "define-from-env": "a `-D` the flow takes from the environment",
    "symlink-swapped": "a symlinked header folder swapped",
    "clock-macro": "`__TIME__` (`__DATE__` a day later)",
    "compiler-upgrade": "a compiler upgrade",
}


def recorded(folder: Path) -> tuple[Path, dict] | None:
    """The run the docs show: the latest recorded where NVRTC's cache was live (a GPU host), else the latest."""
    runs = []
    for path in sorted(folder.glob("*/stale_keys.json")):
        data = json.loads(path.read_text())
        runs.append((bool(data.get("live")), data.get("provenance", {}).get("date", ""), path, data))
    if not runs:
        return None
    _live, _date, path, data = max(runs, key=lambda r: (r[0], r[1]))
    return path, data


def _cell(row: dict | None, live: bool) -> str:
    if row is None:
        return "-"
    text = row["verdict"]
    second = row.get("second") or {}
    if row["cache"] == "hipexplore" and second.get("outcome"):
        text += f" ({second['outcome']})"
    elif row["cache"] == "nvrtc-own" and row["verdict"] in ("correct", "stale"):
        trace = second.get("trace", "")
        served = "retrieved cached" in trace.lower()
        text += " (served from its cache)" if served else (" (inert here: no driver)" if not live else "")
    if row.get("why"):
        text += f": {row['why']}"
    return text


def markdown_table(folder: Path, repo: Path) -> str:
    """The comparison table of the recorded run under ``folder`` (docs/guide/cache.md)."""
    found = recorded(folder)
    if found is None:
        return "No run recorded yet (`benchmarks/compile/stale_keys.py --out DIR`)."
    path, data = found
    prov = data.get("provenance", {})
    where = (
        "a GPU host: NVRTC's cache live"
        if data.get("live")
        else "a host without a CUDA driver: NVRTC's cache inert, its column says nothing yet"
    )
    # the script as the repository names it: the recording host's checkout was elsewhere (the device's copy)
    command = " ".join(
        "python3"
        if i == 0
        else "benchmarks/" + w.split("/benchmarks/", 1)[1]
        if w.startswith("/") and "/benchmarks/" in w
        else w
        for i, w in enumerate(prov.get("command", "").split())
    )
    card = ""  # the GPU, as the folder's MANIFEST.md names it (the run records the host's provenance only)
    manifest = path.parent / "MANIFEST.md"
    if manifest.is_file():
        card = next(
            (
                line.split(":", 1)[1].split("(")[0].strip() + ", "
                for line in manifest.read_text().splitlines()
                if line.startswith("- device:")
            ),
            "",
        )
    lines = [
        f"Recorded by `{command}` on {where} ({card}{prov.get('cpu', '')}; NVRTC {prov.get('compiler.nvrtc', '')}; "
        f"revision `{prov.get('git_revision', '')[:12]}`, {prov.get('date', '')}; `{path.relative_to(repo)}`).",
        "",
        "| the input that changed | NVRTC's own cache | hipexplore's cache |",
        "|---|---|---|",
    ]
    by = {(r["case"], r["cache"]): r for r in data["rows"]}
    for case in CASES:
        if (case, "nvrtc-own") in by or (case, "hipexplore") in by:
            lines.append(
                f"| {DESCRIBED[case]} | {_cell(by.get((case, 'nvrtc-own')), bool(data.get('live')))} | "
                f"{_cell(by.get((case, 'hipexplore')), True)} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--other-nvrtc", default="", help="a second libnvrtc.so (another version) for compiler-upgrade")
    args = p.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        print(f"stale_keys: unknown case {unknown[0]!r}; expected some of {', '.join(CASES)}", file=sys.stderr)
        return 2
    from hipexplore.compile import compiler_cache
    from hipexplore.compile.nvrtc import NvrtcCompiler
    from hipexplore.provenance import collect

    lib = NvrtcCompiler().library_path()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_CACHE", "HIPEXPLORE_COMPILER_CACHE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hx-stale-") as tmp:
        for name in cases:
            rows += run_case(name, Path(tmp), lib, args.other_nvrtc, env)
            print(
                f"stale_keys: {name}: " + ", ".join(f"{r['cache']} {r['verdict']}" for r in rows if r["case"] == name),
                file=sys.stderr,
            )
    record = {
        "rows": rows,
        "live": compiler_cache.driver_present(),
        "nvrtc": lib,
        "other_nvrtc": args.other_nvrtc,
        "target": TARGET,
        "provenance": collect(command=[sys.executable, *sys.argv]),
    }
    (out / "stale_keys.json").write_text(json.dumps(record, indent=1))
    import pandas as pd

    flat = [
        {
            "case": r["case"],
            "cache": r["cache"],
            "verdict": r["verdict"],
            **{
                f"{w}_{k}": str(r.get(w, {}).get(k, ""))
                for w in ("first", "second", "reference")
                for k in ("sha256", "outcome", "trace")
            },
        }
        for r in rows
    ]
    pd.DataFrame(flat).to_parquet(out / "stale_keys.parquet")
    return 0


if __name__ == "__main__":
    sys.exit(main())
