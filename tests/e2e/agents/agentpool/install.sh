#!/usr/bin/env bash
# Installs AgentPool from PyPI into a venv at $E2E_CACHE/agentpool/venv. Every agentpool 2.x
# wheel needs Python >= 3.13. pydantic-ai-slim is pinned below 2: agentpool asks only for >= 1.0,
# and 2.x removed pydantic_ai.builtin_tools, which serve-acp imports.
#
# E2E_VERSION_AGENTPOOL installs another agentpool version into
# $E2E_CACHE/agentpool/versions/<version>/ (scripts/e2e.sh --latest); `--newest` prints PyPI's.
set -euo pipefail
AGENT=agentpool
PINNED=2.9.18
VERSION="${E2E_VERSION_AGENTPOOL:-$PINNED}"
PKGS=("agentpool==$VERSION" "pydantic-ai-slim[openai,google,anthropic,mistral,retries]==1.107.10")
PREFIX="${E2E_CACHE:?E2E_CACHE is not set}/$AGENT"
[[ "$VERSION" == "$PINNED" ]] || PREFIX="$PREFIX/versions/$VERSION"
VENV="$PREFIX/venv"
STAMP="$PREFIX/.installed"
WANT="${PKGS[*]}"
fail() { echo "e2e install $AGENT: $*" >&2; exit 1; }

# A Python >= 3.13: $E2E_PYTHON, python3.13 / python3 on PATH, or a pyenv build.
is_313() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; }
PY=""
for cand in "${E2E_PYTHON:-}" python3.13 python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[3-9]*/bin/python3; do
    [[ -n "$cand" ]] || continue
    path="$(command -v "$cand" 2>/dev/null || true)"
    if [[ -n "$path" ]] && is_313 "$path"; then PY="$path"; break; fi
done
[[ -n "$PY" ]] || fail "no Python >= 3.13 found (tried \$E2E_PYTHON, python3.13, python3, pyenv versions 3.13+); agentpool 2.x needs one"
if [[ "${1:-}" == "--newest" ]]; then
    "$PY" -m pip index versions --disable-pip-version-check agentpool 2>/dev/null \
        | sed -n 's/^agentpool (\(.*\))$/\1/p' | grep . || fail "cannot ask PyPI for agentpool's versions"
    exit 0
fi
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" && -x "$VENV/bin/agentpool" ]]; then
    exit 0
fi

mkdir -p "$PREFIX"
rm -rf "$VENV"
"$PY" -m venv "$VENV" || fail "$PY -m venv $VENV failed"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PKGS[@]}" >"$PREFIX/install.log" 2>&1 \
    || fail "pip install ${PKGS[*]} failed; see $PREFIX/install.log: $(tail -n 5 "$PREFIX/install.log")"
[[ -x "$VENV/bin/agentpool" ]] || fail "the agentpool command is missing after install"
echo "$WANT" >"$STAMP"
