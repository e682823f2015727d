#!/usr/bin/env bash
# Two sluice binaries and haproxy 2.6, each alone on one core (CPU 1, one
# thread), behind one nginx that shares the other core (CPU 0) with wrk:
# proxy-bench's --pin layout, for A/B tests of one change in a few
# minutes. Per run and target: user and system CPU microseconds per
# request (utime and stime of the proxy, /proc/PID/stat, over a 5 s wrk
# run after a 1 s warm-up), and voluntary and involuntary context switches
# per request. Targets interleaved, ROUNDS rounds. Timing: run it on a
# quiet box (no builds), and read the spread between rounds before a
# difference.
#
#   bench/pinned_ab.sh OLD_BINARY NEW_BINARY [ka|ka500|close]
#   ROUNDS=5 bench/pinned_ab.sh /tmp/before/sluice target/release/sluice close
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${SHARED:-$root/../shared}
old=$1
new=$2
scenario=${3:-ka}
ROUNDS=${ROUNDS:-3}
BASE=${PORT_BASE:-18700}
for tool in haproxy nginx wrk taskset; do
  command -v "$tool" >/dev/null || { echo "pinned_ab.sh: $tool missing" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_scratch
backend=$BASE
# The backend on CPU 0 (its workers inherit the shell's affinity).
all_cpus=$(taskset -pc $$ | awk '{print $NF}')
taskset -pc 0 $$ >/dev/null
start_backend "$tmp/nginx" "$backend"
pids+=("$BACKEND_PID")
taskset -pc "$all_cpus" $$ >/dev/null

config() { # port
  sed -e "s/{workers}/1/; s/{maxconn}/4000/g; s/{listen_port}/$1/; s/{backend1}/127.0.0.1:$backend/; /{backend2}/d" \
    "$shared/bench/configs/haproxy.cfg"
}
targets=()
start() { # name port command...
  local name=$1 port=$2
  shift 2
  config "$port" >"$tmp/$name.cfg"
  taskset -c 1 "$@" -f "$tmp/$name.cfg" 2>/dev/null &
  pids+=($!)
  targets+=("$name:$!:$port")
}
start old $((BASE + 1)) "$old"
start new $((BASE + 2)) "$new"
start haproxy $((BASE + 3)) haproxy
for port in $((BASE + 1)) $((BASE + 2)) $((BASE + 3)); do
  for _ in $(seq 100); do
    curl -fs -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
  done
done

header="X-Bench: 1"
case $scenario in
  ka) conns=50 ;;
  ka500) conns=500 ;;
  close) conns=50; header="Connection: close" ;;
  *) echo "pinned_ab.sh: scenario ka, ka500 or close" >&2; exit 1 ;;
esac
switches() { # pid: voluntary and involuntary, all threads
  cat /proc/"$1"/task/*/status | awk '/^voluntary/ {v+=$2} /^nonvoluntary/ {n+=$2} END {print v, n}'
}
echo "| round | target | requests | user µs/req | system µs/req | total µs/req | voluntary cs/req | involuntary cs/req |"
echo "|---|---|---|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
  for t in "${targets[@]}"; do
    IFS=: read -r name pid port <<<"$t"
    url="http://127.0.0.1:$port/"
    taskset -c 0 wrk -t1 -c"$conns" -H "$header" -d1 "$url" >/dev/null
    cpu0=$(awk '{print $14, $15}' /proc/"$pid"/stat)
    cs0=$(switches "$pid")
    out=$(taskset -c 0 wrk -t1 -c"$conns" -H "$header" -d5 "$url")
    cpu1=$(awk '{print $14, $15}' /proc/"$pid"/stat)
    cs1=$(switches "$pid")
    req=$(echo "$out" | awk '/requests in/ {print $1}')
    tick_us=$((1000000 / $(getconf CLK_TCK)))
    echo "$round $name $req $cpu0 $cpu1 $cs0 $cs1" | awk -v t="$tick_us" '{
      r = $3; u = ($6 - $4) * t / r; s = ($7 - $5) * t / r
      printf "| %s | %s | %d | %.2f | %.2f | %.2f | %.4f | %.4f |\n", $1, $2, r, u, s, u + s, ($10 - $8) / r, ($11 - $9) / r }'
  done
done
