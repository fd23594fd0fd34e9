# Several "hosts" as network namespaces on one bridge: sourced by the netns tests (and by the
# performance and characterization scripts). Host i (0-based) is namespace weft-h<i>-<tag> with
# eth0 at 198.18.1.<i+1>/24; the bridge lives in its own namespace, so the machine's own
# network is never touched. HOSTS_NICS=N (default 1) gives every host N NICs, eth<k> at
# 198.18.<k+1>.<i+1>/24 on bridge br<k>: one network per rail, as rail-optimized clusters
# are built (NIC k of one host reaches NIC k of the others only). Each NIC's link can be
# shaped with tc tbf on both ends of its veth (tbf shapes egress only; netem does not exist
# here). hosts_cleanup removes everything and is installed as the EXIT trap by hosts_create.
#   hosts_create H [RATE]       e.g. hosts_create 3 1gbit; exits 77 (skipped) when it cannot
#   hosts_shape I RATE          reshapes host I's link (both ends) to RATE: one slow host
#   hosts_ns I                  the namespace of host I
#   hosts_addr I [K]            its address (on NIC K, default 0)
#   hosts_run_ranks R OUTDIR CMD [ARGS...]
#                               R ranks per host, rank = host*R + local, each with RANK,
#                               WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT (host 0), WEFT_SECRET,
#                               WEFT_HOSTNAME, NCCL_SOCKET_IFNAME (eth0, or every NIC's
#                               name with HOSTS_NICS) and $HOSTS_ENV; output in
#                               OUTDIR/rank<N>.log; sets HOSTS_PIDS (index = rank)
#   hosts_wait_ranks            waits for them all; returns how many failed
#   hosts_goodput I J           iperf3's goodput between hosts I and J, both directions at once
#                               (as an all-reduce of 2 ranks sends), 5 s: the slower
#                               direction in GB/s, on stdout; returns 77 without iperf3

HOSTS_TAG=${HOSTS_TAG:-$$}
HOSTS_COUNT=0
HOSTS_PIDS=()
HOSTS_ENV=${HOSTS_ENV:-}
HOSTS_NICS=${HOSTS_NICS:-1}

hosts_ns() { echo "weft-h$1-$HOSTS_TAG"; }
hosts_addr() { echo "198.18.$((${2:-0} + 1)).$(($1 + 1))"; }
# The veth of host I's NIC K: its end in the bridge namespace, and its end in the host before
# it is renamed eth<K> (NIC 0 keeps the names of the one-NIC harness).
hosts_outer() { if [ "$2" = 0 ]; then echo "wv$1-$HOSTS_TAG"; else echo "wv$1n$2-$HOSTS_TAG"; fi; }
hosts_inner() { if [ "$2" = 0 ]; then echo "wi$1-$HOSTS_TAG"; else echo "wi$1n$2-$HOSTS_TAG"; fi; }
hosts_ifnames() {
  local k names=eth0
  for ((k = 1; k < HOSTS_NICS; k++)); do names="$names,eth$k"; done
  echo "=$names"
}
hosts_bridge_ns() { echo "weft-br-$HOSTS_TAG"; }

hosts_cleanup() {
  local pid
  for pid in "${HOSTS_PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done
  local i
  for ((i = 0; i < HOSTS_COUNT; i++)); do ip netns del "$(hosts_ns $i)" 2>/dev/null; done
  ip netns del "$(hosts_bridge_ns)" 2>/dev/null
  return 0
}

