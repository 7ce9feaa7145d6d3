#!/usr/bin/env bash
# Installs fast-agent from PyPI into a venv at $E2E_CACHE/fast-agent/<version>/venv
# (Python >= 3.13). E2E_VERSION_FAST_AGENT picks another version (scripts/e2e.sh --latest);
# `--newest` prints PyPI's.
set -euo pipefail
AGENT=fast-agent PACKAGE=fast-agent-mcp PY_MIN=3.13
VERSION="${E2E_VERSION_FAST_AGENT:-0.10.48}"
source "$(dirname "${BASH_SOURCE[0]}")/../../tools/pyvenv.sh"
pyvenv_newest_or_continue "$@"
pyvenv_install "fast-agent-mcp==$VERSION"
[[ -x "$VENV/bin/fast-agent-acp" ]] || fail "the fast-agent-acp command is missing after install"
