#!/usr/bin/env bash
# Runs one command inside a throwaway QEMU VM whose kernel (Debian's bookworm kernel)
# has a pure cgroup v2 hierarchy, with this machine's root filesystem shared into it,
# so a test binary built here runs there unchanged. See docs/testing-vm.md.
#
#   test/vm/run.sh [--timeout S] [--mem M] [--smp N] -- COMMAND [ARGS...]
#
# Exit code: the command's; 77 when the VM cannot be had (no QEMU, no static busybox, no
# kernel in the cache, or the VM did not boot), so ctest reports a skip; 124 when the
# command ran past --timeout; 125 when the VM died before the command finished, or its
# kernel stalled twice (a first stall is retried once in a new VM).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${GLEANER_VM_CACHE:-/var/cache/gleaner-vm}"
timeout=600
mem=2048
smp=2
# TCG (software emulation) by default: it boots Debian's stock kernel on any x86 host.
accel="${GLEANER_VM_ACCEL:-tcg}"
# Booting takes 6 to 10 s on 2 cores; a VM that has not reached the command long after that
# will not, and is reported as a skip rather than waited on for the whole --timeout.
boot_timeout="${GLEANER_VM_BOOT_TIMEOUT:-180}"
silence="${GLEANER_VM_SILENCE:-240}"
debug="${GLEANER_VM_DEBUG:-0}"
# 9p cache mode of the shared host root in the guest (mount.9p's cache=). mmap: programs
# start about twice as fast as with none, and shared writable mmap works; loose is faster
# still but trusts the guest's caches for the whole run.
p9cache="${GLEANER_VM_9P_CACHE:-mmap}"

usage() {
  sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}
skip() {
  echo "skipping: $*" >&2
  exit 77
}

while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) timeout="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --smp) smp="$2"; shift 2 ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) echo "run.sh: unknown option $1" >&2; usage ;;
  esac
done
[ $# -gt 0 ] || usage
for n in "$timeout" "$mem" "$smp" "$boot_timeout" "$silence"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "run.sh: not a number: $n" >&2; exit 2; }
done

# --- what the VM needs from the host --------------------------------------------------
qemu="$(command -v qemu-system-x86_64 || true)"
[ -n "$qemu" ] || skip "qemu-system-x86_64 not found (Debian package qemu-system-x86; scripts/install-deps.sh)"
"$qemu" -device help 2>/dev/null | grep -q '"virtio-9p-pci"' ||
  skip "$qemu has no virtio-9p-pci device (virtfs)"
