#!/usr/bin/env bash
# `make image`: builds the Dockerfile at the top of the repository with podman (or buildah) from
# dist/'s wheel, then runs `searchsync --version` and `searchsync config check` in the image.
#
#   IMAGE       the image's name (default: localhost/searchsync:<version>)
#   BASE_IMAGE  the base (default: python:3.11-slim). When it cannot be pulled (no registry
#               reachable), or with BASE_IMAGE=debootstrap, a base is made from a debootstrap
#               root file system (Debian bookworm, minbase, python3 + python3-venv) and imported
#               as localhost/searchsync-base:bookworm.
#   EXTRAS      the wheel's extras, e.g. EXTRAS=opensearch
#   ROOTFS_DIR  where debootstrap puts the root file system (default: /tmp/searchsync-image/rootfs)
#   PIP_CERT    a CA bundle pip must trust to reach PyPI (a TLS-inspecting proxy): passed to the
#               build as the secret pip_cert, never stored in the image
#
# Debian packages: podman (or buildah) and, for the local base, debootstrap. Run as root.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "image: $*" >&2; exit 1; }

if command -v podman >/dev/null; then
  tool=podman
elif command -v buildah >/dev/null; then
  tool=buildah
else
  die "neither podman nor buildah is installed: apt-get install -y podman (or buildah)"
fi

wheels=(dist/searchsync-*.whl)
[[ -f ${wheels[0]} ]] || die "no wheel in dist/: run make dist first"
((${#wheels[@]} == 1)) || die "more than one wheel in dist/ (${wheels[*]}): run make dist again"
version=$(basename "${wheels[0]}" | cut -d- -f2)
image=${IMAGE:-localhost/searchsync:$version}
base=${BASE_IMAGE:-python:3.11-slim}
local_base=localhost/searchsync-base:bookworm
rootfs=${ROOTFS_DIR:-/tmp/searchsync-image/rootfs}

stamp=$(dirname "$rootfs")/imported  # newer than the root file system once it is imported
image_exists() { $tool inspect --type image "$1" >/dev/null 2>&1; }

# A base from Debian's own packages: the root file system debootstrap makes, imported as an image.
make_local_base() {
  command -v debootstrap >/dev/null || die "debootstrap is not installed: apt-get install -y debootstrap"
  if [[ ! -x $rootfs/usr/bin/python3 ]]; then
    echo "image: debootstrap bookworm into $rootfs (a few minutes) ..."
    rm -rf "$rootfs"
    mkdir -p "$(dirname "$rootfs")"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
      bookworm "$rootfs" http://deb.debian.org/debian >"$(dirname "$rootfs")/debootstrap.log" \
      || die "debootstrap failed: $(dirname "$rootfs")/debootstrap.log"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  fi
  base=$local_base
  if image_exists "$local_base" && [[ $rootfs/usr/bin/python3 -ot $stamp ]]; then
    return  # imported from this root file system already
  fi
  echo "image: importing $rootfs as $local_base"
  if [[ $tool == podman ]]; then
    tar -C "$rootfs" -c . | podman import --quiet - "$local_base" >/dev/null
  else
    ctr=$(buildah from scratch)
    mnt=$(buildah mount "$ctr")
    tar -C "$rootfs" -c . | tar -C "$mnt" -x
    buildah umount "$ctr" >/dev/null
    buildah commit --quiet "$ctr" "$local_base" >/dev/null
    buildah rm "$ctr" >/dev/null
  fi
  touch "$stamp"
}

if [[ $base == debootstrap ]]; then
  make_local_base
elif ! image_exists "$base" && ! timeout 120 $tool pull --quiet "$base" >/dev/null 2>&1; then
  echo "image: cannot pull $base (no registry reachable?): building a base with debootstrap instead"
  make_local_base
fi

echo "image: building $image from $base with $tool"
# --format docker: OCI images have no HEALTHCHECK. chroot isolation: RUN steps need no OCI
# runtime, so the build also works inside a container whose cgroups the runtime cannot manage.
build=(--format docker --isolation chroot --build-arg "BASE_IMAGE=$base" --build-arg "EXTRAS=${EXTRAS:-}")
[[ -z ${PIP_CERT:-} || ! -s $PIP_CERT ]] || build+=(--secret "id=pip_cert,src=$PIP_CERT")
$tool build --quiet "${build[@]}" -t "$image" -f Dockerfile . >/dev/null

# The image as a user runs it: its entrypoint and user, no configuration but the defaults. podman
# first; where its OCI runtime cannot start a container (a sandbox that forbids setrlimit or
# cgroups), buildah's chroot isolation runs the image's entrypoint as the image's user instead.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runner=buildah
if [[ $tool == podman ]]; then
  if podman run --rm --read-only --tmpfs /tmp --no-healthcheck "$image" --version >/dev/null 2>"$tmp/err"; then
    runner=podman
  else
    echo "image: podman cannot run a container here ($(tail -n 1 "$tmp/err")): using buildah run --isolation chroot"
  fi
fi
[[ $runner == podman ]] || command -v buildah >/dev/null || die "cannot run $image: podman failed and buildah is not installed"
run() {
  if [[ $runner == podman ]]; then
    podman run --rm --read-only --tmpfs /tmp --no-healthcheck "$image" "$@"
    return
  fi
  local ctr entrypoint rc=0
  ctr=$(buildah from --quiet "$image")
  read -r -a entrypoint < <(buildah inspect --type image --format '{{range .OCIv1.Config.Entrypoint}}{{.}} {{end}}' "$image")
  buildah run --isolation chroot "$ctr" -- "${entrypoint[@]}" "$@" || rc=$?
  buildah rm "$ctr" >/dev/null
  return $rc
}

echo "image: $image: searchsync --version"
out=$(run --version) || die "searchsync --version failed in $image"
echo "  $out"
[[ $out == "searchsync $version" ]] || die "expected 'searchsync $version', got '$out'"
echo "image: $image: searchsync config check"
out=$(run config check) || die "searchsync config check failed in $image"
tail -n 2 <<<"$out" | sed 's/^/  /'
[[ $(tail -n 1 <<<"$out") == "config ok" ]] || die "config check did not end with 'config ok'"
if [[ $tool == podman ]]; then
  user=$(podman image inspect --format '{{.Config.User}}' "$image")
else
  user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$image")
fi
[[ -n $user && ${user%%:*} != 0 && ${user%%:*} != root ]] || die "$image runs as root (USER '$user')"
echo "image: done: $image (user $user, entrypoint searchsync)"
