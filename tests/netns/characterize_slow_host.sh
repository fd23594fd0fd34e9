#!/usr/bin/env bash
# weft-characterize names a slow host (issue 16): 3 hosts x 1 rank, every link shaped to
# 400 Mbit/s except host 2's, shaped to a quarter of that. The report's outliers must name host2
# and exactly the pairs that touch it (0-2 and 1-2), not 0-1; the fitted Network terms must be
# in the tuning file; the report and its plots must exist. Exit 77 = skipped.
#   characterize_slow_host.sh BUILD_DIR
set -u
build=${1:?usage: characterize_slow_host.sh BUILD_DIR}
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || { echo "skipped: matplotlib is not installed for /usr/bin/python3"; exit 77; }
. "$(dirname "$0")/hosts_lib.sh"
hosts_create 3 400mbit
hosts_shape 2 100mbit || exit 1
out=$(mktemp -d)
chmod 755 "$out"
# Small sweep: the point is the point-to-point matrix (1 MiB messages pass the 256 KiB burst).
# Each host on a CPU of its own (host2 shares CPU 0 with host0 on 2 cores): unpinned, the
# scheduler's wake-affine placement now and then packs host0's and host1's ranks on one CPU, and
# their 8-byte ping-pong then takes turns on it at ~55 us instead of 13: pair 0-1 flagged, in
# about one run of three after netns.hosts2x2.status_across_hosts. Hosts do not share cores.
HOSTS_PIN=1 hosts_run_ranks 1 "$out" "$build/tools/weft-characterize" --out "$out/report" --p2p-size 1M \
  --collectives all_reduce --max-size 64K -n 5 -w 1
status=0
hosts_wait_ranks || { echo "FAILED: a rank failed"; tail -n 20 "$out"/rank*.log; status=1; }
log=$out/rank0.log
grep "outlier" "$log"
if ! grep -q "outlier: host host2" "$log"; then
  echo "FAILED: host2 is not named"
  status=1
fi
for pair in 0-2 1-2; do
  grep -q "outlier: pair $pair " "$log" || { echo "FAILED: pair $pair is not named"; status=1; }
done
if grep -q "outlier: pair 0-1 \|outlier: host host[01]" "$log"; then
  echo "FAILED: a fast pair or host is named"
  status=1
fi
grep -q "^link Network" "$out/report/weft.tuning" || { echo "FAILED: no Network terms in the tuning file"; cat "$out/report/weft.tuning"; status=1; }
for f in report.md report.html p2p_bandwidth.png characterize.json; do
  [ -s "$out/report/$f" ] || { echo "FAILED: $f missing"; status=1; }
done
[ $status -ne 0 ] && cat "$log"
rm -rf "$out"
exit $status
