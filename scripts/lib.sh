# shellcheck shell=bash
# Shared helpers for sectorlab's shell scripts: messages, errors, the cache directory.

SECTORLAB_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SECTORLAB_REPO
SECTORLAB_CACHE=${SECTORLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sectorlab}
export SECTORLAB_CACHE

say() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' is not installed; run scripts/bootstrap"; }

# The libvirt provider Terraform uses, built from the Go module proxy into a filesystem mirror
# (scripts/build-provider); sectorlab/host/tooling.py names the same path. Its version is the one
# terraform/versions.tf requires.
PROVIDER_VERSION=$(sed -n 's/^ *version *= *"\([0-9.]*\)".*/\1/p' "$SECTORLAB_REPO/terraform/versions.tf" | head -1)
[[ -n $PROVIDER_VERSION ]] || { echo "scripts/lib.sh: no provider version in terraform/versions.tf" >&2; exit 1; }
export PROVIDER_BINARY=$SECTORLAB_CACHE/tools/terraform-mirror/registry.terraform.io/dmacvicar/libvirt/$PROVIDER_VERSION/linux_amd64/terraform-provider-libvirt_v$PROVIDER_VERSION

# Go builds (the provider; OpenTofu where there is no terraform).
GO_MIN_MINOR=23  # the provider's go.mod asks for go 1.23
check_go() {
  need go
  local minor
  minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
  [[ $minor =~ ^[0-9]+$ && $minor -ge $GO_MIN_MINOR ]] \
    || die "Go $(go env GOVERSION) is too old: the libvirt provider and OpenTofu need go1.$GO_MIN_MINOR or newer; install a newer Go"
}

# go install refuses these modules (the version list is not served), so: download the exact
# version, copy it somewhere writable, build.
go_build_module() { # module version package output
  local module=$1 version=$2 package=$3 output=$4 dir src
  dir=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "$module@v$version" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') \
    || die "could not download $module@v$version from the Go module proxy"
  src=$(mktemp -d "${TMPDIR:-/tmp}/sectorlab-go.XXXXXX")
  cp -r "$dir/." "$src/"
  chmod -R u+w "$src"
  local log=$SECTORLAB_CACHE/tools/go-build-${module##*/}.log
  (cd "$src" && GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$output.tmp" "$package") \
    >"$log" 2>&1 || { rm -rf "$src"; tail -20 "$log" >&2; die "go build of $module@v$version failed (log: $log)"; }
  rm -rf "$src"
  mv "$output.tmp" "$output"
}
