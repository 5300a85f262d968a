#!/usr/bin/env bash
# Assembles the root filesystem of one image (the Dockerfile's builder runs it):
# the given binaries in /usr/local/bin, exactly the shared libraries `ldd`
# says they load (and the dynamic loader), CA certificates where OpenSSL looks
# for them, tzdata, /etc/passwd and /etc/group naming the runner (65532) and
# tools (65533) users, an empty /tmp. With --shell, busybox's static binary
# and its applets as /bin/sh and friends, for the agent's shell tool.
#
#   image-rootfs.sh [--shell] OUT_DIR BINARY...
#
# Ends by running each binary's --help chrooted into OUT_DIR (when root), so a
# library ldd missed fails the build, not the first heartbeat.
set -euo pipefail

shell=0
[ "${1:-}" = --shell ] && { shell=1; shift; }
[ $# -ge 2 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
out=$1; shift
die() { echo "image-rootfs: $*" >&2; exit 1; }

# Copies FILE (following symlinks) to the same canonical directory under OUT,
# keeping its name: /lib/x86_64-linux-gnu/libc.so.6 lands in
# OUT/usr/lib/x86_64-linux-gnu/libc.so.6 on a merged-/usr system.
copy_canonical() {
  local file=$1 dir
  dir="$(readlink -f "$(dirname "$file")")"
  mkdir -p "$out$dir"
  cp -L "$file" "$out$dir/$(basename "$file")"
}

# On merged-/usr Debian, /lib, /lib64 and /bin are symlinks into /usr; the
# image keeps that layout so the loader's PT_INTERP path and /bin/sh resolve.
make_layout() {
  mkdir -p "$out/usr/local/bin" "$out/etc" "$out/tmp"
  chmod 1777 "$out/tmp"
  local link target
  for link in /lib /lib64 /bin /sbin; do
    [ -L "$link" ] || continue
    target="$(readlink "$link")"
    mkdir -p "$out/$(readlink -f "$link")"
    ln -sfn "$target" "$out$link"
  done
}

shared_libraries() {  # every absolute path ldd prints for the binaries, once
  local bin
  for bin in "$@"; do
    ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' ||
      die "ldd failed on $bin"
  done | sort -u
}

copy_certificates_and_zones() {
  local bundle=/etc/ssl/certs/ca-certificates.crt
  [ -s "$bundle" ] || die "$bundle missing (install ca-certificates)"
  mkdir -p "$out/etc/ssl/certs" "$out/usr/lib/ssl"
  cp "$bundle" "$out/etc/ssl/certs/"
  # OpenSSL's compiled-in defaults on Debian: /usr/lib/ssl/{cert.pem,certs}.
  ln -sfn /etc/ssl/certs/ca-certificates.crt "$out/usr/lib/ssl/cert.pem"
  ln -sfn /etc/ssl/certs "$out/usr/lib/ssl/certs"
  [ -d /usr/share/zoneinfo ] || die "/usr/share/zoneinfo missing (install tzdata)"
  mkdir -p "$out/usr/share/zoneinfo"
  # right/ (leap-second variants) is a second copy nobody here reads.
  tar -C /usr/share/zoneinfo --exclude=./right -cf - . | tar -C "$out/usr/share/zoneinfo" -xf -
  ln -sfn /usr/share/zoneinfo/Etc/UTC "$out/etc/localtime"
}

write_users() {
  cat > "$out/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nonroot:x:65532:65532:heartbeat runner:/nonexistent:/sbin/nologin
tools:x:65533:65533:heartbeat tools:/nonexistent:/sbin/nologin
EOF
  cat > "$out/etc/group" <<'EOF'
root:x:0:
nonroot:x:65532:
tools:x:65533:
EOF
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$out/etc/nsswitch.conf"
}

add_busybox() {
  local busybox=/bin/busybox applet
  # ldd fails on a static binary, saying so; capture before matching (pipefail).
  local ldd_says
  ldd_says="$(ldd "$busybox" 2>&1 || true)"
  grep -q 'not a dynamic executable' <<<"$ldd_says" ||
    die "$busybox is not the static busybox (install busybox-static)"
  install -m 0755 "$busybox" "$out/usr/bin/busybox"
  # Not its package managers: an image is not changed from inside.
  for applet in $("$busybox" --list | grep -Evx 'busybox|dpkg|dpkg-deb|rpm|rpm2cpio'); do
    ln -sfn busybox "$out/usr/bin/$applet"
  done
}

check_in_chroot() {  # each binary runs --help inside OUT: every library is there
  [ "$(id -u)" = 0 ] || { echo "image-rootfs: not root, skipped the chroot check"; return; }
  local bin
  for bin in "$@"; do
    chroot "$out" "/usr/local/bin/$(basename "$bin")" --help >/dev/null 2>&1 ||
      die "$(basename "$bin") --help fails inside $out (a missing library?)"
  done
  if [ "$shell" = 1 ]; then
    [ "$(chroot "$out" /bin/sh -c 'echo ok')" = ok ] || die "/bin/sh does not run inside $out"
  fi
}

make_layout
for bin in "$@"; do
  [ -x "$bin" ] || die "$bin is not an executable"
  install -m 0755 "$bin" "$out/usr/local/bin/$(basename "$bin")"
done
while read -r lib; do copy_canonical "$lib"; done < <(shared_libraries "$@")
copy_certificates_and_zones
write_users
[ "$shell" = 1 ] && add_busybox
check_in_chroot "$@"
echo "image-rootfs: $out: $(du -sh "$out" | cut -f1) ($(find "$out" -type f | wc -l) files)"
