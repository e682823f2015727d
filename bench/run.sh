#!/usr/bin/env bash
# Side-by-side benchmark of sluice against haproxy and nginx, with the shared
# harness (nginx backends on 127.0.0.1, interleaved wrk rounds, CPU per
# request, idle-connection memory). Ratios are what count: compare within
# one run, never across machines.
#
#   bench/run.sh                 # full run (about 10 minutes)
#   bench/run.sh --quick         # 1-minute smoke run
#   bench/run.sh --idle-conns 5000 --out bench/results/latest.md
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${SHARED:-$root/../shared}
for tool in haproxy nginx wrk; do
  command -v "$tool" >/dev/null || { echo "bench: $tool missing (apt-get install haproxy nginx-light wrk)" >&2; exit 1; }
done
(cd "$root" && cargo build --release --quiet)
cd "$root"
exec "$shared/bench/proxy-bench" \
  --proxy sluice "$shared/bench/configs/haproxy.cfg" "$root/target/release/sluice -f {cfg}" \
  --preset haproxy --preset nginx "$@"
