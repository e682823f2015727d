#!/usr/bin/env bash
# TLS termination, sluice beside haproxy 2.6 (OpenSSL) on the same
# configuration: CPU per request with a new TLS connection per request
# (a full handshake each: wrk with "Connection: close" does not resume) and
# over TLS keep-alive, for an ECDSA P-256 and an RSA 2048 certificate, TLS
# 1.3 and TLS 1.2 (`ssl-max-ver`), behind one nginx backend on 127.0.0.1.
# CPU is the proxy's user + system time from /proc/<pid>/stat; rounds are
# interleaved (sluice, haproxy, then haproxy, sluice, ...) and the median of
# each is printed, in ms of CPU per 1,000 requests.
#
#   bench/tls.sh                      # 3 rounds of 5 s per case
#   ROUNDS=5 SECS=10 bench/tls.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
BASE=${PORT_BASE:-18700}
for tool in haproxy nginx wrk openssl; do
  command -v "$tool" >/dev/null || { echo "tls.sh: $tool missing" >&2; exit 1; }
done
(cd "$root" && cargo build --release --quiet)
sluice="$root/target/release/sluice"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_scratch

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/ec.key" \
  -out "$tmp/ec.crt" -subj /CN=bench.test -days 30 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/rsa.key" -out "$tmp/rsa.crt" \
  -subj /CN=bench.test -days 30 2>/dev/null
cat "$tmp/ec.crt" "$tmp/ec.key" >"$tmp/ec.pem"
cat "$tmp/rsa.crt" "$tmp/rsa.key" >"$tmp/rsa.pem"

backend=$BASE
start_backend "$tmp/nginx" "$backend"
pids+=("$BACKEND_PID")

# One frontend per (certificate, version), ports from BASE+10.
config() {
  proxy_config_head
  cat <<EOF
frontend ec13
    bind 127.0.0.1:$(($1 + 0)) ssl crt $tmp/ec.pem
    default_backend be
frontend ec12
    bind 127.0.0.1:$(($1 + 1)) ssl crt $tmp/ec.pem ssl-max-ver TLSv1.2
    default_backend be
frontend rsa13
    bind 127.0.0.1:$(($1 + 2)) ssl crt $tmp/rsa.pem
    default_backend be
frontend rsa12
    bind 127.0.0.1:$(($1 + 3)) ssl crt $tmp/rsa.pem ssl-max-ver TLSv1.2
    default_backend be
backend be
    server b1 127.0.0.1:$backend
EOF
}
sl_base=$((BASE + 10))
hp_base=$((BASE + 20))
config "$sl_base" >"$tmp/sluice.cfg"
config "$hp_base" >"$tmp/haproxy.cfg"
"$sluice" -f "$tmp/sluice.cfg" >"$tmp/sluice.log" 2>&1 &
sl_pid=$!
pids+=("$sl_pid")
haproxy -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
hp_pid=$!
pids+=("$hp_pid")
for port in $sl_base $hp_base; do
  for _ in $(seq 100); do
    curl -fsk -o /dev/null "https://127.0.0.1:$port/" && break
    sleep 0.1
  done
done

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# ms of CPU per 1,000 requests of one wrk run against pid $1 on port $2.
run() { # pid port close?
  local a b req
  local args=(-t1 -c50 -d"${SECS}s")
  [ "$3" = close ] && args+=(-H "Connection: close")
  a=$(cpu "$1")
  req=$(wrk "${args[@]}" "https://127.0.0.1:$2/" | awk '/requests in/ {print $1}')
  b=$(cpu "$1")
  awk -v a="$a" -v b="$b" -v r="$req" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.2f", (b - a) * 1000 / hz * 1000 / r }'
}
median() { tr ' ' '\n' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "# TLS termination, $(date +%F): ms of CPU per 1,000 requests (median of $ROUNDS interleaved rounds of ${SECS}s, wrk -c50)"
echo
echo "| case | sluice | haproxy | sluice / haproxy |"
echo "|---|---|---|---|"
i=0
for mode in close keepalive; do
  for front in ec13 ec12 rsa13 rsa12; do
    off=$i
    i=$((i + 1))
    [ "$front" = ec12 ] && off=1
    [ "$front" = rsa13 ] && off=2
    [ "$front" = rsa12 ] && off=3
    [ "$front" = ec13 ] && off=0
    s=() h=()
    for r in $(seq "$ROUNDS"); do
      if [ $((r % 2)) = 1 ]; then
        s+=("$(run "$sl_pid" $((sl_base + off)) "$mode")")
        h+=("$(run "$hp_pid" $((hp_base + off)) "$mode")")
      else
        h+=("$(run "$hp_pid" $((hp_base + off)) "$mode")")
        s+=("$(run "$sl_pid" $((sl_base + off)) "$mode")")
      fi
    done
    sm=$(echo "${s[@]}" | median)
    hm=$(echo "${h[@]}" | median)
    ratio=$(awk -v s="$sm" -v h="$hm" 'BEGIN { printf "%.2f", s / h }')
    echo "| $front, $([ "$mode" = close ] && echo "new connection per request" || echo "keep-alive") | $sm | $hm | $ratio |"
  done
done
