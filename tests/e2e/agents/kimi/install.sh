#!/usr/bin/env bash
# Installs Kimi Code CLI from PyPI into a venv at $E2E_CACHE/kimi/<version>/venv (Python >= 3.13: on 3.12.1
# its slash-command registry fails at import, a typing bug of that Python).
# E2E_VERSION_KIMI picks another version (scripts/e2e.sh --latest); `--newest` prints PyPI's.
set -euo pipefail
AGENT=kimi PACKAGE=kimi-cli PY_MIN=3.13
VERSION="${E2E_VERSION_KIMI:-1.51.0}"
source "$(dirname "${BASH_SOURCE[0]}")/../../tools/pyvenv.sh"
pyvenv_newest_or_continue "$@"
pyvenv_install "kimi-cli==$VERSION"
"$VENV/bin/python" -c 'import kimi_cli.acp' || fail "kimi_cli.acp does not import after install"
