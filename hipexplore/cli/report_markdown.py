"""``hipexplore report --format markdown --out DIR``: the A/B review as a pull-request comment.

Writes, in DIR (made here, or an earlier folder of yours that nobody else may write):

* ``comment.md``: GitHub-flavoured Markdown of at most 65,536 characters (``report.markdown``);
* ``verdicts.png`` and ``noise.png``: the review's plots, linked from the comment by relative path;
* ``report.html``: the whole review report (the notebook, as ``--format html`` writes it), the
  artefact the comment points to for every row and table it leaves out.

The comment's numbers and the HTML report's come from the same comparison of the same files
(``verdicts.compare`` is seeded). Only a review (``--baseline``/``--candidate`` or ``--run``) has a
comment; the dashboard is refused in one line.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError

COMMENT, HTML = "comment.md", "report.html"
FIGURES = (("verdicts: change new/base with 95% intervals", "verdicts.png"), ("noise of both sides", "noise.png"))


def check_out_folder(path: str) -> None:
    """Before anything runs: DIR's parent must be a folder an export may go to (``interop.export``:
    yours, or a sticky one of root's); an existing DIR must be a folder (``out_folder`` checks its owner)."""
    from ..interop.export import check_export_path

    p = Path(path)
    if os.path.lexists(p) and not p.is_dir():
        raise ConfigError(f"--out {path!r} exists and is not a folder; with --format markdown --out names a folder")
    if not p.exists():
        check_export_path(str(p), "--out")


def out_folder(path: str) -> int:
    """An opened descriptor of DIR: made here, or this user's own and writable by nobody else
    (``files.own_folder``)."""
    from ..files import own_folder

    p = Path(path)
    check_out_folder(path)
    parent = str(p.parent) if str(p.parent) else "."
    pfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return own_folder(pfd, p.name, what="--out", shown=path)
    finally:
        os.close(pfd)


def _summary(path: Any) -> Any:
    """A sweep's summary frame (for the cache state of each row), None for anything else."""
    from ..bench.io import output_paths, read_results

    try:
        got = read_results(output_paths(path)) if isinstance(path, str) and path.endswith(".parquet") else None
    except ConfigError:
        return None
    return got[1] if got else None


def _png(fig: Any) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def run_markdown(args: argparse.Namespace, params: dict[str, Any], build: Any) -> int:
    """``build(out_html)``: the HTML report's build (report_cmd's, with its checks); then the comment."""
    from ..calibrate import cite
    from ..files import write_file
    from ..report import headline as hl
    from ..report import review
    from ..report.markdown import comment

    if not (args.baseline or args.candidate or args.run):
        raise ConfigError(
            "--format markdown writes the A/B review's comment: give --baseline and --candidate (two runs) "
            "or --run with --baseline and --candidate (two kernels)"
        )
    if args.out in (None, "report.html"):
        raise ConfigError("--format markdown needs --out DIR (the folder for comment.md, its plots and report.html)")
    check_out_folder(args.out)
    base, cand = params.get("baseline"), params.get("candidate")
    data = review.review_data(
        base,
        None if cand in (None, "none") else cand,
        base_kernel=params.get("base_kernel"),
        new_kernel=params.get("new_kernel"),
        threshold=float(params.get("threshold", 0.02)),
        allow_other_device=bool(params.get("allow_other_device", False)),
    )  # a bad run: nothing made
    dfd = out_folder(args.out)
    try:
        result = build(str(Path(args.out) / HTML))
        lines = hl.headline(
            verdicts=data.verdicts, base_label=data.base_label, new_label=data.new_label, threshold=data.threshold
        )
        figures = []
        for (alt, name), make in zip(
            FIGURES,
            (
                lambda: review.plot_forest(data.verdicts),
                lambda: review.plot_noise_both(data.verdicts, data.base_label, data.new_label),
            ),
        ):
            try:
                write_file(name, _png(make()), what="plot", dir_fd=dfd, shown=str(Path(args.out) / name))
                figures.append((alt, name))
            except ConfigError:  # nothing compared in both runs: no plot, the table says why
                continue
        text = comment(
            data,
            headline=lines,
            compile_text=review.compile_section(data, None).text,
            calibration=cite(data.base_metadata),
            figures=figures,
            html_name=HTML,
            summaries=[_summary(base), _summary(cand)],
        )
        write_file(COMMENT, text, what="comment", dir_fd=dfd, shown=str(Path(args.out) / COMMENT))
    finally:
        os.close(dfd)
    print(
        f"wrote {Path(args.out) / COMMENT} ({len(text):,} characters), {', '.join(n for _, n in figures)} and "
        f"{result.html}"
    )
    return 0
