#!/usr/bin/env bash
# Installs every build, test and demo dependency of Gleaner from Debian packages, then
# fetches the kernel of the cgroup v2 test VM (test/vm/fetch-kernel.sh).
# Idempotent: packages already present are left alone, and apt is only asked when
# something is missing.
set -euo pipefail

packages=(
  # toolchain and build
  build-essential cmake pkg-config clang llvm clang-format clang-tidy
  # eBPF: libbpf CO-RE, skeletons, vmlinux.h
  libbpf-dev bpftool libelf-dev zlib1g-dev
  # networking, TLS, JSON, metrics, logging, CLI
  libboost-dev libssl-dev libyaml-dev nlohmann-json3-dev prometheus-cpp-dev libspdlog-dev libfmt-dev libcli11-dev
  # gRPC: the Karmada scheduler-estimator service (C++ server, code from the .proto files)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # real peers used by integration tests, the demo and benchmarks
  prometheus prometheus-node-exporter python3 python3-kubernetes python3-yaml wrk procps iproute2
  python3-grpcio python3-protobuf
  # real LS services and BE stressors of the frontier benchmark (bench/frontier), and the
  # charts of its report; their system services are left stopped and disabled (below)
  memcached redis-server nginx-light stress-ng gnuplot-nox
  # the cgroup v2 VM of test/vm: QEMU (TCG), a static busybox for its initramfs, cpio and
  # xz to build that image
  qemu-system-x86 busybox-static cpio xz-utils
)
# kubectl: Debian's kubernetes-client, unless the machine already has a kubectl (some images
# ship one from another package, which owns the same path).
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "install-deps: missing packages (${missing[*]}) and not root; run as root" >&2
      exit 1
    fi
  fi

  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The benchmark starts its own instances of memcached, Redis and nginx on loopback ports
  # of its own; the packages' system-wide services must not start (nginx would take port
  # 80). policy-rc.d tells the packages' scripts so, unless the machine has its own.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    own_policy=1
  fi
  $SUDO apt-get update -qq
  status=0
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" || status=$?
  [ "$own_policy" = 0 ] || $SUDO rm -f "$policy"
  [ "$status" = 0 ] || exit "$status"
  # Under systemd the units of the packages installed here are still enabled for the next
  # boot: disable them (a service the machine had before is left alone).
  if [ -d /run/systemd/system ]; then
    for p in "${missing[@]}"; do
      case "$p" in
        memcached | redis-server) unit="$p" ;;
        nginx-light) unit=nginx ;;
        *) continue ;;
      esac
      $SUDO systemctl disable --now "$unit" >/dev/null 2>&1 || true
    done
  fi
fi

# The VM's kernel: Debian's kernel package, downloaded once into a cache outside the tree
# (test/vm/fetch-kernel.sh does nothing when the current one is there). Never fatal: without
# it only the VM tests skip. The default cache is root's; a user who set GLEANER_VM_CACHE
# fetches into their own.
fetch_kernel="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/test/vm/fetch-kernel.sh"
if [ "$(id -u)" -ne 0 ] && [ -z "${GLEANER_VM_CACHE:-}" ] && command -v sudo >/dev/null 2>&1; then
  sudo bash "$fetch_kernel" || echo "install-deps: warning: no VM kernel; the VM tests will skip" >&2
else
  bash "$fetch_kernel" || echo "install-deps: warning: no VM kernel; the VM tests will skip" >&2
fi
