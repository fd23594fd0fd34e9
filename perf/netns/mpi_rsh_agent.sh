#!/usr/bin/env bash
# Open MPI's remote shell (plm_rsh_agent) for namespace hosts (tests/netns/hosts_lib.sh): where
# mpirun would ssh to a host's address, this starts its daemon inside that host's namespace, with
# a hostname of its own (a UTS namespace), so that Open MPI sees separate nodes and uses its
# network path between them, not shared memory. Used by perf/compare.py --hosts.
#   mpi_rsh_agent.sh [ssh options] ADDRESS COMMAND...    (HOSTS_TAG in the environment)
# HOSTS_PIN=1 runs host i's processes on CPU i mod the CPU count, as hosts_run_ranks does.
set -u
while [[ "${1:-}" == -* ]]; do shift; done
address=${1:?usage: mpi_rsh_agent.sh ADDRESS COMMAND...}
shift
host=$((${address##*.} - 1))  # hosts_addr: 198.18.<nic+1>.<host+1>
pin=()
# The machine's CPUs, not nproc: mpirun (pinned to host 0's CPU) passes its affinity on to this.
[ "${HOSTS_PIN:-0}" = 1 ] && pin=(taskset -c $((host % $(getconf _NPROCESSORS_ONLN))))
exec ip netns exec "weft-h$host-${HOSTS_TAG:?HOSTS_TAG is not set}" "${pin[@]}" unshare --uts \
  sh -c "hostname host$host && $*"
