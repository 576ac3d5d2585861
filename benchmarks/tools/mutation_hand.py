"""A hand-written sample of realistic bugs ("mutants"), each applied alone to a copy of the tree and
run against the test files that own the code it breaks (issue 39, item 5).

Why a hand sample beside mutmut (pyproject's [tool.mutmut] notes): mutmut's fork runner deadlocks on
this project's threaded fixtures and runs at ~0.1 mutants/s on the 2-core VM (BENCHMARKS.md,
"Mutation testing"); a reviewer's question is narrower — *would a bug a person plausibly writes in
the verdict statistics, the units, the records and the cache be caught?* Each mutant below is one
such bug: a sign, a bound, a level, a dropped step, an inverted ratio. A mutant is *killed* when the
selected tests fail (exit 1) or time out, *survives* when they pass, and is *not applicable* when its
text is no longer in the module (the code moved: say so, never count it).

The test selection names test files by their basename; a file moved since ``--base`` (the revision
the mutants were written against) is found by git's rename detection, so one list serves the tree
before and after the suite's move into folders. A listed file that does not exist (yet) is left
out: the selections name the files that own the module's tests, new ones included, so a tree with
fewer test files runs fewer.

    python benchmarks/tools/mutation_hand.py --out DIR [--only ID,...] [--base REV] [--timeout 300]

Writes DIR/mutation_hand.json (one record per mutant: id, module, bug, tests, status, seconds) and
prints one line per mutant, then the score (killed / applicable).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASE = "8ee3550"  # the revision the mutants' texts were taken from

# (id, module, old text, new text, the bug in words, test files by basename); ALTERNATES: the same
# bug's text in code that was rewritten after BASE (tried when the first text is gone)
MUTANTS: list[tuple[str, str, str, str, str, tuple[str, ...]]] = [
    # -- the verdict rule and its intervals (hipexplore/verdict_rule.py, verdict_row.py, verdict_drift.py) --
    (
        "v-faster-sign",
        "hipexplore/verdict_rule.py",
        "    if high < 1 - threshold:\n",
        "    if high < 1 + threshold:\n",
        "faster when the interval lies below +threshold (sign)",
        (
            "test_verdicts.py",
            "test_verdict_rule.py",
            "test_verdict_answers.py",
            "test_verdict_intervals.py",
            "test_verdict_drift.py",
        ),
    ),
    (
        "v-same-or",
        "hipexplore/verdict_rule.py",
        "if low >= 1 - threshold and high <= 1 + threshold:",
        "if low >= 1 - threshold or high <= 1 + threshold:",
        "same when either bound is inside",
        (
            "test_verdicts.py",
            "test_verdict_rule.py",
            "test_verdict_answers.py",
            "test_verdict_intervals.py",
            "test_verdict_drift.py",
        ),
    ),
    (
        "v-units-only",
        "hipexplore/verdict_row.py",
        "lo, hi = min(c_lo, lv.low), max(c_hi, lv.high)",
        "lo, hi = lv.low, lv.high",
        "the decision interval is the units' alone, not the wider of units and chunks",
        (
            "test_verdicts.py",
            "test_verdict_row.py",
            "test_verdict_answers.py",
            "test_verdict_intervals.py",
            "test_verdict_drift.py",
        ),
    ),
    (
        "v-one-process",
        "hipexplore/verdict_row.py",
        "decision_interval(lv, new, base, (c_lo, c_hi) if one_process else None)",
        "decision_interval(lv, new, base, None)",
        "units that shared one process decide on the units' interval alone (the CI false call of 2026-12-06)",
        (
            "test_verdicts.py",
            "test_verdict_row.py",
            "test_levels.py",
            "test_verdict_intervals.py",
            "test_verdict_answers.py",
        ),
    ),
    (
        "v-separate-level",
        "hipexplore/verdict_row.py",
        "max(level, SEPARATE_RUNS_LEVEL) if separate else level",
        "level",
        "separate runs decided at 95%, not at SEPARATE_RUNS_LEVEL",
        (
            "test_verdicts.py",
            "test_verdict_row.py",
            "test_verdict_answers.py",
            "test_verdict_intervals.py",
            "test_verdict_drift.py",
        ),
    ),
    (
        "v-separate-constant",
        "hipexplore/verdict_row.py",
        "SEPARATE_RUNS_LEVEL = 0.99",
        "SEPARATE_RUNS_LEVEL = 0.95",
        "the separate-run level lowered",
        (
            "test_verdicts.py",
            "test_verdict_row.py",
            "test_verdict_answers.py",
            "test_verdict_intervals.py",
            "test_verdict_drift.py",
        ),
    ),
    (
        "v-center",
        "hipexplore/verdict_row.py",
        "        ratio = lv.center  #",
        "        ratio = new.median / base.median  #",
        "the reported ratio the pooled medians', not the units' combination",
        (
            "test_verdicts.py",
            "test_verdict_row.py",
            "test_verdict_answers.py",
            "test_verdict_intervals.py",
            "test_verdict_drift.py",
        ),
    ),
    (
        "v-min-detectable",
        "hipexplore/verdict_row.py",
        '"min_detectable": threshold + half',
        '"min_detectable": half',
        "the smallest callable change without the threshold",
        (
            "test_verdicts.py",
            "test_verdict_row.py",
            "test_headline.py",
            "test_verdict_answers.py",
            "test_verdict_intervals.py",
        ),
    ),
    (
        "v-interleaved-or",
        "hipexplore/verdict_row.py",
        "a.min() < b.max() and b.min() < a.max()",
        "a.min() < b.max() or b.min() < a.max()",
        "two runs one after the other taken for an interleaved pair",
        (
            "test_verdicts.py",
            "test_verdict_row.py",
            "test_verdict_answers.py",
            "test_verdict_intervals.py",
            "test_verdict_drift.py",
        ),
    ),
    (
        "v-paired-side",
        "hipexplore/verdict_row.py",
        "mn = np.median(np.concatenate([wins[i][1] for i in pick]))",
        "mn = np.median(np.concatenate([wins[i][0] for i in pick]))",
        "the paired bootstrap reads the base side twice",
        (
            "test_verdicts.py",
            "test_verdict_row.py",
            "test_verdict_answers.py",
            "test_verdict_intervals.py",
            "test_verdict_drift.py",
        ),
    ),
    (
        "v-drift-size",
        "hipexplore/verdict_drift.py",
        "if abs(last - first) <= threshold / 2:",
        "if abs(last - first) <= threshold:",
        "a drift must exceed the whole threshold, not half of it",
        ("test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py", "test_verdict_drift.py"),
    ),
    (
        "v-drift-min",
        "hipexplore/verdict_drift.py",
        "if len(keep) < 9:",
        "if len(keep) < 90:",
        "the drift check needs 90 windows (never runs on short runs)",
        ("test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py", "test_verdict_drift.py"),
    ),
    (
        "v-drift-p",
        "hipexplore/verdict_drift.py",
        "DRIFT_P = 0.001",
        "DRIFT_P = 0.5",
        "any trend undoes a verdict",
        ("test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py", "test_verdict_drift.py"),
    ),
    # -- between-unit intervals (hipexplore/bench/levels.py) ---------------------------------------
    (
        "l-quantile",
        "hipexplore/bench/levels.py",
        "q = student_t_quantile(1 - (1 - level) / 2,",
        "q = student_t_quantile(level,",
        "a one-sided quantile for a two-sided interval",
        ("test_levels.py", "test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py"),
    ),
    (
        "l-paired-se",
        "hipexplore/bench/levels.py",
        "se = float(np.std(logs, ddof=1)) / math.sqrt(logs.size)",
        "se = float(np.std(logs, ddof=1)) / logs.size",
        "standard error over n, not sqrt(n)",
        ("test_levels.py", "test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py"),
    ),
    (
        "l-welch-upside-down",
        "hipexplore/bench/levels.py",
        "_t_bounds(float(np.mean(ln) - np.mean(lb)), se, df, level)",
        "_t_bounds(float(np.mean(lb) - np.mean(ln)), se, df, level)",
        "separate-run interval of base/new (upside down)",
        ("test_levels.py", "test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py"),
    ),
    (
        "l-welch-df",
        "hipexplore/bench/levels.py",
        "(vn ** 2 / (ln.size - 1) if vn else 0.0)",
        "(vn ** 2 / ln.size if vn else 0.0)",
        "Welch-Satterthwaite with n instead of n - 1",
        ("test_levels.py", "test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py"),
    ),
    (
        "l-welch-var",
        "hipexplore/bench/levels.py",
        "se = math.sqrt(vn + vb)",
        "se = math.sqrt(max(vn, vb))",
        "only the larger side's variance",
        ("test_levels.py", "test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py"),
    ),
    (
        "l-min-units",
        "hipexplore/bench/levels.py",
        "MIN_UNITS = 2",
        "MIN_UNITS = 1",
        "a verdict from one unit (chunks of one placement)",
        ("test_levels.py", "test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py"),
    ),
    (
        "l-window-size",
        "hipexplore/bench/levels.py",
        "min(base.n, new.n) ** (1 / 3)",
        "min(base.n, new.n) ** (1 / 2)",
        "windows of sqrt(n) samples, not n^(1/3)",
        ("test_levels.py", "test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py"),
    ),
    (
        "l-trend-sign",
        "hipexplore/bench/levels.py",
        "return s / (n * (n - 1) / 2), p",
        "return -s / (n * (n - 1) / 2), p",
        "Kendall's tau with the wrong sign",
        ("test_levels.py", "test_verdicts.py", "test_verdict_answers.py", "test_verdict_intervals.py"),
    ),
    # -- units (hipexplore/bench/units.py) ---------------------------------------------------------
    (
        "u-split-remainder",
        "hipexplore/bench/units.py",
        "share = rule.iterations // units + (1 if k < rule.iterations % units else 0)",
        "share = rule.iterations // units",
        "a fixed count split among units loses the remainder",
        ("test_units.py", "test_passes.py", "test_unit_draws.py"),
    ),
    (
        "u-widen",
        "hipexplore/bench/units.py",
        "widen = math.sqrt(units)",
        "widen = float(units)",
        "an adaptive unit's targets widened by units, not sqrt(units)",
        ("test_units.py", "test_passes.py", "test_unit_draws.py"),
    ),
    (
        "u-shares",
        "hipexplore/bench/units.py",
        "return lo + 1 if spec.stop.adaptive and hi > lo else lo",
        "return lo",
        "no share kept for the extra units",
        ("test_units.py", "test_passes.py", "test_unit_draws.py"),
    ),
    (
        "u-reference-share",
        "hipexplore/bench/units.py",
        "reference_samples=max(1, math.ceil(spec.reference_samples / units))",
        "reference_samples=spec.reference_samples",
        "every unit takes the whole cold reference",
        ("test_units.py", "test_passes.py", "test_unit_draws.py"),
    ),
    (
        "u-wide-sign",
        "hipexplore/bench/units.py",
        "        if half > target:\n",
        "        if half < target:\n",
        "extra units for the narrow configurations",
        ("test_units.py", "test_passes.py", "test_unit_draws.py"),
    ),
    (
        "u-extra-budget",
        "hipexplore/bench/units.py",
        'self.spent["planned"] * (1 + EXTRA_BUDGET)',
        'self.spent["planned"] * (2 + EXTRA_BUDGET)',
        "extras may cost twice the planned units",
        ("test_units.py", "test_passes.py", "test_unit_draws.py"),
    ),
    (
        "u-extra-rule",
        "hipexplore/bench/units.py",
        "unit_spec(self.spec, self.lo, k % self.lo, self.share), k, done",
        "unit_spec(self.spec, self.lo, 0, self.share), k, done",
        "every extra unit takes unit 0's share",
        ("test_units.py", "test_passes.py", "test_unit_draws.py"),
    ),
    (
        "u-interleave-pairs",
        "hipexplore/bench/units.py",
        "out = {c._replace(kernel=n) for c in out for n in names}",
        "out = set(out)",
        "an interleaved run's extra unit measures one kernel of the pair",
        ("test_units.py", "test_passes.py", "test_unit_draws.py"),
    ),
    # -- medians and their intervals (hipexplore/bench/stats.py) -----------------------------------
    (
        "s-grid-half",
        "hipexplore/bench/stats.py",
        "        half = self.resolution / 2\n",
        "        half = 0.0\n",
        "a median's interval not widened by the timer's grid",
        ("test_stats.py", "test_stats_truth.py"),
    ),
    (
        "s-ratio-seed",
        "hipexplore/bench/stats.py",
        "b = base.bootstrap_medians(resamples, seed=seed + 1)",
        "b = base.bootstrap_medians(resamples, seed=seed)",
        "both sides of a ratio resampled with one seed",
        ("test_stats.py", "test_stats_truth.py", "test_pass_intervals.py"),
    ),
    (
        "s-ratio-passes",
        "hipexplore/bench/stats.py",
        "lo, hi = min(float(lo), point - t_half), max(float(hi), point + t_half)",
        "lo, hi = float(lo), float(hi)",
        "a ratio's interval ignores the passes' t-interval",
        ("test_stats.py", "test_pass_intervals.py", "test_passes.py"),
    ),
    (
        "s-ci-hits",
        "hipexplore/bench/stats.py",
        "if self.last_ci_rel <= rule.target_ci else 0",
        "if self.last_ci_rel <= rule.target_ci else self._ci_hits",
        "one lucky interval counts forever",
        ("test_stats.py", "test_stop_flags.py"),
    ),
    (
        "s-t-symmetry",
        "hipexplore/bench/stats.py",
        "return -student_t_quantile(1 - p, df)",
        "return student_t_quantile(1 - p, df)",
        "a lower quantile returned positive",
        ("test_stats.py", "test_pass_intervals.py"),
    ),
    (
        "s-median-ci-passes",
        "hipexplore/bench/stats.py",
        "low, high = min(float(low), self.median * math.exp(-t_half)), max(float(high), self.median * math.exp(t_half))",
        "low, high = float(low), float(high)",
        "a median's interval ignores its passes",
        ("test_stats.py", "test_pass_intervals.py", "test_passes.py"),
    ),
    # -- the rotating plan (hipexplore/bench/rotating.py) ------------------------------------------
    (
        "r-auto",
        "hipexplore/bench/rotating.py",
        "return max(2, 2 * math.ceil(llc_bytes / footprint_bytes))",
        "return max(2, math.ceil(llc_bytes / footprint_bytes))",
        "auto covers the LLC once, not twice",
        ("test_bench.py", "test_devices.py"),
    ),
    (
        "r-cap",
        "hipexplore/bench/rotating.py",
        "    if want > fits:\n",
        "    if want > fits + 1:\n",
        "one set more than the memory cap allows",
        ("test_bench.py", "test_devices.py"),
    ),
    (
        "r-rotation",
        "hipexplore/bench/rotating.py",
        "return [i % count for i in range(iterations)]",
        "return [i % max(1, count - 1) for i in range(iterations)]",
        "the last buffer set never used",
        ("test_bench.py", "test_devices.py", "test_timers.py"),
    ),
    # -- the compile cache's key (hipexplore/compile/request.py) -----------------------------------
    (
        "k-options-sorted",
        "hipexplore/compile/request.py",
        '"options": list(self.options),',
        '"options": sorted(self.options),',
        "option order (which matters to compilers) left out of the key",
        ("test_cache_keys.py", "test_request.py"),
    ),
    (
        "k-no-mode",
        "hipexplore/compile/request.py",
        '            "mode": self.mode,\n',
        "",
        "the compile mode left out of the key",
        ("test_cache_keys.py", "test_request.py"),
    ),
    (
        "k-no-target",
        "hipexplore/compile/request.py",
        '            "target": self.target,\n',
        "",
        "the target architecture left out of the key",
        ("test_cache_keys.py", "test_request.py"),
    ),
    # -- durable records (hipexplore/bench/record.py, hipexplore/files.py) --------------------------
    (
        "rec-remerge",
        "hipexplore/bench/record.py",
        "if c not in self.results or int(self.results[c].run.passes or 1) != len(self.units[c]):",
        "if c not in self.results:",
        "a kill between the units file and the summary leaves a stale merged row",
        ("test_passes.py", "test_orchestrator.py"),
    ),
    (
        "f-guessable-temp",
        "hipexplore/files.py",
        'return f".{name[:120]}.{secrets.token_hex(8)}.tmp"',
        'return f".{name[:120]}.tmp"',
        "a temp name another user can guess",
        ("test_files.py", "test_security_writes.py"),
    ),
    (
        "f-no-excl",
        "hipexplore/files.py",
        "os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW",
        "os.O_WRONLY | os.O_CREAT | _NOFOLLOW",
        "a temp file opened without O_EXCL",
        ("test_files.py", "test_security_writes.py"),
    ),
    # -- counters and the rotating need -------------------------------------------------------------
    (
        "c-cold-at",
        "hipexplore/bench/counters/record.py",
        "COLD_AT = 0.9",
        "COLD_AT = 0.5",
        "half the inputs from memory called cold",
        ("test_counters.py", "test_rotating_need.py"),
    ),
    (
        "rn-plateau",
        "hipexplore/rotating_need.py",
        'near = ((rows["median_s"] - most).abs() <= PLATEAU_REL * most).to_numpy()',
        'near = ((rows["median_s"] - most).abs() <= PLATEAU_REL).to_numpy()',
        "the plateau's band in seconds, not relative",
        ("test_rotating_need.py",),
    ),
]


ALTERNATES: dict[str, tuple[str, ...]] = {
    "v-separate-level": (
        "max(level, SEPARATE_RUNS_LEVEL)\n                                                          "
        "if separate or not paired else level",
        "level",
    ),
    "u-wide-sign": ("if h > want}", "if h < want}"),
    "u-extra-budget": ('> self.spent["planned"] * (1 + budget)', '> self.spent["planned"] * (2 + budget)'),
    # moved to bench/levels.py on 2026-12-06 (the resolution rule uses them too)
    "v-interleaved-or": (
        "a.min() < b.max() and b.min() < a.max()",
        "a.min() < b.max() or b.min() < a.max()",
        "hipexplore/bench/levels.py",
    ),
    "v-paired-side": (
        "mn = np.median(np.concatenate([wins[i][1] for i in pick]))",
        "mn = np.median(np.concatenate([wins[i][0] for i in pick]))",
        "hipexplore/bench/levels.py",
    ),
    # since 2026-12-06 the units' interval decides, floored by the timer grid: the same bug is the floor gone
    "v-units-only": (
        "lo, hi = min(lv.low, g_lo), max(lv.high, g_hi)",
        "lo, hi = lv.low, lv.high",
        "hipexplore/bench/levels.py",
    ),
    "s-ratio-passes": (
        "lo, hi = min(float(lo), point * math.exp(-t_half)), max(float(hi), point * math.exp(t_half))",
        "lo, hi = float(lo), float(hi)",
    ),
}


def _tracked_tests(base: str) -> dict[str, Path]:
    """basename -> path now, following renames since ``base``."""
    now = {p.name: p for p in (ROOT / "tests").rglob("test_*.py")}
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "diff", "-M", "--name-status", base, "--", "tests"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return now
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0].startswith("R") and len(parts) == 3:
            now.setdefault(Path(parts[1]).name, ROOT / parts[2])
    return now


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for f in files:
        src = ROOT / f
        if src.is_file() and not src.is_symlink():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
        elif src.is_symlink():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(src), dest / f)


def run(out: Path, only: set[str] | None, base: str, timeout: int) -> list[dict]:
    tests = _tracked_tests(base)
    # the revision the copy is made from (recorded now: the checkout may move while the mutants run)
    git = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "hipexplore", "tests"], capture_output=True, text=True
    ).stdout.strip()
    records = []
    with tempfile.TemporaryDirectory(prefix="hx-mutants-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree)
        env = {**os.environ, "PYTHONPATH": str(tree), "HIPEXPLORE_REQUIRE_COMPILERS": "1"}
        for mid, module, old, new, bug, names in MUTANTS:
            if only and mid not in only:
                continue
            path = tree / module
            text = path.read_text()
            if text.count(old) != 1 and mid in ALTERNATES:  # (old, new[, the module it moved to])
                alt = ALTERNATES[mid]
                alt_path = tree / alt[2] if len(alt) > 2 else path
                alt_text = alt_path.read_text()
                if alt_text.count(alt[0]) == 1:
                    old, new, path, text = alt[0], alt[1], alt_path, alt_text
            rec = {"id": mid, "module": module, "bug": bug, "tests": [], "status": "", "seconds": 0.0}
            present = [
                n for n in names if n in tests
            ]  # a file added later (a new test of the module) counts once it exists
            if text.count(old) != 1 or not present:
                rec["status"] = "not applicable" + (
                    " (no test file)" if not present else f" (text found {text.count(old)} times)"
                )
            else:
                sel = [str(tree / tests[n].relative_to(ROOT)) for n in present]
                rec["tests"] = [str(tests[n].relative_to(ROOT)) for n in present]
                path.write_text(text.replace(old, new))
                t0 = time.monotonic()
                try:
                    p = subprocess.run(
                        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *sel],
                        cwd=tree,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=timeout,
                    )
                    rec["status"] = {0: "survived", 1: "killed"}.get(
                        p.returncode, f"error (pytest exit {p.returncode})"
                    )
                    if p.returncode not in (0, 1):
                        rec["tail"] = p.stdout[-800:]
                except subprocess.TimeoutExpired:
                    rec["status"] = "killed (timeout)"
                rec["seconds"] = round(time.monotonic() - t0, 1)
                path.write_text(text)
            records.append(rec)
            print(f"{rec['status']:<16} {mid:<22} {rec['seconds']:>6} s  {bug}", flush=True)
    applicable = [r for r in records if r["status"].startswith(("killed", "survived"))]
    killed = sum(r["status"].startswith("killed") for r in applicable)
    result = {
        "revision": git + ("+dirty" if dirty else ""),
        "base": base,
        "killed": killed,
        "applicable": len(applicable),
        "score": killed / len(applicable) if applicable else None,
        "mutants": records,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutation_hand.json").write_text(json.dumps(result, indent=1))
    print(
        f"killed {killed} of {len(applicable)} applicable ({result['score'] or 0:.1%}); "
        f"{len(records) - len(applicable)} not applicable"
    )
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--only", default="", help="mutant ids, comma-separated")
    ap.add_argument("--base", default=BASE)
    ap.add_argument("--timeout", type=int, default=300)
    a = ap.parse_args(argv)
    ids = {m[0] for m in MUTANTS}
    only = {s for s in a.only.split(",") if s}
    if only - ids:
        print(
            f"mutation_hand: unknown mutant id(s) {sorted(only - ids)}; known: {', '.join(sorted(ids))}",
            file=sys.stderr,
        )
        return 2
    run(a.out, only or None, a.base, a.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
