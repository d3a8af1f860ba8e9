# shellcheck shell=bash
# A Debian bookworm minbase root (what debian:bookworm-slim is made from), made by debootstrap
# and cached: the images (scripts/build-images.sh) and the Debian package test start from it.
# Source this file; needs root, debootstrap and a Debian mirror (PERFGATE_DEBIAN_MIRROR, default
# http://deb.debian.org/debian). PERFGATE_IMAGE_FRESH=1 makes every root again.
#
# debian_root CACHE [PACKAGES...]: prints the path of a root under CACHE with exactly PACKAGES
# (and what they depend on) installed with apt, without recommends, apt's lists and caches
# removed. Each distinct package list is its own root, made once from the cached minbase root
# (CACHE/minbase) and kept (CACHE/root-HASH, its stamp beside it); callers copy it before
# changing it. Logs go to CACHE/*.log; on failure their tail is shown and it returns 1.

debian_mirror() { echo "${PERFGATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"; }

# debian_minbase CACHE: the cached minbase root's path (made when missing or stale).
debian_minbase() {
  local cache="$1" mirror root stamp start
  mirror="$(debian_mirror)"
  root="$cache/minbase"
  stamp="bookworm minbase $mirror"
  mkdir -p "$cache"
  if [ "${PERFGATE_IMAGE_FRESH:-0}" = 1 ] || [ "$(cat "$root.stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "debian-root: debootstrap bookworm minbase ($mirror)" >&2
    rm -rf --one-file-system "$root" "$root.stamp"
    start=$SECONDS
    debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 \
      || { tail -20 "$cache/debootstrap.log" >&2; return 1; }
    echo "debian-root: debootstrap took $((SECONDS - start)) s" >&2
    echo "$stamp" >"$root.stamp"
  fi
  echo "$root"
}

debian_root() {
  local cache="$1"
  shift
  local base stamp hash root start
  base="$(debian_minbase "$cache")" || return 1
  stamp="$(cat "$base.stamp"): $*"
  hash="$(sha256sum <<<"$stamp" | cut -c1-12)"
  root="$cache/root-$hash"
  if [ "${PERFGATE_IMAGE_FRESH:-0}" != 1 ] && [ "$(cat "$root.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$root"
    return 0
  fi
  rm -rf --one-file-system "$root" "$root.stamp"
  cp -a "$base" "$root"
  if (($#)); then
    echo "debian-root: apt-get install $*" >&2
    start=$SECONDS
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mount -t proc proc "$root/proc" || return 1
    local rc=0
    chroot "$root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends $* && apt-get clean" \
      >"$cache/apt-$hash.log" 2>&1 || rc=$?
    umount "$root/proc"
    if [ "$rc" != 0 ]; then
      tail -20 "$cache/apt-$hash.log" >&2
      return 1
    fi
    echo "debian-root: packages took $((SECONDS - start)) s" >&2
  fi
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
  : >"$root/etc/resolv.conf"
  echo "$stamp" >"$root.stamp"
  echo "$root"
}
