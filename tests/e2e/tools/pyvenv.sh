# Sourced by the install.sh of the kits whose agent is a PyPI package (kimi, vibe, fast-agent):
# find a Python new enough, make a venv per agent version under $E2E_CACHE, pip install into it,
# and answer `install.sh --newest` with the newest version PyPI serves.
#
# The caller sets AGENT (the kit), PACKAGE (the PyPI name), VERSION (what to install: its
# E2E_VERSION_<KIT> variable, defaulting to the pinned one) and PY_MIN (e.g. 3.12), then calls
# `pyvenv_newest_or_continue "$@"` and `pyvenv_install SPEC...`; PREFIX/VENV name the install.

fail() { echo "e2e install $AGENT: $*" >&2; exit 1; }

PREFIX="${E2E_CACHE:?E2E_CACHE is not set}/$AGENT"
VENV="$PREFIX/$VERSION/venv"

# A Python >= $PY_MIN: $E2E_PYTHON, pythonX.Y / python3 on PATH, or a pyenv build.
pyvenv_python() {
    local major="${PY_MIN%%.*}" minor="${PY_MIN#*.}" cand path
    for cand in "${E2E_PYTHON:-}" "python$PY_MIN" python3.13 python3 \
        "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
        [[ -n "$cand" ]] || continue
        path="$(command -v "$cand" 2>/dev/null || true)"
        if [[ -n "$path" ]] && "$path" -c "import sys; sys.exit(sys.version_info < ($major, $minor))" 2>/dev/null; then
            echo "$path"
            return 0
        fi
    done
    return 1
}

# `install.sh --newest`: print the newest version of $PACKAGE on PyPI (for scripts/e2e.sh --latest).
pyvenv_newest_or_continue() {
    [[ "${1:-}" == "--newest" ]] || return 0
    local py
    py="$(pyvenv_python)" || fail "no Python >= $PY_MIN found"
    "$py" -m pip index versions --disable-pip-version-check "$PACKAGE" 2>/dev/null \
        | sed -n "s/^$PACKAGE (\(.*\))\$/\1/p" | grep . || fail "cannot ask PyPI for $PACKAGE's versions"
    exit 0
}

# pyvenv_install SPEC... : a fresh venv at $VENV with these pip specs, unless the stamp says it
# is there already. A kit whose install needs more steps defines `pyvenv_after`, run (with the
# log's path) after the first pip install and before the stamp.
pyvenv_install() {
    local stamp="$PREFIX/$VERSION/.installed" want="$*" py
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    py="$(pyvenv_python)" || fail "no Python >= $PY_MIN found (tried \$E2E_PYTHON, python$PY_MIN, python3, pyenv versions); $PACKAGE needs one"
    mkdir -p "$PREFIX/$VERSION"
    rm -rf "$VENV"
    "$py" -m venv "$VENV" || fail "$py -m venv $VENV failed"
    local log="$PREFIX/$VERSION/install.log"
    pyvenv_pip "$log" "$@"
    if declare -F pyvenv_after >/dev/null; then pyvenv_after "$log"; fi
    echo "$want" >"$stamp"
}

# pyvenv_pip LOG ARG... : pip install into $VENV, quietly, failing with the log's tail.
pyvenv_pip() {
    local log="$1"
    shift
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >>"$log" 2>&1 \
        || fail "pip install $* failed; see $log: $(tail -n 5 "$log")"
}
