#!/usr/bin/env bash
# Install the Jupyter kernelspec "hipexplore" (display name "Python (hipexplore)") for PYTHON, in
# the user's kernel directory (~/.local/share/jupyter/kernels/hipexplore). Called by setup.sh.
# Why a kernel of its own name: installing it as "python3" would replace the user's default
# kernel for every other project. The notebooks and `hipexplore report` ask for "hipexplore".
# Why -P everywhere: `python -m` and a kernel put the folder they start in first on sys.path, and a
# json.py planted there (a notebook in /tmp, a shared folder) would run as the user. The kernel's
# argv gets -P too (hipexplore.interpreter.safe_path_argv), so IPython never adds '' to its path.
#   scripts/install_kernel.sh PYTHON
set -euo pipefail
PY=${1:?usage: scripts/install_kernel.sh PYTHON}
out=$("$PY" -P -m ipykernel install --user --name hipexplore --display-name "Python (hipexplore)")
spec_dir=${out##* in }
[ -f "$spec_dir/kernel.json" ] || { echo "[setup] ipykernel install said '$out'; no kernel.json there" >&2; exit 1; }
"$PY" -P -c '
import json, sys
from hipexplore.interpreter import safe_path_argv
path = sys.argv[1]
with open(path, encoding="utf-8") as f:
    spec = json.load(f)
argv = spec["argv"]
if "-P" not in argv[1:argv.index("-m")]:
    spec["argv"] = safe_path_argv(*argv[1:], executable=argv[0])
with open(path, "w", encoding="utf-8") as f:
    json.dump(spec, f, indent=1)
' "$spec_dir/kernel.json"
"$PY" -P -m jupyter kernelspec list 2>/dev/null | grep -E '^\s+hipexplore\s' || { echo "[setup] kernelspec hipexplore was not installed" >&2; exit 1; }
