"""What ``hipexplore tune-replay`` prints and keeps: the text report (the scenario table, the ideal,
the floor, the savings and the compiler's own cache in each scenario, at most 120 columns), the
``--json`` record with provenance, the ``--frame`` file, and ``--dry-run``'s account of a list.

Why a module of its own: reading a report is one job, apart from running the replay
(``cli/tune_cmd.py``); its tests build the rare lines from hand-made reports (tests/cli/test_tune_report.py).
"""

from __future__ import annotations

import argparse
import json
import math
import textwrap
from typing import Any


def dry_run_info(tlist: Any) -> dict[str, Any]:
    """What a list is, without compiling: kernels, unique kernels, per role, problems, candidates."""
    reqs = tlist.unique_requests
    return {
        "list": tlist.name or "built-in",
        "list_file": tlist.source,
        "compiler": tlist.compiler,
        "target": tlist.target,
        "problems": len(tlist.problems),
        "candidates": tlist.n_candidates,
        "kernels": tlist.kernels,
        "unique_kernels": tlist.unique_kernels,
        "repeated_kernels": tlist.kernels - tlist.unique_kernels,
        "by_role": tlist.counts_by_role(),
        "unique_source_bytes": sum(
            len(r.source.text.encode()) + sum(len(h.text.encode()) for h in r.headers) for r in reqs
        ),
        "headers_per_kernel": max((len(r.headers) for r in reqs), default=0),
    }


def dry_run(args: argparse.Namespace, tlist: Any) -> int:
    """``--dry-run``: the list's account (``dry_run_info``) as JSON or two lines; nothing compiles."""
    info = dry_run_info(tlist)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(
            f"list {info['list']}{' (' + info['list_file'] + ')' if info['list_file'] else ''}: {info['problems']} problems, "
            f"{info['candidates']} candidates -> {info['kernels']} kernels, {info['unique_kernels']} unique "
            f"({args.compiler} {tlist.target}; nothing compiled)"
        )
        print("  " + ", ".join(f"{r}: {v['kernels']} ({v['unique']} unique)" for r, v in info["by_role"].items()))
    return 0


def finish(args: argparse.Namespace, report: Any) -> int:
    """A replay's end: the ``--frame`` file (tagged, with provenance), then the JSON record or the text
    report; 1 when some compiles failed."""
    from ..provenance import collect

    out = report.to_json()
    if "worker" in report.frame.columns:
        out["workers"] = report.frame.groupby("worker").size().to_dict()
    provenance = collect(command=None)
    if args.frame:
        from ..schema import TUNING, write_parquet

        write_parquet(report.frame, args.frame, TUNING, provenance)  # tagged: the report knows it by its tag
        out["frame"] = args.frame
    if args.json:
        out["provenance"] = provenance
        print(json.dumps(out, indent=2, default=_json_default))
    else:
        print(replay_text(out, report.summary_frame()))
    return 1 if out["failed"] else 0


