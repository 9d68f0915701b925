#!/usr/bin/env bash
# The project's own tests (unit, property, pytester integration), on 2 processes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec python3 -m pytest -n 2 -q "$@"
