#!/usr/bin/env bash
# Install the Jupyter kernelspec "hipexplore" (display name "Python (hipexplore)") for PYTHON, in
# the user's kernel directory (~/.local/share/jupyter/kernels/hipexplore). Called by setup.sh.
# Why a kernel of its own name: installing it as "python3" would replace the user's default
# kernel for every other project. The notebooks and `hipexplore report` ask for "hipexplore".
#   scripts/install_kernel.sh PYTHON
set -euo pipefail
PY=${1:?usage: scripts/install_kernel.sh PYTHON}
"$PY" -m ipykernel install --user --name hipexplore --display-name "Python (hipexplore)" >/dev/null
"$PY" -m jupyter kernelspec list 2>/dev/null | grep -E '^\s+hipexplore\s' || { echo "[setup] kernelspec hipexplore was not installed" >&2; exit 1; }
