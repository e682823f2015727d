#!/usr/bin/env bash
# Compression and caching at the edge, sluice beside haproxy 2.6 on the same
# configuration, behind one nginx serving static text files on 127.0.0.1.
#
# 1. Compression: CPU per MiB of text compressed (gzip, level 1: sluice's
#    zlib-rs at tune.comp.maxlevel 1, haproxy's SLZ, which has one level),
#    for 16 KiB and 1 MiB responses, wrk -c50 with Accept-Encoding: gzip.
#    CPU is the proxy's user + system time from /proc/<pid>/stat over the
#    run, divided by the MiB of response bodies it compressed (requests x
#    size). The same without Accept-Encoding gives each proxy's cost of
#    relaying the same bodies uncompressed, for reference.
# 2. Cache: requests per second at c=50 for a 100-byte object served from
#    `cache`, against sluice answering `http-request return` (no server
#    involved either way), and haproxy's cache on the same object.
#
# Rounds are interleaved (sluice then haproxy, then haproxy then sluice...)
# and medians printed; the box is shared, so read the spread too (min-max
# of the rounds, printed beside each median).
#
#   bench/edge.sh                     # 3 rounds of 5 s per case
#   ROUNDS=5 SECS=10 bench/edge.sh > bench/results/edge-$(date +%F).md
#   HAPROXY=/path/to/haproxy bench/edge.sh   # another build, e.g. USE_ZLIB=1
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
BASE=${PORT_BASE:-18800}
# Debian's haproxy compresses with SLZ; a build with USE_ZLIB=1 compresses
# with zlib at the level tune.comp.maxlevel allows.
HAPROXY=${HAPROXY:-haproxy}
for tool in "$HAPROXY" nginx wrk; do
  command -v "$tool" >/dev/null || { echo "edge.sh: $tool missing" >&2; exit 1; }
done
(cd "$root" && cargo build --release --quiet)
sluice="$root/target/release/sluice"
bench_scratch
# nginx's workers (another user) read the files there.
chmod 755 "$tmp"

# Text that compresses as web pages do (about 4:1 with gzip -1), not a
# repeated line (which any encoder squeezes to nothing).
python3 - "$tmp/www" <<'PY'
import os, random, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
random.seed(7)
words = [w.strip() for w in open("/usr/share/dict/words")] if os.path.exists("/usr/share/dict/words") else []
if not words:
    words = ["".join(random.choice("etaoinshrdlucmfwypvbgkq") for _ in range(random.randint(2, 9))) for _ in range(5000)]
def text(n):
    out, size = [], 0
    while size < n:
        line = "<p class=\"c%d\">%s</p>\n" % (random.randint(0, 20), " ".join(random.choice(words) for _ in range(12)))
        out.append(line)
        size += len(line)
    return "".join(out).encode()[:n]
for name, n in (("16k.txt", 16 * 1024), ("1m.txt", 1024 * 1024), ("100.txt", 100)):
    open(os.path.join(d, name), "wb").write(text(n))
PY

backend=$BASE
mkdir -p "$tmp/nginx"
cat >"$tmp/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log error;
events { worker_connections 4096; }
http {
    access_log off;
    default_type text/plain;
    client_body_temp_path $tmp/nginx/body; proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi; uwsgi_temp_path $tmp/nginx/uwsgi; scgi_temp_path $tmp/nginx/scgi;
    keepalive_timeout 120s; keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$backend backlog=4096;
        root $tmp/www;
    }
}
CONF
nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
pids+=($!)

# Frontends from port $1: +0 compressing, +1 caching, +2 return (sluice's
# reference; haproxy answers it too).
config() {
  proxy_config_head
  cat <<EOF
cache objects
    total-max-size 16
    max-age 600
frontend comp
    bind 127.0.0.1:$(($1 + 0))
    compression algo gzip
    compression type text/plain
    default_backend be
frontend cache
    bind 127.0.0.1:$(($1 + 1))
    default_backend cached
frontend ret
    bind 127.0.0.1:$(($1 + 2))
    http-request return status 200 content-type text/plain string "$(head -c 99 "$tmp/www/100.txt" | tr -d '\n"' )"
backend be
    server b1 127.0.0.1:$backend
backend cached
    http-request cache-use objects
    http-response cache-store objects
    server b1 127.0.0.1:$backend
EOF
}
sl=$((BASE + 10))
hp=$((BASE + 20))
config "$sl" >"$tmp/sluice.cfg"
config "$hp" >"$tmp/haproxy.cfg"
"$sluice" -f "$tmp/sluice.cfg" >"$tmp/sluice.log" 2>&1 &
sl_pid=$!
pids+=("$sl_pid")
"$HAPROXY" -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
hp_pid=$!
pids+=("$hp_pid")
for port in $sl $hp; do
  for i in $(seq 101); do
    curl -fs -o /dev/null "http://127.0.0.1:$port/16k.txt" && break
    if [ "$i" = 101 ]; then
      echo "edge.sh: nothing answers on $port" >&2
      cat "$tmp/sluice.log" "$tmp/haproxy.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  # Both encoders are checked before anything is measured.
  curl -fs -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/1m.txt" | gzip -dc | cmp - "$tmp/www/1m.txt"
  curl -fs -o /dev/null "http://127.0.0.1:$((port + 1))/100.txt"
