#!/usr/bin/env bash
# What an HTTP/2 request costs: sluice and haproxy 2.6 on the same
# configuration (proxy-bench's template, nbthread 2, logging off) behind one
# nginx backend on 127.0.0.1, driven by h2load -c 10 -m 10, cleartext (prior
# knowledge) and TLS (ALPN h2, an ECDSA P-256 certificate made here).
#
#   * CPU per 1,000 requests: the proxy's user + system time from
#     /proc/<pid>/stat over one h2load run of $N requests, in $ROUNDS rounds
#     interleaved (sluice, haproxy, haproxy, sluice, ...); medians, and the
#     smallest and largest figure of each, because the box is shared: the
#     cores other processes used during the runs are printed beside them;
#   * instructions per HTTP/2 request (callgrind, one thread): two runs of
#     h2load -c 1 -m 10 of different lengths, (long - short) / $VG_N, so
#     start-up and shutdown cancel out. Counts do not depend on load;
#   * idle HTTP/2 connections: the proxy's RSS growth per connection with
#     $IDLE of them open, each having made one request (bench/h2_idle.py).
#
#   bench/h2.sh                        # prints a Markdown report
#   SLUICE=/path/to/other/sluice SLUICE_LABEL=main bench/h2.sh   # another build
#   ROUNDS=5 N=100000 VG_N=2000 IDLE=1000 bench/h2.sh
#   PARTS="callgrind idle" bench/h2.sh  # some of the three parts (cpu callgrind idle)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${SHARED:-$root/../shared}
N=${N:-100000}
ROUNDS=${ROUNDS:-3}
VG_N=${VG_N:-2000}
IDLE=${IDLE:-1000}
PARTS=${PARTS:-cpu callgrind idle}
part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
BASE=${PORT_BASE:-18700}
for tool in haproxy nginx h2load valgrind openssl python3; do
  command -v "$tool" >/dev/null || { echo "h2: $tool missing" >&2; exit 1; }
done
if [ -z "${SLUICE:-}" ]; then
  (cd "$root" && cargo build --release --quiet)
  SLUICE="$root/target/release/sluice"
fi

tmp=$(mktemp -d)
# Every process started, by pid, in a file: `start` runs in a subshell.
cleanup() {
  while read -r p; do kill "$p" 2>/dev/null || true; done <"$tmp/pids"
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
: >"$tmp/pids"
trap cleanup EXIT

backend=$BASE
mkdir -p "$tmp/nginx"
cat >"$tmp/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log error;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $tmp/nginx/body; proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi; uwsgi_temp_path $tmp/nginx/uwsgi; scgi_temp_path $tmp/nginx/scgi;
    keepalive_timeout 120s; keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$backend backlog=4096;
        location = / { default_type text/plain; return 200 "$(printf '%099d' 0)\n"; }
    }
}
EOF
nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
echo $! >>"$tmp/pids"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=localhost -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
cat "$tmp/cert.pem" "$tmp/key.pem" >"$tmp/site.pem"

# The proxy-bench template with $1 threads on port $2; "tls" as $3 makes
# the bind TLS with ALPN h2.
config() { # threads port [tls]
  local bind="s/{listen_port}/$2/"
  if [ "${3:-}" = tls ]; then
    bind="s|bind 127.0.0.1:{listen_port}|bind 127.0.0.1:$2 ssl crt $tmp/site.pem alpn h2,http/1.1|"
  fi
  sed -e "s/{workers}/$1/; s/{maxconn}/4000/g; $bind; s/{backend1}/127.0.0.1:$backend/; /{backend2}/d" \
    "$shared/bench/configs/haproxy.cfg"
}

url() { # port tls
  if [ "$2" = tls ]; then echo "https://127.0.0.1:$1/"; else echo "http://127.0.0.1:$1/"; fi
}

wait_port() { # port tls
  for _ in $(seq 300); do
    h2load -n 1 -c 1 "$(url "$1" "$2")" 2>/dev/null | grep -q "1 succeeded" && return 0
    sleep 0.2
  done
  echo "h2: nothing answers HTTP/2 on port $1" >&2
  exit 1
}

# Starts "$@" on config file $1 and port $2 ($3: tls or plain); prints its pid.
start() { # cfg port tls cmd...
  local cfg=$1 port=$2 tls=$3
  shift 3
  "$@" -f "$cfg" >"$cfg.log" 2>&1 &
  local pid=$!
  echo "$pid" >>"$tmp/pids"
  wait_port "$port" "$tls"
  echo "$pid"
}

stop() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
hz=$(getconf CLK_TCK)

# One timed run through the proxy $1 (pid $2) on port $3: "<cpu ms per
# 1,000 requests> <requests/s> <cores used by other processes>".
timed() { # pid port tls
  local pid=$1 port=$2 tls=$3
  local c0 b0 n0 t0 c1 b1 n1 t1 out
  c0=$(ticks "$pid"); n0=$(ticks "$nginx_pid"); b0=$(busy); t0=$(date +%s.%N)
  out=$(/usr/bin/time -f "h2load-cpu %U %S" h2load -c 10 -m 10 -n "$N" "$(url "$port" "$tls")" 2>&1)
  c1=$(ticks "$pid"); n1=$(ticks "$nginx_pid"); b1=$(busy); t1=$(date +%s.%N)
  echo "$out" | grep -q "$N succeeded" || { echo "h2: a run failed: $out" >&2; exit 1; }
  local rps load
  rps=$(echo "$out" | awk '/^finished in/ {gsub(",", "", $4); print $4}')
  load=$(echo "$out" | awk '/^h2load-cpu/ {print $2 + $3}')
  awk -v c="$((c1 - c0))" -v n="$((n1 - n0))" -v b="$((b1 - b0))" -v l="$load" \
    -v hz="$hz" -v t="$(echo "$t1 - $t0" | bc)" -v req="$N" -v rps="$rps" \
    'BEGIN { printf "%.1f %.0f %.2f\n", c * 1000 / hz * 1000 / req, rps, (b - c - n) / hz / t - l / t }'
}

