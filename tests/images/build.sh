#!/usr/bin/env bash
# Build the systemd-capable Debian base images that Molecule scenarios boot.
# No registry is reachable, so images are bootstrapped from the Debian mirror with mmdebstrap
# and imported into the local Docker engine. An image is rebuilt only when this recipe (or the
# trusted CA bundle) changes: its label carries a hash of both.
#
# usage: tests/images/build.sh debian12|debian13 ...
# env:
#   IMAGE_MIRROR          Debian mirror (default http://deb.debian.org/debian)
#   IMAGE_EXTRA_CA_BUNDLE PEM bundle the images trust in addition to Debian's CAs. Default: the
#                         host's trust store, so that a TLS-intercepting proxy trusted by the host
#                         is trusted inside the containers too (pip, uv, get_url). Set it to an
#                         empty string to build images with Debian's CAs only.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
mirror=${IMAGE_MIRROR:-http://deb.debian.org/debian}
ca_bundle=${IMAGE_EXTRA_CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt}
packages=systemd,systemd-sysv,dbus,python3,python3-apt,python3-packaging,ca-certificates,iproute2,sudo,procps

suite_of() {
  case "$1" in
    debian12) echo bookworm ;;
    debian13) echo trixie ;;
    *) echo "unknown image '$1' (expected debian12 or debian13)" >&2; return 2 ;;
  esac
}

recipe_hash() {
  { cat "$0" "$here/Dockerfile" "$here/inferops_zipcache.py" "$here/inferops-zipcache.pth"; echo "$mirror $packages"; [ -n "$ca_bundle" ] && cat "$ca_bundle"; } | sha256sum | cut -c1-16
}

build_one() {
  local name=$1 suite image hash current workdir
  suite=$(suite_of "$name")
  image="inferops/molecule-$name:latest"
  hash=$(recipe_hash)
  current=$(docker image inspect --format '{{ index .Config.Labels "inferops.recipe" }}' "$image" 2>/dev/null || true)
  if [ "$current" = "$hash" ]; then
    echo "image $image is up to date ($hash)"
    return 0
  fi
  echo "building $image from $suite ($hash)"
  workdir=$(mktemp -d)
  trap 'rm -rf "$workdir"' RETURN
  # The package lists stay in the image (issue 24): dated by the build, they are what apt's cache_valid_time
  # (3600 s in the roles and the scenarios' prepare) trusts, so that no instance refreshes them again during
  # the run that built the image; an image older than an hour refreshes them as a host would.
  mmdebstrap --quiet --variant=apt --format=tar --include="$packages" --skip=cleanup/apt/lists \
    "$suite" - "$mirror" | docker import - "inferops/molecule-$name:rootfs"
  if [ -n "$ca_bundle" ]; then
    cp "$ca_bundle" "$workdir/extra-ca.crt"
  else
    : >"$workdir/extra-ca.crt"
  fi
  cp "$here/Dockerfile" "$here/inferops_zipcache.py" "$here/inferops-zipcache.pth" "$workdir/"
  docker build --quiet --build-arg "BASE=inferops/molecule-$name:rootfs" \
    --label "inferops.recipe=$hash" -t "$image" "$workdir" >/dev/null
  docker rmi "inferops/molecule-$name:rootfs" >/dev/null
  echo "built $image"
}

[ $# -gt 0 ] || set -- debian12 debian13
for name in "$@"; do
  build_one "$name"
done