hosts_create() {
  local count=$1 rate=${2:-} i
  [ "$(id -u)" = 0 ] || { echo "skipped: network namespaces need root"; exit 77; }
  command -v ip >/dev/null || { echo "skipped: iproute2 (ip) is not installed"; exit 77; }
  if [ -n "$rate" ]; then command -v tc >/dev/null || { echo "skipped: tc is not installed"; exit 77; }; fi
  trap hosts_cleanup EXIT
  local br
  br=$(hosts_bridge_ns)
  ip netns add "$br" 2>/dev/null || { echo "skipped: cannot create network namespaces here"; exit 77; }
  local k
  for ((k = 0; k < HOSTS_NICS; k++)); do
    ip -n "$br" link add "br$k" type bridge || { echo "skipped: cannot create a bridge here"; exit 77; }
    ip -n "$br" link set "br$k" up || exit 1
  done
  for ((i = 0; i < count; i++)); do
    local ns
    ns=$(hosts_ns $i)
    ip netns add "$ns" || exit 1
    HOSTS_COUNT=$((i + 1))
    ip -n "$ns" link set lo up || exit 1
    for ((k = 0; k < HOSTS_NICS; k++)); do
      local outer inner
      outer=$(hosts_outer $i $k) inner=$(hosts_inner $i $k)
      ip link add "$outer" type veth peer name "$inner" || { echo "skipped: cannot create veth pairs here"; exit 77; }
      ip link set "$inner" netns "$ns" && ip -n "$ns" link set "$inner" name "eth$k" || exit 1
      ip link set "$outer" netns "$br" && ip -n "$br" link set "$outer" master "br$k" || exit 1
      ip -n "$ns" addr add "$(hosts_addr $i $k)/24" dev "eth$k" || exit 1
      ip -n "$ns" link set "eth$k" up && ip -n "$br" link set "$outer" up || exit 1
      if [ -n "$rate" ]; then
        ip netns exec "$ns" tc qdisc add dev "eth$k" root tbf rate "$rate" burst 256kb latency 50ms || exit 1
        ip netns exec "$br" tc qdisc add dev "$outer" root tbf rate "$rate" burst 256kb latency 50ms || exit 1
      fi
    done
  done
  [ -n "$rate" ] && echo "# $count hosts with $HOSTS_NICS NIC(s) each, every link shaped with tc tbf to $rate each way"
  return 0
}

hosts_shape() {
  local i=$1 rate=$2 k
  for ((k = 0; k < HOSTS_NICS; k++)); do
    ip netns exec "$(hosts_ns "$i")" tc qdisc replace dev "eth$k" root tbf rate "$rate" burst 256kb latency 50ms || return 1
    ip netns exec "$(hosts_bridge_ns)" tc qdisc replace dev "$(hosts_outer "$i" $k)" root tbf rate "$rate" burst 256kb \
      latency 50ms || return 1
  done
  echo "# host $i's links shaped to $rate each way"
}

hosts_run_ranks() {
  local per=$1 out=$2 i l
  shift 2
  local used=${HOSTS_RUN_COUNT:-$HOSTS_COUNT}
  local world=$((used * per))
  local port=$((20000 + RANDOM % 20000))
  local secret
  secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  HOSTS_PIDS=()
  for ((i = 0; i < used; i++)); do
    for ((l = 0; l < per; l++)); do
      local rank=$((i * per + l))
      # shellcheck disable=SC2086
      # HOSTS_PIN=1: host i's ranks run on CPU i mod the CPU count, as a host has cores of its own.
      local pin=()
      [ "${HOSTS_PIN:-0}" = 1 ] && pin=(taskset -c $((i % $(nproc))))
      ip netns exec "$(hosts_ns $i)" "${pin[@]}" env RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$l LOCAL_WORLD_SIZE=$per \
        MASTER_ADDR="$(hosts_addr 0)" MASTER_PORT=$port WEFT_SECRET="$secret" WEFT_HOSTNAME="host$i" \
        NCCL_SOCKET_IFNAME="$(hosts_ifnames)" $HOSTS_ENV timeout 300 "$@" >"$out/rank$rank.log" 2>&1 &
      HOSTS_PIDS[rank]=$!
    done
  done
}

hosts_wait_ranks() {
  local failed=0 pid
  for pid in "${HOSTS_PIDS[@]}"; do wait "$pid" || failed=$((failed + 1)); done
  HOSTS_PIDS=()
  return $failed
}

hosts_goodput() {
  command -v iperf3 >/dev/null || return 77
  local report server
  report=$(mktemp)
  ip netns exec "$(hosts_ns "$2")" iperf3 -s -1 >/dev/null 2>&1 &
  server=$!
  sleep 0.5
  ip netns exec "$(hosts_ns "$1")" iperf3 -c "$(hosts_addr "$2")" -t 5 --bidir -J >"$report" 2>&1
  wait $server
  /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["end"]
rates = [d["sum_sent"]["bits_per_second"], d["sum_sent_bidir_reverse"]["bits_per_second"]]
print("%.3f" % (min(rates) / 8e9))' "$report"
  local rc=$?
  rm -f "$report"
  return $rc
}
