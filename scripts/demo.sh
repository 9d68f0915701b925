#!/usr/bin/env bash
# The main job: evaluate the demo LoRA adapter against SmolLM2-135M-Instruct on the English/Hebrew
# demo suite (offline, CPU). Prints the tables and writes runs/demo/. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec python3 -m pytest -m eval eval_suites/demo --sommelier-out runs/demo "$@"
