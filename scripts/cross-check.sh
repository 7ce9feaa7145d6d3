#!/usr/bin/env bash
# Type-checks the workspace (clippy, which includes `cargo check`) for targets whose standard
# library is not installed: macOS on Apple silicon and Intel, Windows (MSVC). Nothing is linked
# or run; docs/platforms.md says what this proves and what it does not.
#
# How, with nothing downloaded from outside the package registries:
# - the std source comes from Debian's `rust-src` package of the exact version of the installed
#   rustc (Debian ships it in trixie-backports). The suite is added through a private apt
#   configuration under the cache directory, built from the machine's own Debian source entry,
#   so the system's apt configuration is not touched and no host name is written here;
# - cargo builds std for the target itself (`-Zbuild-std`, allowed on stable by
#   RUSTC_BOOTSTRAP=1), reading the source from `__CARGO_TESTS_ONLY_SRC_ROOT`;
# - build scripts that compile C (bundled SQLite) get a stand-in compiler and archiver that
#   write empty files: a check never links.
#
# Usage: scripts/cross-check.sh [target...]   (default: the three targets below)
# Environment: CROSS_CHECK_CACHE (default ~/.cache/acp-proxy-cross-check) holds the std source
# and the private apt state; CARGO_TARGET_DIR defaults to target/cross.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  targets=(aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-msvc)
fi

cache="${CROSS_CHECK_CACHE:-$HOME/.cache/acp-proxy-cross-check}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"

fail() { echo "cross-check: $*" >&2; exit 1; }

# The rustc in use, e.g. "1.95.0" from "rustc 1.95.0 (59807616e 2026-04-14)".
rust_version="$(rustc --version | awk '{print $2}')"
case "$rust_version" in
  *-*) fail "rustc $rust_version is not a stable release; Debian's rust-src only matches stable ones" ;;
esac
src_root="$cache/rust-src-$rust_version"

# --- the std source -------------------------------------------------------------------------
if [ ! -f "$src_root/library/Cargo.lock" ]; then
  echo "== cross-check: fetching Debian's rust-src $rust_version"
  apt_dir="$cache/apt"
  mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/dl"

  # The machine's own Debian archive entry (deb822 or one-line form), reused for the
  # backports suite: the first entry whose suites include a plain release name.
  uri="" keyring=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    read -r uri keyring < <(awk '
      BEGIN { RS = ""; FS = "\n" }
      {
        u = ""; s = ""; k = ""; t = ""
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^URIs:/) { u = $i; sub(/^URIs:[ \t]*/, "", u); sub(/[ \t].*/, "", u) }
          if ($i ~ /^Suites:/) { s = $i }
          if ($i ~ /^Signed-By:/) { k = $i; sub(/^Signed-By:[ \t]*/, "", k) }
          if ($i ~ /^Types:/) { t = $i }
        }
        if (t ~ /deb( |$)/ && s !~ /security/ && u != "") { print u, k; exit }
      }' "$f") || true
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri="$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; exit } }' /etc/apt/sources.list)"
  fi
  [ -n "$uri" ] || fail "no Debian archive entry found in /etc/apt to derive trixie-backports from"
  [ -n "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg

  cat >"$apt_dir/parts/backports.sources" <<EOF
Types: deb
URIs: $uri
Suites: trixie-backports
Components: main
Signed-By: $keyring
EOF
  apt_opts=(
    -o Dir::Etc::SourceList=/dev/null
    -o "Dir::Etc::SourceParts=$apt_dir/parts"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir"
    -o Dir::State::status=/dev/null
    -o Debug::NoLocking=1
    -o APT::Sandbox::User=root
  )
  apt-get "${apt_opts[@]}" -qq update >/dev/null
  # Debian versions look like "1.95.0+dfsg1-2~bpo13+1": pick the newest build of exactly this
  # upstream version.
  deb_version="$(apt-cache "${apt_opts[@]}" madison rust-src \
    | awk -F'|' -v v="$rust_version" '{ gsub(/ /, "", $2) } index($2, v "+") == 1 { print $2; exit }')"
  if [ -z "$deb_version" ]; then
    echo "cross-check: Debian's trixie-backports has no rust-src for rustc $rust_version." >&2
    echo "cross-check: versions available:" >&2
    apt-cache "${apt_opts[@]}" madison rust-src | awk -F'|' '{ print "  " $2 }' >&2
    fail "install a rustc whose version is listed above (rustup toolchain install <version>) or wait for Debian to ship $rust_version"
  fi
  (cd "$apt_dir/dl" && rm -f rust-src_*.deb && apt-get "${apt_opts[@]}" -qq download "rust-src=$deb_version")
  rm -rf "$cache/extract"
  mkdir -p "$cache/extract"
  dpkg-deb -x "$apt_dir/dl"/rust-src_*.deb "$cache/extract"
  lib="$(echo "$cache"/extract/usr/src/rustc-"$rust_version"/library)"
  [ -f "$lib/Cargo.lock" ] || fail "the rust-src package has no library/Cargo.lock where expected ($lib)"
  rm -rf "$src_root"
  mkdir -p "$src_root"
  mv "$lib" "$src_root/library"
  rm -rf "$cache/extract" "$apt_dir/dl"
fi
echo "== cross-check: rustc $rust_version, std source $src_root"

# --- stand-ins for the C toolchain ----------------------------------------------------------
bin="$cache/bin"
mkdir -p "$bin"
cat >"$bin/stand-in-cc" <<'EOF'
#!/bin/sh
# Writes an empty file wherever a compiler would write its output: a check never links.
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift ;;
    -o*) out="${1#-o}" ;;
    -Fo*) out="${1#-Fo}" ;;
    /Fo*) out="${1#/Fo}" ;;
  esac
  shift
done
[ -n "$out" ] && : >"$out"
exit 0
EOF
cat >"$bin/stand-in-ar" <<'EOF'
#!/bin/sh
# Writes an empty archive: `-out:FILE` (lib.exe), else the first .a/.lib argument.
for a in "$@"; do
  case "$a" in
    -out:*|/OUT:*) printf '!<arch>\n' >"${a#*:}"; exit 0 ;;
    -*) ;;
    *.a|*.lib) printf '!<arch>\n' >"$a"; exit 0 ;;
  esac
done
exit 0
EOF
chmod +x "$bin/stand-in-cc" "$bin/stand-in-ar"

export RUSTC_BOOTSTRAP=1
export __CARGO_TESTS_ONLY_SRC_ROOT="$src_root/library"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/cross}"

for target in "${targets[@]}"; do
  echo "== cross-check: cargo clippy --target $target"
  t="${target//-/_}"
  export "CC_$t=$bin/stand-in-cc" "AR_$t=$bin/stand-in-ar"
  start=$SECONDS
  cargo clippy --locked --workspace --all-targets --target "$target" \
    -Zbuild-std=std,panic_abort -- -D warnings
  echo "== cross-check: $target clean ($((SECONDS - start)) s)"
done
