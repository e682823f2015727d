#!/usr/bin/env bash
# Instructions and allocations per keep-alive request of two sluice
# binaries on the same configuration (proxy-bench's template, one
# thread, behind one nginx): callgrind's and dhat's totals of a run of
# N+100 requests on one connection less those of a run of 100, over N, as
# bench/accounting.sh counts them. For "a change costs nothing where it
# is not configured": build the commit before it into another target
# directory and compare.
#
#   bench/instructions.sh OLD_BINARY NEW_BINARY [CONFIG_TEMPLATE]
#   N=2000 bench/instructions.sh /tmp/before/release/sluice target/release/sluice
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${SHARED:-$root/../shared}
old=$1
new=$2
template=${3:-$shared/bench/configs/haproxy.cfg}
N=${N:-2000}
BASE=${PORT_BASE:-18900}
for tool in nginx h2load valgrind; do
  command -v "$tool" >/dev/null || { echo "instructions.sh: $tool missing" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_scratch
backend=$BASE
start_backend "$tmp/nginx" "$backend"
pids+=("$BACKEND_PID")

# tool port n binary: "<total>" instructions (callgrind) or blocks (dhat).
count() {
  local tool=$1 port=$2 n=$3 bin=$4 out="$tmp/$1-$2-$3"
  sed -e "s/{workers}/1/; s/{maxconn}/4000/g; s/{listen_port}/$port/; s/{backend1}/127.0.0.1:$backend/; /{backend2}/d" \
    "$template" >"$tmp/$port.cfg"
  case $tool in
    callgrind) valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" -f "$tmp/$port.cfg" >"$out.log" 2>&1 & ;;
    dhat) valgrind --tool=dhat --dhat-out-file="$out" "$bin" -f "$tmp/$port.cfg" >"$out.log" 2>&1 & ;;
  esac
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 300); do
    curl -fs -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.2
  done
  h2load --h1 -n "$n" -c 1 "http://127.0.0.1:$port/" | grep -q "$n succeeded"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  case $tool in
    callgrind) awk '/^summary:/ {print $2}' "$out" ;;
    dhat) awk '/Total:/ {gsub(",", "", $(NF-1)); print $(NF-1)}' "$out.log" ;;
  esac
}

per() { awk -v a="$1" -v b="$2" -v n="$N" 'BEGIN { printf "%.1f", (a - b) / n }'; }

echo "| binary | instructions per request | allocations per request |"
echo "|---|---|---|"
port=$((BASE + 1))
for bin in "$old" "$new"; do
  il=$(count callgrind "$port" $((N + 100)) "$bin")
  is=$(count callgrind "$port" 100 "$bin")
  al=$(count dhat "$port" $((N + 100)) "$bin")
  as=$(count dhat "$port" 100 "$bin")
  echo "| $bin | $(per "$il" "$is") | $(per "$al" "$as") |"
done