median() { sort -n | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "–" hi}'; }

nginx_pid=$(head -1 "$tmp/pids")
echo "# HTTP/2 per request, $(date +%F)"
echo
echo "sluice ${SLUICE_LABEL:-$(git -C "$root" rev-parse --short HEAD)}, $(haproxy -v | head -1 | cut -d' ' -f1-3), nginx backend; h2load -c 10 -m 10 -n $N, $ROUNDS interleaved rounds"
echo
part cpu && echo "| transport | proxy | CPU ms / 1,000 req (median) | range | req/s (median) | other processes (cores, median) |"
part cpu && echo "|---|---|---|---|---|---|"
part cpu && for tls in plain tls; do
  config 2 $((BASE + 1)) "$tls" >"$tmp/sluice-$tls.cfg"
  config 2 $((BASE + 2)) "$tls" >"$tmp/haproxy-$tls.cfg"
  spid=$(start "$tmp/sluice-$tls.cfg" $((BASE + 1)) "$tls" "$SLUICE")
  hpid=$(start "$tmp/haproxy-$tls.cfg" $((BASE + 2)) "$tls" haproxy)
  : >"$tmp/sluice.runs"
  : >"$tmp/haproxy.runs"
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="sluice haproxy"; else order="haproxy sluice"; fi
    for p in $order; do
      if [ "$p" = sluice ]; then timed "$spid" $((BASE + 1)) "$tls" >>"$tmp/sluice.runs"
      else timed "$hpid" $((BASE + 2)) "$tls" >>"$tmp/haproxy.runs"; fi
    done
  done
  for p in sluice haproxy; do
    f="$tmp/$p.runs"
    echo "| $tls | $p | $(cut -d' ' -f1 "$f" | median) | $(cut -d' ' -f1 "$f" | range) | $(cut -d' ' -f2 "$f" | median) | $(cut -d' ' -f3 "$f" | median) |"
  done
  stop "$spid"
  stop "$hpid"
done
echo

# Instructions per request on one thread, under callgrind.
vg_run() { # port n tls h1|h2 cmd...
  local port=$1 n=$2 tls=$3 proto=$4
  shift 4
  local cfg="$tmp/vg-$port-$tls.cfg" out="$tmp/vg-$port-$n-$tls"
  config 1 "$port" "$tls" >"$cfg"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$@" -f "$cfg" >"$out.log" 2>&1 &
  local pid=$!
  echo "$pid" >>"$tmp/pids"
  wait_port "$port" "$tls"
  if [ "$proto" = h1 ]; then
    h2load --h1 -c 1 -n "$n" "$(url "$port" "$tls")" | grep -q "$n succeeded"
  else
    h2load -c 1 -m 10 -n "$n" "$(url "$port" "$tls")" | grep -q "$n succeeded"
  fi
  stop "$pid"
  awk '/^summary:/ {print $2}' "$out"
}
# HTTP/1.1 keep-alive on one connection too: the pipeline's HTTP/1 side
# must not pay for the HTTP/2 one.
part callgrind && echo "| request | proxy | instructions per request (callgrind, one thread) |"
part callgrind && echo "|---|---|---|"
part callgrind && for kind in "h2 plain" "h2 tls" "h1 plain"; do
  read -r proto tls <<<"$kind"
  for p in sluice haproxy; do
    if [ "$p" = sluice ]; then cmd=("$SLUICE"); else cmd=(haproxy); fi
    long=$(vg_run $((BASE + 3)) $((VG_N + 100)) "$tls" "$proto" "${cmd[@]}")
    short=$(vg_run $((BASE + 3)) 100 "$tls" "$proto" "${cmd[@]}")
    what="HTTP/2 $tls, -c 1 -m 10"
    [ "$proto" = h1 ] && what="HTTP/1.1 keep-alive, -c 1"
    echo "| $what | $p | $(awk -v a="$long" -v b="$short" -v n="$VG_N" 'BEGIN { printf "%.0f", (a - b) / n }') |"
  done
done
echo

part idle && echo "| proxy | idle HTTP/2 connections | RSS growth per connection (bytes) |"
part idle && echo "|---|---|---|"
part idle && for p in sluice haproxy; do
  port=$((BASE + 4))
  config 2 "$port" plain >"$tmp/idle-$p.cfg"
  if [ "$p" = sluice ]; then pid=$(start "$tmp/idle-$p.cfg" "$port" plain "$SLUICE")
  else pid=$(start "$tmp/idle-$p.cfg" "$port" plain haproxy); fi
  per=$(python3 "$here/h2_idle.py" "$pid" "$port" "$IDLE")
  echo "| $p | $IDLE | $per |"
  stop "$pid"
done
