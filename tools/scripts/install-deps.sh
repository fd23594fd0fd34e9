#!/usr/bin/env bash
# Installs the Debian packages weft builds and tests with, when any is missing.
# Debian 12, as root (or with sudo). The CUDA toolkit is not a Debian package: CUDA code is
# built when nvcc is found (/usr/local/cuda), and skipped otherwise.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libhwloc-dev hwloc            # topology discovery; lstopo for the tests
  libssl-dev                    # HMAC-SHA-256 (libcrypto) for authenticated connections
  libhwloc-plugins              # hwloc's libxml2 reader: the topology fixtures carry comments its minimal parser refuses
  libgtest-dev googletest       # tests
  libbenchmark-dev              # kernel benchmarks
  iproute2                      # network-namespace tests
  tcpdump openssl               # the TLS capture test; certificates for the TLS tests
  libucx-dev                    # the UCX transport
  libibverbs-dev                # the RDMA verbs transport (built; runs where a device exists)
  ucx-utils iperf3              # ceilings beside the between-hosts benchmark (ucx_perftest, iperf3)
  openmpi-bin libopenmpi-dev    # perf/compare.py's side-by-side Open MPI benchmark (perf/mpi_collective_bench.cc)
  libgloo-dev                   # and its Gloo benchmark (perf/gloo_allreduce_bench.cc)
  python3 python3-jsonschema    # report and plot scripts; -J documents checked against their schema
  clang-format-14               # lint.format keeps the tree formatted
  python3-torch libtorch-dev pybind11-dev  # the torch.distributed backend (integrations/pytorch)
  python3-matplotlib dataset-fashion-mnist  # the convergence study's plots and data (examples/convergence)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
