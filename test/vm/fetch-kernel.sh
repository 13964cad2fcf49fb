#!/usr/bin/env bash
# Fetches Debian's current bookworm kernel package for the cgroup v2 test VM
# (test/vm/run.sh) and unpacks it into a cache directory.
#
#   test/vm/fetch-kernel.sh            # cache in $GLEANER_VM_CACHE or /var/cache/gleaner-vm
#
# Layout of the cache:
#   <cache>/<package>_<version>/       the package unpacked by dpkg-deb -x (boot/, lib/modules/)
#   <cache>/current -> <package>_<version>
#
# Idempotent: when `current` already points at the version apt offers, nothing is downloaded.
# Never fatal: the VM tests skip without a kernel, so a machine that cannot download one
# should still finish installing everything else. Every failure is a warning and exit 0.
set -euo pipefail

cache="${GLEANER_VM_CACHE:-/var/cache/gleaner-vm}"

warn() { echo "fetch-kernel: warning: $*; the VM tests (test/vm) will skip" >&2; }

have_current() { [ -f "$cache/current/.complete" ]; }

# The kernel's ABI-named package (linux-image-6.1.0-NN-amd64) that the meta package
# linux-image-amd64 depends on today. apt's lists may be missing on a fresh machine,
# so update them once if the first look-up finds nothing.
resolve() {
  apt-cache depends linux-image-amd64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9].*-amd64$/ { print $2; exit }'
}
pkg="$(resolve || true)"
if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ]; then
  apt-get update -qq >/dev/null 2>&1 || true
  pkg="$(resolve || true)"
fi
if [ -z "$pkg" ]; then
  # Offline with a kernel already cached is fine: keep using it.
  if have_current; then echo "fetch-kernel: apt has no linux-image-amd64; keeping $(readlink "$cache/current")"; exit 0; fi
  warn "apt-cache cannot resolve linux-image-amd64"
  exit 0
fi
version="$(apt-cache policy "$pkg" 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }')"
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  if have_current; then exit 0; fi
  warn "no candidate version for $pkg"
  exit 0
fi
name="${pkg}_${version//:/%3a}"

if have_current && [ "$(readlink "$cache/current")" = "$name" ]; then
  echo "fetch-kernel: $pkg $version already in $cache"
  exit 0
fi

if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
  warn "cache directory $cache is not writable (run as root or set GLEANER_VM_CACHE)"
  exit 0
fi

work="$(mktemp -d "$cache/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# apt-get download drops privileges to _apt; a directory it can write to avoids the
# "unsandboxed" notice when run as root.
chmod 755 "$work"
chown _apt "$work" 2>/dev/null || true

echo "fetch-kernel: downloading $pkg $version into $cache"
if ! (cd "$work" && apt-get download -qq "$pkg=$version" >/dev/null 2>"$work/apt.err"); then
  cat "$work/apt.err" >&2 || true
  if have_current; then
    echo "fetch-kernel: download failed; keeping $(readlink "$cache/current")" >&2
    exit 0
  fi
  warn "apt-get download $pkg failed"
  exit 0
fi
deb="$(find "$work" -maxdepth 1 -name '*.deb' -print -quit)"
if [ -z "$deb" ] || ! dpkg-deb -x "$deb" "$work/root"; then
  warn "could not unpack $pkg"
  exit 0
fi
# Debian installs vmlinuz mode 0600; the VM is also started by non-root users.
chmod a+r "$work"/root/boot/vmlinuz-* 2>/dev/null || true
touch "$work/root/.complete"

# Swap in the new kernel atomically (rename of a symlink), then drop older ones.
rm -rf "${cache:?}/$name"
mv "$work/root" "$cache/$name"
ln -sfn "$name" "$cache/.current.new"
mv -T "$cache/.current.new" "$cache/current"
for old in "$cache"/linux-image-*; do
  [ -e "$old" ] || continue
  [ "$(basename "$old")" = "$name" ] || rm -rf "$old"
done
# Initramfs images built by run.sh for the old kernel are stale now.
find "$cache" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -newer "$cache/$name/.complete" -delete 2>/dev/null || true
echo "fetch-kernel: $pkg $version ready in $cache/current"
