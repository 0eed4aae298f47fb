# shellcheck shell=bash
# Shared helpers for sectorlab's shell scripts: messages, errors, the cache directory.

SECTORLAB_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SECTORLAB_REPO
SECTORLAB_CACHE=${SECTORLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sectorlab}
export SECTORLAB_CACHE

say() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' is not installed; run scripts/bootstrap"; }