busybox=/bin/busybox
# The initramfs holds no libraries, so busybox must be the static build.
if [ ! -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
  skip "no static $busybox (Debian package busybox-static; scripts/install-deps.sh)"
fi
command -v cpio >/dev/null 2>&1 || skip "cpio not found (scripts/install-deps.sh)"
kroot="$cache/current"
vmlinuz="$(find "$kroot/boot/" -maxdepth 1 -name 'vmlinuz-*' -print -quit 2>/dev/null || true)"
if [ -z "$vmlinuz" ] || [ ! -r "$vmlinuz" ]; then
  skip "no VM kernel in $cache (test/vm/fetch-kernel.sh, run by scripts/install-deps.sh, fetches it)"
fi
kver="${vmlinuz##*/vmlinuz-}"
moddir="$kroot/lib/modules/$kver"

# --- temporary files, removed on every way out ----------------------------------------
tmp="$(mktemp -d "${TMPDIR:-/tmp}/gleaner-vm.XXXXXX")"
share="$tmp/share" # shared into the guest over 9p (mount tag gleanerrun)
mkdir "$share"
qpid=""
tpid=""
# shellcheck disable=SC2317 # called by the traps
cleanup() {
  if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
    kill "$qpid" 2>/dev/null || true
    sleep 1
    kill -9 "$qpid" 2>/dev/null || true
  fi
  [ -z "$tpid" ] || kill "$tpid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

# --- the initramfs: busybox, init.sh and the 9p modules; cached per inputs -------------
# The modules the 9p root needs. Each may be built in or absent in a given kernel.
# The load order comes from each module's own `depends=` (the package ships no
# modules.dep), so a dependency always loads before its user.
modules=(virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
         netfs fscache 9pnet 9pnet_virtio 9p)
key="$({
  # run.sh itself: it decides what goes into the image.
  sha256sum "$here/init.sh" "${BASH_SOURCE[0]}" "$busybox"
  echo "$vmlinuz ${modules[*]}"
  stat -c '%Y %s' "$vmlinuz"
} | sha256sum | cut -c1-16)"
initrd="$cache/initramfs-$key.cpio.gz"
if [ ! -s "$initrd" ]; then
  # A cache the caller cannot write (not root) still works: build for this run only.
  if ! touch "$cache/.write-test" 2>/dev/null; then initrd="$tmp/initramfs.cpio.gz"; fi
  rm -f "$cache/.write-test"
  ir="$tmp/initramfs"
  mkdir -p "$ir/bin" "$ir/modules"
  cp "$busybox" "$ir/bin/busybox"
  cp "$here/init.sh" "$ir/init"
  chmod 755 "$ir/init"
  : >"$ir/modules/order"
  declare -A seen=()
  add_module() { # NAME: copy (decompressed) NAME and, first, what it depends on
    local m="$1" f deps d
    [ -z "${seen[$m]:-}" ] || return 0
    seen[$m]=1
    # Module files spell - or _ either way; the kernel treats them as one.
    f="$(find "$moddir/kernel" \( -name "$m.ko*" -o -name "${m//_/-}.ko*" \) -print -quit 2>/dev/null || true)"
    [ -n "$f" ] || return 0 # built in, or not in this kernel
    # busybox insmod reads plain .ko only.
    case "$f" in
      *.ko) cp "$f" "$ir/modules/$m.ko" ;;
      *.ko.xz) xz -dc "$f" >"$ir/modules/$m.ko" ;;
      *.ko.gz) gzip -dc "$f" >"$ir/modules/$m.ko" ;;
      *.ko.zst) zstd -qdc "$f" >"$ir/modules/$m.ko" ;;
      *) return 0 ;;
    esac
    deps="$(tr '\0' '\n' <"$ir/modules/$m.ko" | sed -n 's/^depends=//p' | head -n 1)"
    for d in ${deps//,/ }; do add_module "$d"; done
    echo "$m" >>"$ir/modules/order"
  }
  for m in "${modules[@]}"; do add_module "$m"; done
  # Written next to the final name, then renamed: concurrent runs never read half a file.
  (cd "$ir" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet | gzip -1) >"$initrd.$$"
  mv -f "$initrd.$$" "$initrd"
  # Images for other inputs are stale.
  [ "$initrd" = "$tmp/initramfs.cpio.gz" ] ||
    find "$cache" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -name "${initrd##*/}" -delete 2>/dev/null || true
fi

# --- the command, as a script run by bash inside the guest's chroot -------------------
# The caller's working directory and the environment a test needs: PATH and the like (not
# TERM: the console is a log, not a terminal, so gtest and others print no colour codes),
# every GLEANER_* and GTEST_* variable, sanitizer options; GLEANER_IN_VM=1 tells tests
# where they are.
{
  echo '#!/bin/bash'
  while IFS= read -r var; do
    case "$var" in
      PATH | HOME | USER | LOGNAME | LANG | LANGUAGE | LC_* | TZ | GLEANER_* | GTEST_* | \
        ASAN_OPTIONS | UBSAN_OPTIONS | LSAN_OPTIONS | TSAN_OPTIONS)
        printf 'export %s=%q\n' "$var" "${!var}" ;;
    esac
  done < <(compgen -e)
  echo 'export GLEANER_IN_VM=1'
  printf 'cd -- %q || exit 125\n' "$PWD"
  printf 'exec'
  printf ' %q' "$@"
  printf '\n'
} >"$share/cmd.sh"

