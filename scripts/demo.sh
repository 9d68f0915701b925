#!/usr/bin/env bash
# The main job: evaluate the demo LoRA adapter against SmolLM2-135M-Instruct on the English/Hebrew
# demo suite (offline, CPU). Prints the tables and writes runs/demo/. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# two xdist workers with one torch thread each (measured 4m25s against 7m45s for one process
# with two threads); idle OpenMP threads sleep instead of spinning on shared cores
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
exec python3 -m pytest -m eval eval_suites/demo -n 2 --sommelier-out runs/demo "$@"