def _json_default(obj: Any) -> Any:
    """JSON has no NaN or infinity (null), and what it cannot hold is shown as text."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return str(obj)


def replay_text(out: dict[str, Any], summary) -> str:
    """``hipexplore tune-replay``'s text report of ``out`` and the scenario ``summary`` (public: its tests
    build the rare lines, such as a pass faster than the ideal, from a hand-made report)."""
    lines = [
        f"tune-replay  compiler={out['compiler']} target={out['target']} jobs={out['jobs']} "
        f"cache={out['cache']} isolated={out['isolated']}",
        f"list {out.get('list', 'built-in')}: {len(out['problems'])} problems, {out.get('candidates', '?')} candidates = "
        f"{out['kernels']} kernels, {out['unique_kernels']} unique",
        "  " + ", ".join(f"{r}: {v['kernels']} ({v['unique']} unique)" for r, v in out["by_role"].items()),
        "",
    ]
    cols = [
        "scenario",
        "jobs",
        "lookups",
        "compiles",
        "memory_hits",
        "disk_hits",
        "remote_hits",
        "joins",
        "failed",
        "seconds",
        "compile_seconds",
        "seconds_saved",
    ]
    shown = [
        "scenario",
        "jobs",
        "lookups",
        "compiles",
        "mem_hits",
        "disk_hits",
        "remote",
        "joins",
        "failed",
        "seconds",
        "compile_s",
        "saved_s",
    ]  # short headers: the table fits 120 columns (--json has the full names)
    lines.append(summary[cols].to_string(index=False, header=shown, float_format=lambda v: f"{v:.3f}"))
    ideal = f"{out['seconds_ideal']:.3f}" if out.get("seconds_ideal") is not None else "not measured"
    floor = f"{out['seconds_floor']:.3f}" if out.get("seconds_floor") is not None else "-"
    lines += [
        "",
        f"seconds {out['seconds']:.3f}  ideal pass {ideal}  floor {floor}  "
        f"without cache {out['seconds_without_cache']:.3f} ({out['seconds_without_cache_source']})",
    ]
    if out.get("overhead_vs_ideal") is not None:
        over = out["overhead_vs_ideal"]
        lines.append(f"vs ideal: {100 * over:+.1f}%   speed-up vs no cache: {out['speedup_vs_without_cache']:.2f}x")
        if over < 0:
            lines.append(
                "  (negative: this pass was faster than the ideal pass. The ideal pass is a measured run of each "
                "unique compile, not a bound; timing noise and compiler state warmed by earlier passes can put "
                "a cached pass below it: read it as 'at the ideal'; the floor is the bound)"
            )
    if out.get("ratio_vs_floor") is not None:
        lines.append(
            f"vs floor: {out['ratio_vs_floor']:.3f}x (floor: each unique kernel's fastest measured compile, "
            f"summed over {out['floor_kernels']} kernels from {out['floor_compiles_measured']} compiles, / jobs)"
        )
    if out.get("seconds_saved") is not None:
        lines.append(
            f"saved: {out['seconds_saved']:.3f} s of wall time (without cache - with cache; quote this one). "
            f"Recorded compile time of the hits: {out['seconds_saved_recorded']:.3f} s (serial-equivalent)"
        )
    lines += own_cache_lines(out)
    if out["failed"]:
        lines.append(f"FAILED compiles: {out['failed']} (see the frame's error column)")
    # at most 120 columns: long sentences go on over indented lines (the table is narrower)
    return "\n".join(
        part
        for line in lines
        for part in (textwrap.wrap(line, 120, subsequent_indent="    ", break_on_hyphens=False) or [""])
    )


def own_cache_lines(out: dict[str, Any]) -> list[str]:
    """The compiler's own cache in each scenario, each scenario's pass walls, and the savings against
    every cache off and beyond the compiler's own cache with their 95% intervals (at most 120 columns)."""
    from ..tuning.savings import interval_text

    own = out.get("compiler_cache_by_scenario") or {}
    legend = {label: chr(ord("a") + i) for i, label in enumerate(dict.fromkeys(own.values()))}
    lines = [
        "",
        f"the compiler's own cache (HIPEXPLORE_COMPILER_CACHE={out.get('compiler_cache_setting', 'default')}), "
        f"and each scenario's passes (wall s):",
    ]
    for label, mark in legend.items():
        lines.append(f"  ({mark}) {label}")
    for name, walls in (out.get("pass_walls") or {}).items():
        shown = " ".join(f"{w:.3f}" for w in walls[:8]) + (f" ... ({len(walls)})" if len(walls) > 8 else "")
        lines.append(f"  {name:<15} ({legend.get(own.get(name, ''), '-')})  {shown}")
    names = (
        ("saved_vs_cold", "saved vs cold (every compiler cache off)"),
        ("saved_beyond_compiler_cache", "saved beyond the compiler's own cache"),
        ("warm_beyond_compiler_cache", "both caches warm"),
        ("memory_vs_ideal", "memory / ideal"),
    )
    for key, title in names:
        c = out.get(key)
        if not c:
            how = "--cache disk or all with --passes N" if key == "warm_beyond_compiler_cache" else "--passes N"
            lines.append(f"{title}: not measured (tune-replay {how} measures it)")
            continue
        ratio = f"{c['scenario']} / {c['base']} " if key != "memory_vs_ideal" else ""
        seconds = "" if key == "memory_vs_ideal" else f"{interval_text(c)}; "
        lines.append(f"{title}: {seconds}{ratio}{interval_text(c, 'ratio')}, {c['passes'][0]}+{c['passes'][1]} passes")
    return lines
