#!/bin/busybox sh
# PID 1 of the cgroup v2 test VM (see test/vm/run.sh, docs/testing-vm.md). Runs from the
# initramfs under busybox ash: loads the virtio/9p modules, mounts the host's root
# filesystem (shared by QEMU over 9p) at /host, gives it the kernel filesystems a booted
# machine has (with a pure cgroup v2 hierarchy), then chroots into it and runs the
# command that run.sh wrote into the run directory (a second 9p share). The exit code
# goes back to the host as a file in that share; then the VM powers off.
#
# Not `set -e`: PID 1 must never exit (the kernel would panic), so every failure is
# reported and followed by a power-off instead.
export PATH=/bin:/sbin

/bin/busybox mkdir -p /bin /sbin /usr/bin /usr/sbin /proc /sys /dev /host
/bin/busybox --install -s

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# Settings from run.sh, on the kernel command line.
debug=0
cache=none
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    gleaner.debug=1) debug=1; set -x ;;
    gleaner.9pcache=*) cache="${arg#gleaner.9pcache=}" ;;
  esac
done

say() { echo "gleaner-vm: $*" >/dev/console; }
off() {
  sync
  poweroff -f
  # poweroff -f needs ACPI; the sysrq path does not.
  echo o >/proc/sysrq-trigger
  sleep 10
}
die() {
  say "$*"
  [ "$debug" = 1 ] && dmesg | tail -n 40 >/dev/console
  off
}

# Each module may be built into the kernel or missing from this kernel version: both
# are fine as long as the 9p mount below works. run.sh put them here already
# decompressed (busybox insmod reads plain .ko only) and wrote the load order.
while read -r m; do
  [ -f "/modules/$m.ko" ] || continue
  insmod "/modules/$m.ko" 2>/dev/null || [ "$debug" = 0 ] || say "insmod $m failed"
done </modules/order

# msize: large messages make 9p reads much faster. The cache mode of the host root is
# run.sh's choice (GLEANER_VM_9P_CACHE); the run directory is always cache=none, so
# the host sees the exit code the moment it is written.
opts=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$opts,cache=$cache" hostroot /host || die "cannot mount the host root over 9p (tag hostroot)"

# The kernel filesystems of a booted machine, mounted in the guest only; writes to
# the host's own /tmp and /run are kept off by fresh tmpfs instances.
mount -t proc proc /host/proc || die "cannot mount /proc"
mount -t sysfs sysfs /host/sys || die "cannot mount /sys"
mount -t devtmpfs devtmpfs /host/dev || die "cannot mount /dev"
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /host/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /host/dev/shm
# The run directory first (cmd.sh from run.sh in, booted/exit markers out), in the
# initramfs for now: it says which of the host's /tmp directories stay visible.
mkdir -p /run-share /host-tmp
mount -t 9p -o "$opts,cache=none" gleanerrun /run-share || die "cannot mount the run directory over 9p (tag gleanerrun)"
# The host's /tmp, reachable under /host-tmp once the fresh tmpfs hides it.
mount -o bind /host/tmp /host-tmp || die "cannot bind the host's /tmp"
mount -t tmpfs -o mode=1777 tmpfs /host/tmp || die "cannot mount /tmp"
# The caller's own directories under /tmp (its working directory, the command, paths
# among its arguments: run.sh lists them in keep-tmp) are bound back from the host.
while read -r name; do
  if [ -z "$name" ] || [ ! -d "/host-tmp/$name" ]; then continue; fi
  if ! { mkdir -p "/host/tmp/$name" && mount -o bind "/host-tmp/$name" "/host/tmp/$name"; }; then
    say "cannot keep the host's /tmp/$name"
  fi
done <"/run-share/keep-tmp"
mount -t tmpfs -o mode=755 tmpfs /host/run || die "cannot mount /run"
mkdir -p /host/run/lock

# The unified hierarchy only: no v1 controller is mounted anywhere, so every
# controller is available to cgroup2, and PID 1 (and so the command) sits at "0::/".
mount -t cgroup2 -o nsdelegate cgroup2 /host/sys/fs/cgroup || die "cannot mount cgroup2"
ctl=/host/sys/fs/cgroup/cgroup.subtree_control
# All at once first; one by one if some controller is missing from this kernel.
echo "+cpu +cpuset +memory +io +pids" >"$ctl" 2>/dev/null ||
  for c in cpu cpuset memory io pids; do echo "+$c" >"$ctl" 2>/dev/null || say "controller $c not available"; done
mount -t bpf -o mode=700 bpf /host/sys/fs/bpf 2>/dev/null || say "no bpffs"
[ -d /host/sys/kernel/tracing ] && mount -t tracefs tracefs /host/sys/kernel/tracing 2>/dev/null
[ -d /host/sys/kernel/debug ] && mount -t debugfs debugfs /host/sys/kernel/debug 2>/dev/null

# Loopback: tests talk to servers they start on 127.0.0.1.
ip link set lo up
hostname gleaner-vm

# The run directory inside the chroot. Under the guest's tmpfs /tmp, so nothing is
# created on the host to mount it.
run=/host/tmp/gleaner-vm
mkdir -p "$run"
mount -o bind /run-share "$run" || die "cannot bind the run directory"
echo booted >"$run/booted"

# When run.sh finds the console silent for too long it asks, through the run directory
# ("dump"), for the state of every task before it kills the VM: a guest whose command
# waits on something (a child that does not die, say) still answers, and the console then
# says what each process waits in; a guest that does not answer has lost its CPUs.
(
  while [ ! -e "$run/exit" ]; do
    if [ -e "$run/dump" ]; then
      echo "gleaner-vm: tasks (pid, name, state, wait channel; kernel stack when blocked):"
      for p in /proc/[0-9]*; do
        grep -q . "$p/cmdline" 2>/dev/null || continue  # user space only (no kernel threads)
        state=$(sed -n 's/^State:[[:space:]]*//p' "$p/status" 2>/dev/null)
        echo "  ${p#/proc/} $(cat "$p/comm" 2>/dev/null) [$state] $(cat "$p/wchan" 2>/dev/null)"
        case "$state" in R*) ;; *) sed 's/^/      /' "$p/stack" 2>/dev/null | head -n 12 ;; esac
      done
      echo "gleaner-vm: end of tasks"
      rm -f "$run/dump"
    fi
    sleep 1
  done
) >/dev/console 2>&1 &

# An empty environment: cmd.sh sets what the command gets. Not the kernel's TERM=linux,
# say, which would make gtest colour its output on the console log.
env -i /bin/busybox chroot /host /bin/bash /tmp/gleaner-vm/cmd.sh </dev/null >/dev/console 2>&1
rc=$?
echo "$rc" >"$run/exit"
# Also on the console, for whoever reads only the log.
echo "GLEANER_VM_EXIT=$rc" >/dev/console
umount "$run" /run-share 2>/dev/null
off
