#!/usr/bin/env bash
# mode tcp bulk throughput: one connection relays GIB GiB from a local
# source to a local sink through haproxy (without and with `option
# splice-auto`) and through sluice (with `nosplice`, and with its default
# splice path). Each variant runs ROUNDS times, interleaved; the medians of
# MB/s (10^6 bytes per second, as the sink saw them) and of the proxy's CPU
# seconds (user + system from /proc/<pid>/stat) per GiB are printed as a
# Markdown table.
#
#   bench/tcp-throughput.sh              # 4 GiB, 3 rounds
#   GIB=2 ROUNDS=5 bench/tcp-throughput.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
GIB=${GIB:-4}
ROUNDS=${ROUNDS:-3}
bytes=$((GIB << 30))
command -v haproxy >/dev/null || { echo "bench: haproxy missing" >&2; exit 1; }
(cd "$root" && cargo build --release --quiet)
sluice=${CARGO_TARGET_DIR:-$root/target}/release/sluice

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
src_port=$(free_port)
python3 "$here/tcp_pump.py" source "$src_port" "$bytes" &
pids+=($!)

# config <file> <port> <global extra> <proxy extra>
config() {
  cat >"$1" <<EOF
global
    maxconn 1000
$3
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
listen relay
    bind 127.0.0.1:$2
$4
    server src 127.0.0.1:$src_port
EOF
}

variants=(haproxy-copy haproxy-splice sluice-copy sluice-splice)
declare -A port
for v in "${variants[@]}"; do
  port[$v]=$(free_port)
  case $v in
    haproxy-copy)   config "$work/$v.cfg" "${port[$v]}" "" "" ;;
    haproxy-splice) config "$work/$v.cfg" "${port[$v]}" "" "    option splice-auto" ;;
    sluice-copy)    config "$work/$v.cfg" "${port[$v]}" "    nosplice" "" ;;
    sluice-splice)  config "$work/$v.cfg" "${port[$v]}" "" "" ;;
  esac
done

# The proxies all run at once (idle ones cost nothing); started once, so
# that each round measures the relay, not the start-up.
declare -A ppid
for v in "${variants[@]}"; do
  case $v in
    haproxy-*) haproxy -db -f "$work/$v.cfg" >"$work/$v.log" 2>&1 & ;;
    sluice-*)  "$sluice" -db -f "$work/$v.cfg" >"$work/$v.log" 2>&1 & ;;
  esac
  ppid[$v]=$!
  pids+=($!)
done
for v in "${variants[@]}"; do
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/${port[$v]}") 2>/dev/null && break
    sleep 0.1
  done
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
declare -A mbs cpu
for round in $(seq "$ROUNDS"); do
  # Interleaved, and the order alternates between rounds, so that a slow
  # drift of the machine hits every variant alike.
  order=("${variants[@]}")
  if ((round % 2 == 0)); then order=(sluice-splice sluice-copy haproxy-splice haproxy-copy); fi
  for v in "${order[@]}"; do
    before=$(cpu_ticks "${ppid[$v]}")
    read -r got secs < <(python3 "$here/tcp_pump.py" sink "${port[$v]}" "$bytes")
    after=$(cpu_ticks "${ppid[$v]}")
    m=$(awk -v b="$got" -v s="$secs" 'BEGIN{printf "%.0f", b/s/1e6}')
    c=$(awk -v t=$((after - before)) -v hz="$hz" -v g="$GIB" 'BEGIN{printf "%.3f", t/hz/g}')
    mbs[$v]+="$m "
    cpu[$v]+="$c "
    echo "round $round $v: $m MB/s, $c CPU-s/GiB" >&2
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END{print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "$(date +%F), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $GIB GiB x $ROUNDS rounds, medians"
echo
echo "| variant | MB/s | proxy CPU-s/GiB | runs (MB/s) |"
echo "|---|---|---|---|"
for v in "${variants[@]}"; do
  echo "| $v | $(echo "${mbs[$v]}" | median) | $(echo "${cpu[$v]}" | median) | ${mbs[$v]% } |"
done
