"""Write the shipped tuning lists (``data/tuning/lists/<name>.jsonl``) from ``tuning/models.py``.

    python -m hipexplore.tuning.generate            # (re)write every list
    python -m hipexplore.tuning.generate --check    # exit 1 if a shipped list differs from what this writes

The lists are data (anyone can read, diff or replace them); this script is how they were made, and
``tests/tuning/test_lists.py`` checks that the shipped files are exactly its output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..files import write_file
from . import listfile
from .models import MODELS

GENERATOR = "python -m hipexplore.tuning.generate"


def spec_for(name: str) -> listfile.ListSpec:
    ml = MODELS[name]()
    return listfile.from_rows(ml.name, ml.rows, model=ml.model, description=ml.description, generator=GENERATOR)


def texts() -> dict[str, str]:
    """file name -> the text the generator writes, for every shipped list."""
    return {f"{name}{listfile.SUFFIX}": listfile.dumps(spec_for(name)) for name in MODELS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(listfile.LISTS_DIR), help="directory of the lists (default %(default)s)")
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on any difference")
    args = ap.parse_args(argv)
    out = Path(args.out)
    bad = 0
    for fname, text in texts().items():
        path = out / fname
        if args.check:
            have = path.read_text(encoding="utf-8") if path.is_file() else None
            if have != text:
                bad += 1
                print(f"{path}: {'missing' if have is None else 'differs from the generator output'}")
            continue
        out.mkdir(parents=True, exist_ok=True)
        write_file(path, text, what="list")
        spec = listfile.parse(text, str(path))
        c = listfile.counts(spec)
        print(
            f"{path}: {len(spec.problems)} problems, {spec.n_candidates} candidates, {c['kernels']} kernels, "
            f"{c['unique_kernels']} unique"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
