#!/usr/bin/env bash
# Refresh requirements/constraints.txt, the lock file of dev and CI installs: install the
# newest releases PyPI serves into a new virtual environment (scripts/install.sh with
# SOMMELIER_CONSTRAINTS=none) and write what it holds, one `name==version` a line.
#
#   bash scripts/lock.sh        # then run `bash .ci/run` and commit the file
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3.11 -m venv "$WORK/venv"
# shellcheck disable=SC1091
source "$WORK/venv/bin/activate"
SOMMELIER_CONSTRAINTS=none bash scripts/install.sh
{
    echo "# The pinned dev and CI environment (Python 3.11): written by \`bash scripts/lock.sh\` on"
    echo "# $(date -u +%Y-%m-%d); scripts/install.sh installs with it. Do not edit by hand."
    python3 -m pip freeze --exclude-editable | grep -v '^pytest-sommelier' | sort -f
} > requirements/constraints.txt
echo "wrote requirements/constraints.txt ($(grep -vc '^#' requirements/constraints.txt) pins)"
