"""Print the stratified mutant sample of BENCHMARKS.md "Mutation testing" (issue 17, item 6).

Why a sample: the ~5,500 mutants of these modules take 3-4 hours on a 2-core machine, so a module of
at most SMALL mutants is taken whole and a larger one by a seeded random sample of SAMPLE (a score
from 150 has a 95% interval of about +-6 points). Run after mutmut has generated its mutants
(mutants/hipexplore/**.meta); prints one mutant name a line, modules in the order given.

    python benchmarks/tools/mutation_sample.py bench/sweep.py bench/run.py ... > names.txt
"""

import json
import random
import sys
from pathlib import Path

SEED = 20261201
SMALL = 200
SAMPLE = 150


def sample(module: str) -> list[str]:
    """Every mutant of a small module, else SAMPLE of them drawn with SEED from the sorted names."""
    meta = Path("mutants/hipexplore") / (module + ".meta")
    names = sorted(json.loads(meta.read_text())["exit_code_by_key"])
    if len(names) <= SMALL:
        return names
    return sorted(random.Random(SEED).sample(names, SAMPLE))


if __name__ == "__main__":
    for module in sys.argv[1:]:
        for name in sample(module):
            print(name)
