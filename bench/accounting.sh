#!/usr/bin/env bash
# Where a proxied request's CPU goes, counted rather than timed: sluice and
# haproxy 2.6 on the same configuration (proxy-bench's template) behind one
# nginx backend on 127.0.0.1, each asked the same keep-alive requests.
#
# Per request, for each proxy:
#   * system calls by name (strace -c -f over a wrk run of c=50);
#   * context switches, voluntary and not (/proc/<pid>/task/*/status over a
#     wrk run of c=50, no tracer attached);
#   * instructions, clock reads and allocations (valgrind: callgrind's
#     instruction and call counts, dhat's block count), on one thread, from
#     two runs of different lengths (N+100 and 100 requests on one
#     connection): (long - short) / N, so start-up and shutdown cancel out;
#     the same with NEW requests each on a connection of its own;
#     Clock reads are calls to clock_gettime (valgrind runs without the
#     vDSO, so each read is a call it sees);
#   * sluice's allocations also from its own counting allocator (a build with
#     `--features alloc-count`), which needs no valgrind;
#   * wake-ups across threads: futex wakes and eventfd writes (the runtime's
#     unpark) from the strace run.
#
# Counts do not depend on the machine's load, so this can run on a busy box;
# the context switches do, a little. Timing is proxy-bench's job (run.sh).
#
#   bench/accounting.sh                   # N=5000, prints a Markdown report
#   N=20000 bench/accounting.sh > bench/results/accounting-$(date +%F).md
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${SHARED:-$root/../shared}
N=${N:-5000}
C=${C:-50}
SECS=${SECS:-5}
BASE=${PORT_BASE:-18600}
for tool in haproxy nginx wrk h2load strace valgrind; do
  command -v "$tool" >/dev/null || { echo "accounting: $tool missing" >&2; exit 1; }
done
(cd "$root" && cargo build --release --quiet && cargo build --release --quiet \
  --features alloc-count --target-dir "$root/target/alloc-count")
sluice="$root/target/release/sluice"
sluice_counting="$root/target/alloc-count/release/sluice"

# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_scratch

backend=$BASE
start_backend "$tmp/nginx" "$backend"
pids+=("$BACKEND_PID")

# The proxy-bench template, one or two threads, logging off.
config() { # threads port
  sed -e "s/{workers}/$1/; s/{maxconn}/4000/g; s/{listen_port}/$2/; s/{backend1}/127.0.0.1:$backend/; /{backend2}/d" \
    "$shared/bench/configs/haproxy.cfg"
}

wait_port() {
  for _ in $(seq 100); do
    curl -fs -o /dev/null "http://127.0.0.1:$1/" && return 0
    sleep 0.1
  done
  echo "accounting: nothing answers on port $1" >&2
  exit 1
}

# One proxy, started with the command in "$@" on config $1 at port $2;
# prints its pid.
start() { # cfgfile port cmd...
  local cfg=$1 port=$2
  shift 2
  "$@" -f "$cfg" >"$cfg.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  wait_port "$port"
  echo "$pid"
}

# A soft stop (SIGTERM for both: haproxy under valgrind does not act on
# SIGINT); the clients have left, so both exit at once.
stop() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# requests on one connection through port $1 (h2load, HTTP/1.1 keep-alive).
ask() { h2load --h1 -n "$2" -c 1 "http://127.0.0.1:$1/" | grep -q "$2 succeeded"; }

# $2 requests through port $1, one after the other, each on a connection
# of its own (`Connection: close`).
ask_new() {
  python3 - "$1" "$2" <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
    answer = b""
    while chunk := s.recv(65536):
        answer += chunk
    s.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
PY
}

# Valgrind figures: "<instructions> <clock reads> <allocations>" of a run of
# $3 requests through a proxy on port $2 run by "${@:4}" under tool $1.
valgrind_run() { # tool port n cmd...
  local tool=$1 port=$2 n=$3
  shift 3
  local cfg="$tmp/vg-$port.cfg" out="$tmp/vg-$port-$n"
  config 1 "$port" >"$cfg"
  case $tool in
    callgrind) valgrind --tool=callgrind --callgrind-out-file="$out" "$@" -f "$cfg" >"$out.log" 2>&1 & ;;
    dhat) valgrind --tool=dhat --dhat-out-file="$out" "$@" -f "$cfg" >"$out.log" 2>&1 & ;;
  esac
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 300); do
    curl -fs -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.2
  done
  ${ASK:-ask} "$port" "$n"
  stop "$pid"
  case $tool in
    callgrind) python3 - "$out" <<'PY'
import re, sys
# Total instructions, and calls to clock_gettime (function names are
# compressed in callgrind's format: "(id) name" once, "(id)" after).
names, total, calls, target = {}, 0, 0, False
for line in open(sys.argv[1]):
    if line.startswith("summary:"):
        total = int(line.split()[1])
    m = re.match(r"(c?)fn=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3)
        target = m.group(1) == "c" and "clock_gettime" in names.get(m.group(2), "")
    elif line.startswith("calls=") and target:
        calls += int(line[6:].split()[0])
        target = False
print(total, calls)
PY
      ;;
    dhat) awk '/Total:/ {gsub(",", "", $(NF-1)); print $(NF-1)}' "$out.log" ;;
  esac
}

per_request() { # long short
  awk -v a="$1" -v b="$2" -v n="$N" 'BEGIN { printf "%.1f", (a - b) / n }'
}