# The guest mounts a fresh tmpfs on /tmp. Directories of the caller's under the host's
# /tmp (a build tree in /tmp, say) would vanish behind it, so the top-level /tmp entries
# of the working directory, the command and any argument that names an existing path
# are listed for the guest to bind back from the host.
{
  cmd_path="$1"
  [[ "$cmd_path" == */* ]] || cmd_path="$(command -v -- "$1" 2>/dev/null || true)"
  for p in "$PWD" "$cmd_path" "${@:2}"; do
    [[ "$p" == /* ]] || p="$PWD/$p"
    [ -e "$p" ] || continue
    p="$(realpath -s -- "$p")"
    if [[ "$p" == /tmp/?* ]]; then
      top="${p#/tmp/}"
      echo "${top%%/*}"
    fi
  done | sort -u
} >"$share/keep-tmp"

# --- boot -------------------------------------------------------------------------------
append="console=ttyS0 panic=-1 psi=1 mitigations=off gleaner.9pcache=$p9cache"
if [ "$debug" = 1 ]; then append+=" loglevel=7 gleaner.debug=1"; else append+=" quiet"; fi
# Extra kernel parameters, e.g. to try a boot option without editing this script.
[ -z "${GLEANER_VM_APPEND:-}" ] || append+=" $GLEANER_VM_APPEND"
console="$tmp/console.log"
# A guest kernel that reports a CPU stuck or RCU stalled has lost its CPU to the emulator
# (TCG on a loaded host): nothing it runs afterwards can be trusted to finish, so the VM is
# stopped at once instead of at --timeout, and the command is run once more in a new VM.
stall_pattern='soft lockup - CPU|rcu_(preempt|sched) detected stalls|rcu: INFO: .* detected stalls'
# A guest that prints nothing at all for this long after booting is taken as stalled too
# (a frozen TCG guest may not get to print a lockup report); the test suites print every
# test's start and end, and none runs this long. A command that really hangs hangs again
# in the new VM and still fails (125). GLEANER_VM_SILENCE sets it (seconds).

# Asks the silent guest for its tasks (init.sh lists them on the console) and prints the
# list, or says the guest did not answer within 30 s.
dump_tasks() {
  local from i
  from=$(stat -c %s "$console" 2>/dev/null || echo 0)
  : >"$share/dump"
  for ((i = 0; i < 150; i++)); do
    if [ ! -e "$share/dump" ] && tail -c +"$((from + 1))" "$console" | grep -q "gleaner-vm: end of tasks"; then
      tail -c +"$((from + 1))" "$console" | tr -d '\r' | sed -n '/gleaner-vm: tasks/,/gleaner-vm: end of tasks/p'
      return
    fi
    sleep 0.2
  done
  echo "the guest did not list its tasks within 30 s: it has lost its CPUs, not just its command"
}

# Boots the VM and waits for it; sets booted, stopped (boot, timeout, stall or empty),
# why (for a stall), qrc and elapsed.
boot_and_wait() {
  : >"$console"
  rm -f "$share/booted" "$share/exit" "$share/dump"
  start=$SECONDS
  # The host root is shared read-write: the command runs this machine's binaries and
  # writes its results where it would outside the VM. multidevs=remap keeps inode numbers
  # unique across the host's mounts under /.
  "$qemu" -accel "$accel" -cpu max -m "$mem" -smp "$smp" \
    -nodefaults -no-user-config -display none -monitor none -no-reboot \
    -serial "file:$console" \
    -kernel "$vmlinuz" -initrd "$initrd" -append "$append" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap,id=hostroot \
    -virtfs "local,path=$share,mount_tag=gleanerrun,security_model=passthrough,id=gleanerrun" \
    </dev/null >"$tmp/qemu.log" 2>&1 &
  qpid=$!
  # The guest's console, live, without the serial line's carriage returns.
  tail -n +1 -s 0.2 -F --pid="$qpid" "$console" 2>/dev/null | tr -d '\r' &
  tpid=$!

  booted=""
  stopped=""
  why=""
  local seen_size=-1 last_output=0 size
  while kill -0 "$qpid" 2>/dev/null; do
    elapsed=$((SECONDS - start))
    size=$(stat -c %s "$console" 2>/dev/null || echo 0)
    if [ "$size" != "$seen_size" ]; then
      seen_size=$size
      last_output=$elapsed
    fi
    if [ -z "$booted" ] && [ -e "$share/booted" ]; then
      booted=$elapsed
      [ "$debug" != 1 ] || echo "run.sh: booted in ${booted} s" >&2
    fi
    if [ -z "$booted" ] && [ "$elapsed" -ge "$boot_timeout" ]; then
      stopped=boot
      break
    fi
    if [ "$elapsed" -ge "$timeout" ]; then
      stopped=timeout
      break
    fi
    if [ ! -s "$share/exit" ] && grep -Eq "$stall_pattern" "$console"; then
      stopped=stall
      why=$(grep -E "$stall_pattern" "$console" | head -n 3)
      break
    fi
    if [ -n "$booted" ] && [ ! -s "$share/exit" ] && [ $((elapsed - last_output)) -ge "$silence" ]; then
      stopped=stall
      why="no console output for ${silence} s (GLEANER_VM_SILENCE); its last lines:
$(tail -n 3 "$console" | tr -d '\r')
$(dump_tasks)"
      break
    fi
    sleep 0.2
  done
  if [ -n "$stopped" ]; then
    kill "$qpid" 2>/dev/null || true
  fi
  qrc=0
  wait "$qpid" || qrc=$?
  qpid=""
  wait "$tpid" 2>/dev/null || true
  tpid=""
  [ -z "$booted" ] && [ -e "$share/booted" ] && booted=$((SECONDS - start))
  elapsed=$((SECONDS - start))
}

boot_and_wait
if [ "$stopped" = stall ]; then
  echo "run.sh: the guest stalled (or its command hung) after ${elapsed} s; VM killed, running the command once more:" >&2
  printf '%s\n' "$why" | sed 's/^/run.sh:   /' >&2
  boot_and_wait
fi

if [ "$stopped" = boot ]; then
  skip "the VM did not reach the command within ${boot_timeout} s (GLEANER_VM_BOOT_TIMEOUT; GLEANER_VM_DEBUG=1 shows the boot)"
fi
if [ "$stopped" = stall ]; then
  echo "run.sh: the guest stalled (or its command hung) again after ${elapsed} s; VM killed:" >&2
  printf '%s\n' "$why" | sed 's/^/run.sh:   /' >&2
  exit 125
fi
if [ "$stopped" = timeout ]; then
  echo "run.sh: timed out after ${timeout} s (--timeout); VM killed" >&2
  exit 124
fi
if [ -z "$booted" ]; then
  if [ -s "$tmp/qemu.log" ]; then sed 's/^/qemu: /' "$tmp/qemu.log" >&2; fi
  skip "the VM stopped before reaching the command (qemu exit $qrc; GLEANER_VM_DEBUG=1 shows the boot)"
fi
if [ ! -s "$share/exit" ]; then
  if [ -s "$tmp/qemu.log" ]; then sed 's/^/qemu: /' "$tmp/qemu.log" >&2; fi
  echo "run.sh: the VM stopped before the command finished (qemu exit $qrc; guest crash or panic?)" >&2
  exit 125
fi
rc="$(cat "$share/exit")"
echo "run.sh: exit $rc after ${elapsed} s (boot ${booted} s, ${accel}, $kver)" >&2
exit "$rc"
