#!/usr/bin/env bash
# Captures real HAProxy 2.6 log lines over UDP, the oracle of
# tests/logs_udp.rs (its HAPROXY lines come from here). Needs haproxy,
# python3 and curl; prints every datagram received on 127.0.0.1:17514.
set -euo pipefail
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
cat > "$dir/h.cfg" <<'CFG'
global
  log 127.0.0.1:17514 local0
defaults
  mode http
  log global
  timeout client 2s
  timeout server 2s
  timeout connect 1s
  timeout http-request 1s
frontend fe
  bind 127.0.0.1:17081
  option httplog
  http-request return status 200 content-type text/plain string ok if { path /ret }
  http-request deny if { path /deny }
  use_backend nosrv if { path /nosrv }
  default_backend be
frontend clffe
  bind 127.0.0.1:17083
  option httplog clf
  default_backend be
listen stats
  bind 127.0.0.1:17086
  option httplog
  stats enable
  stats uri /st
backend be
  server s1 127.0.0.1:17090
backend nosrv
  server d1 127.0.0.1:17099 check
CFG
python3 -m http.server 17090 --bind 127.0.0.1 >/dev/null 2>&1 &
python3 - <<'PY' &
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 17514))
s.settimeout(8)
try:
    while True:
        print(repr(s.recv(70000).decode()), flush=True)
except socket.timeout:
    pass
PY
cap=$!
sleep 0.3
haproxy -f "$dir/h.cfg" -db >/dev/null 2>&1 &
sleep 0.5
for p in /x?y=1 /ret /deny /nosrv; do curl -s -o /dev/null "http://127.0.0.1:17081$p"; done
curl -s -o /dev/null http://127.0.0.1:17083/x?y=1
curl -s -o /dev/null http://127.0.0.1:17086/st
python3 - <<'PY'
import socket, time
def c(data, wait):
    s = socket.create_connection(("127.0.0.1", 17081))
    if data:
        s.sendall(data)
    time.sleep(wait)
    s.close()
c(b"GARBAGE\r\n\r\n", 0.3)   # PR-- 400
c(b"", 0)                    # CR-- 400
c(b"", 1.5)                  # cR-- 408 (timeout http-request)
PY
wait $cap