# The counting allocator's total for a run of $2 requests on port $1.
counted() { # port n
  local cfg="$tmp/ac-$1.cfg"
  config 1 "$1" >"$cfg"
  "$sluice_counting" -f "$cfg" >"$cfg.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  wait_port "$1"
  ask "$1" "$2"
  stop "$pid"
  awk '/alloc-count:/ {print $2}' "$cfg.log"
}

# Syscalls and context switches per request under wrk -c$C; with a
# fourth argument, each request also sends that header (`Connection:
# close`: a new connection per request).
under_load() { # name pid port [header]
  local name=$1 pid=$2 port=$3 hdr=${4:-}
  local trace="$tmp/strace-$name"
  local how="wrk -c$C"
  [ -n "$hdr" ] && how="$how, $hdr"
  timeout $((SECS + 3)) strace -c -f -p "$pid" -o "$trace" 2>/dev/null &
  local tracer=$!
  sleep 0.5
  local req
  req=$(wrk -t1 -c"$C" -d"${SECS}s" ${hdr:+-H "$hdr"} "http://127.0.0.1:$port/" | awk '/requests in/ {print $1}')
  wait "$tracer" || true
  echo "### $name: system calls per request (strace -c -f, $how, $req requests)"
  echo
  if [ ! -s "$trace" ]; then
    echo "(strace could not attach here: see kernel.yama.ptrace_scope)"
    echo
    return
  fi
  echo "| call | per request |"
  echo "|---|---|"
  awk -v r="$req" '$4 ~ /^[0-9]+$/ && $NF != "total" { printf "| %s | %.3f |\n", $NF, $4 / r }
                   $NF == "total" { printf "| **total** | **%.3f** |\n", $4 / r }' "$trace"
  echo
  local s0 s1
  s0=$(cat /proc/"$pid"/task/*/status | awk '/^voluntary/ {v+=$2} /^nonvoluntary/ {n+=$2} END {print v, n}')
  req=$(wrk -t1 -c"$C" -d"${SECS}s" ${hdr:+-H "$hdr"} "http://127.0.0.1:$port/" | awk '/requests in/ {print $1}')
  s1=$(cat /proc/"$pid"/task/*/status | awk '/^voluntary/ {v+=$2} /^nonvoluntary/ {n+=$2} END {print v, n}')
  echo "$s0 $s1 $req" | awk -v name="$name" -v how="$how" '{ printf "%s: context switches per request (%s, no tracer): voluntary %.3f, involuntary %.3f\n\n", name, how, ($3 - $1) / $5, ($4 - $2) / $5 }'
}

echo "# Accounting per request, $(date +%F)"
echo
echo "sluice $(git -C "$root" rev-parse --short HEAD), $(haproxy -v | head -1 | cut -d' ' -f1-3); N=$N, c=$C, ${SECS}s load runs"
echo
port=$((BASE + 1))
config 2 "$port" >"$tmp/sluice.cfg"
pid=$(start "$tmp/sluice.cfg" "$port" "$sluice")
under_load sluice "$pid" "$port"
under_load sluice "$pid" "$port" "Connection: close"
stop "$pid"
port=$((BASE + 2))
config 2 "$port" >"$tmp/haproxy.cfg"
pid=$(start "$tmp/haproxy.cfg" "$port" haproxy)
under_load haproxy "$pid" "$port"
under_load haproxy "$pid" "$port" "Connection: close"
stop "$pid"

echo "### Counted on one thread (valgrind), per keep-alive request"
echo
echo "| proxy | instructions | clock reads | allocations (dhat) | allocations (counting allocator) |"
echo "|---|---|---|---|---|"
for proxy in sluice haproxy; do
  if [ "$proxy" = sluice ]; then cmd=("$sluice"); else cmd=(haproxy); fi
  port=$((BASE + 3))
  read -r li lc < <(valgrind_run callgrind "$port" $((N + 100)) "${cmd[@]}")
  read -r si sc < <(valgrind_run callgrind "$port" 100 "${cmd[@]}")
  la=$(valgrind_run dhat "$port" $((N + 100)) "${cmd[@]}")
  sa=$(valgrind_run dhat "$port" 100 "${cmd[@]}")
  counting="—"
  if [ "$proxy" = sluice ]; then
    counting=$(per_request "$(counted $((BASE + 4)) $((N + 100)))" "$(counted $((BASE + 4)) 100)")
  fi
  echo "| $proxy | $(per_request "$li" "$si") | $(per_request "$lc" "$sc") | $(per_request "$la" "$sa") | $counting |"
done

echo
echo "### Counted on one thread (valgrind), per request on a new connection"
echo
echo "| proxy | instructions | clock reads | allocations (dhat) |"
echo "|---|---|---|---|"
NEW=${NEW:-1000}
for proxy in sluice haproxy; do
  if [ "$proxy" = sluice ]; then cmd=("$sluice"); else cmd=(haproxy); fi
  port=$((BASE + 5))
  read -r li lc < <(ASK=ask_new valgrind_run callgrind "$port" $((NEW + 100)) "${cmd[@]}")
  read -r si sc < <(ASK=ask_new valgrind_run callgrind "$port" 100 "${cmd[@]}")
  la=$(ASK=ask_new valgrind_run dhat "$port" $((NEW + 100)) "${cmd[@]}")
  sa=$(ASK=ask_new valgrind_run dhat "$port" 100 "${cmd[@]}")
  echo "| $proxy | $(N=$NEW per_request "$li" "$si") | $(N=$NEW per_request "$lc" "$sc") | $(N=$NEW per_request "$la" "$sa") |"
done