done

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
median() { tr ' ' '\n' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
spread() { tr ' ' '\n' | sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "-" hi}'; }

# ms of CPU per MiB of body of one wrk run against pid $1, url $2, size
# $3 bytes, with wrk's extra arguments after.
per_mib() { # pid url size args...
  local pid=$1 url=$2 size=$3 a b req
  shift 3
  a=$(cpu "$pid")
  req=$(wrk -t1 -c50 -d"${SECS}s" "$@" "$url" | awk '/requests in/ {print $1}')
  b=$(cpu "$pid")
  awk -v a="$a" -v b="$b" -v r="$req" -v s="$size" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.2f", (b - a) * 1000 / hz / (r * s / 1048576) }'
}

# requests per second of one wrk run at c=50.
rate() { wrk -t1 -c50 -d"${SECS}s" "$1" | awk '/Requests\/sec/ {printf "%d", $2}'; }

echo "# Compression and cache, $(date +%F)"
echo
echo "sluice $(git -C "$root" rev-parse --short HEAD), $("$HAPROXY" -v | head -1 | cut -d' ' -f1-3) ($("$HAPROXY" -vv | grep -q "+SLZ" && echo SLZ || echo zlib)); $ROUNDS interleaved rounds of ${SECS}s, wrk -t1 -c50; median (min-max)"
echo
echo "### Compression: ms of CPU per MiB of response body"
echo
echo "| body | sluice gzip | haproxy gzip | sluice / haproxy | sluice plain | haproxy plain |"
echo "|---|---|---|---|---|---|"
for f in 16k 1m; do
  size=$(stat -c %s "$tmp/www/$f.txt")
  s=() h=() sp=() hpl=()
  for r in $(seq "$ROUNDS"); do
    one_s() { s+=("$(per_mib "$sl_pid" "http://127.0.0.1:$sl/$f.txt" "$size" -H 'Accept-Encoding: gzip')"); }
    one_h() { h+=("$(per_mib "$hp_pid" "http://127.0.0.1:$hp/$f.txt" "$size" -H 'Accept-Encoding: gzip')"); }
    if [ $((r % 2)) = 1 ]; then one_s; one_h; else one_h; one_s; fi
    sp+=("$(per_mib "$sl_pid" "http://127.0.0.1:$sl/$f.txt" "$size")")
    hpl+=("$(per_mib "$hp_pid" "http://127.0.0.1:$hp/$f.txt" "$size")")
  done
  sm=$(echo "${s[@]}" | median)
  hm=$(echo "${h[@]}" | median)
  ratio=$(awk -v s="$sm" -v h="$hm" 'BEGIN { printf "%.2f", s / h }')
  echo "| $f | $sm ($(echo "${s[@]}" | spread)) | $hm ($(echo "${h[@]}" | spread)) | $ratio | $(echo "${sp[@]}" | median) | $(echo "${hpl[@]}" | median) |"
done
echo
echo "Compressed sizes of 1m.txt: sluice $(curl -fs -H 'Accept-Encoding: gzip' "http://127.0.0.1:$sl/1m.txt" | wc -c) B, haproxy $(curl -fs -H 'Accept-Encoding: gzip' "http://127.0.0.1:$hp/1m.txt" | wc -c) B (of 1048576)."
echo
echo "### Cache hits: requests per second, 100-byte object"
echo
echo "| case | sluice | haproxy |"
echo "|---|---|---|"
sc=() sr=() hc=() hr=()
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    sc+=("$(rate "http://127.0.0.1:$((sl + 1))/100.txt")")
    sr+=("$(rate "http://127.0.0.1:$((sl + 2))/100.txt")")
    hc+=("$(rate "http://127.0.0.1:$((hp + 1))/100.txt")")
    hr+=("$(rate "http://127.0.0.1:$((hp + 2))/100.txt")")
  else
    hr+=("$(rate "http://127.0.0.1:$((hp + 2))/100.txt")")
    hc+=("$(rate "http://127.0.0.1:$((hp + 1))/100.txt")")
    sr+=("$(rate "http://127.0.0.1:$((sl + 2))/100.txt")")
    sc+=("$(rate "http://127.0.0.1:$((sl + 1))/100.txt")")
  fi
done
scm=$(echo "${sc[@]}" | median)
srm=$(echo "${sr[@]}" | median)
echo "| cache hit | $scm ($(echo "${sc[@]}" | spread)) | $(echo "${hc[@]}" | median) ($(echo "${hc[@]}" | spread)) |"
echo "| http-request return | $srm ($(echo "${sr[@]}" | spread)) | $(echo "${hr[@]}" | median) ($(echo "${hr[@]}" | spread)) |"
echo "| hit / return | $(awk -v a="$scm" -v b="$srm" 'BEGIN { printf "%.2f", a / b }') | |"
