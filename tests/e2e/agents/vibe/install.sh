#!/usr/bin/env bash
# Installs Mistral Vibe from PyPI into a venv at $E2E_CACHE/vibe/<version>/venv (Python >= 3.12).
# E2E_VERSION_VIBE picks another version (scripts/e2e.sh --latest); `--newest` prints PyPI's.
# mistral-vibe pins every dependency exactly, and 3.0.3 pins certifi==2026.10.19, which PyPI no
# longer serves (2026.10.19.post1 replaced it): install the package without its dependencies,
# then its own pins with that one swapped for the post release.
set -euo pipefail
AGENT=vibe PACKAGE=mistral-vibe PY_MIN=3.12
VERSION="${E2E_VERSION_VIBE:-3.0.3}"
source "$(dirname "${BASH_SOURCE[0]}")/../../tools/pyvenv.sh"
pyvenv_newest_or_continue "$@"
pyvenv_after() {
    local reqs="$PREFIX/$VERSION/requirements.txt"
    "$VENV/bin/python" - >"$reqs" <<'PY' || fail "cannot read mistral-vibe's requirements"
from importlib.metadata import requires
for r in requires("mistral-vibe") or []:
    if "extra ==" not in r:
        print(r.replace("certifi==2026.10.19", "certifi==2026.10.19.post1")
              if r.split(";")[0].strip() == "certifi==2026.10.19" else r)
PY
    pyvenv_pip "$1" -r "$reqs"
}
pyvenv_install --no-deps "mistral-vibe==$VERSION"
[[ -x "$VENV/bin/vibe-acp" ]] || fail "the vibe-acp command is missing after install"
