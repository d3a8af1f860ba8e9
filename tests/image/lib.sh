# shellcheck shell=bash
# Shell helpers for the image tests: run an image unpacked by umoci (WORK_DIR/unpacked/NAME, its
# rootfs and runtime config.json) the way a container runtime runs it. Source it; needs root,
# unshare, chroot and python3. Used by archives_test.sh and by the kubelet stand-in it writes.

# The runtime config umoci wrote from the image: user, cwd, env, one per line.
process() { python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["process"]
print("%d:%d" % (p["user"]["uid"], p["user"]["gid"]), p["cwd"], *p["env"], sep="\n")' \
    "$WORK_DIR/unpacked/$1/config.json"; }

# in_pod NAME RO|RW MOUNTS -- CMD...: runs CMD in the image NAME as its runtime config says (user,
# working directory, env) in a mount namespace of its own: /proc and /sys as a runtime gives them,
# /dev a fresh tmpfs with the runtime's device nodes (null, zero, full, random, urandom, tty),
# /dev/shm and /tmp tmpfs (the chart's emptyDir), MOUNTS ("SRC:DEST[:ro]" space-separated, a
# folder or a file) bound in, and the root read-only with RO. Extra env: POD_ENV (an array of
# NAME=VALUE, after the image's: a pod's env wins). It execs: call it in $(...) or in the
# background.
in_pod() {
  local name="$1" mode="$2" mounts="$3"
  shift 4
  local root="$WORK_DIR/unpacked/$name/rootfs" user cwd
  local -a env
  mapfile -t env < <(process "$name")
  user="${env[0]}" cwd="${env[1]}"
  env=("${env[@]:2}" "${POD_ENV[@]}")
  # exec: run in the background, its PID is the process's own (unshare, bash, chroot and env exec).
  # shellcheck disable=SC2016  # expanded by the inner shell
  exec unshare -m --propagation private bash -c '
    set -e
    root=$1 mode=$2 mounts=$3 user=$4 cwd=$5; shift 5
    mount --bind "$root" "$root"
    mount -t tmpfs -o size=64m,mode=1777 tmpfs "$root/tmp"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount -t tmpfs -o size=1m,mode=755 tmpfs "$root/dev"
    for d in null zero full random urandom tty; do
      touch "$root/dev/$d"
      mount --bind "/dev/$d" "$root/dev/$d"
    done
    mkdir "$root/dev/shm"
    mount -t tmpfs -o size=64m,mode=1777 tmpfs "$root/dev/shm"
    ln -s /proc/self/fd "$root/dev/fd"
    ln -s /proc/self/fd/0 "$root/dev/stdin"
    ln -s /proc/self/fd/1 "$root/dev/stdout"
    ln -s /proc/self/fd/2 "$root/dev/stderr"
    for m in $mounts; do
      IFS=: read -r src dest ro <<<"$m"
      # Inside the root, as a runtime resolves it (/var/run is a link to /run there).
      dest="$(chroot "$root" realpath -m "$dest")"
      if [ -d "$src" ]; then
        mkdir -p "$root$dest"
      else
        mkdir -p "$(dirname "$root$dest")"
        touch "$root$dest"
      fi
      mount --bind "$src" "$root$dest"
      if [ "$ro" = ro ]; then mount -o remount,bind,ro "$root$dest"; fi
    done
    if [ "$mode" = RO ]; then mount -o remount,bind,ro "$root"; fi
    n=$1; shift
    exec chroot --userspec="$user" "$root" /usr/bin/env -i -C "$cwd" "${@:1:$n}" "${@:$((n + 1))}"
  ' in_pod "$root" "$mode" "$mounts" "$user" "$cwd" "${#env[@]}" "${env[@]}" "$@"
}
