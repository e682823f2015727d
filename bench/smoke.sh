#!/usr/bin/env bash
# The commands of docs/benchmarks.md, run the short way so CI keeps them
# true: `bench/run.sh --quick` with one scenario per kind and a few idle
# connections, writing both reports, then a check that sluice, haproxy and
# nginx each got a row; `bench/tcp-throughput.sh` with 1 GiB once. The figures of such a run mean nothing (CI boxes
# are noisy, the runs last a second): only that the method still works.
# Then `bench/tls.sh` and `bench/accounting.sh`, as short.
#
#   bench/smoke.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${SHARED:-$root/../shared}
if [ ! -x "$shared/bench/proxy-bench" ]; then
  echo "bench/smoke.sh: skipped: no harness at $shared/bench/proxy-bench"
  exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$here/run.sh" --quick --duration 1 --scenarios ka,close \
  --no-direct --idle-conns 200 --quiet-wait 5 --noise-limit 2 \
  --port-base 18900 --out "$out/report.md" --json "$out/report.json"
for proxy in sluice haproxy nginx; do
  grep -q "$proxy" "$out/report.md" || { echo "bench/smoke.sh: no $proxy row in the report" >&2; cat "$out/report.md" >&2; exit 1; }
done
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out/report.json"
# The mode tcp throughput script, 1 GiB once per variant.
GIB=1 ROUNDS=1 "$here/tcp-throughput.sh" >"$out/tcp.md"
for variant in haproxy-copy haproxy-splice sluice-copy sluice-splice; do
  grep -q "^| $variant | [0-9]" "$out/tcp.md" || { echo "bench/smoke.sh: no $variant row" >&2; cat "$out/tcp.md" >&2; exit 1; }
done
# TLS termination, one short round.
ROUNDS=1 SECS=1 "$here/tls.sh" >"$out/tls.md"
for case in ec13 ec12 rsa13 rsa12; do
  grep -q "^| $case, keep-alive | [0-9]" "$out/tls.md" || { echo "bench/smoke.sh: no $case row" >&2; cat "$out/tls.md" >&2; exit 1; }
done
# The per-request accounting, on a few requests.
N=200 SECS=1 "$here/accounting.sh" >"$out/accounting.md"
for proxy in sluice haproxy; do
  grep -q "^| $proxy | [0-9]" "$out/accounting.md" || { echo "bench/smoke.sh: no $proxy accounting" >&2; cat "$out/accounting.md" >&2; exit 1; }
done
echo "bench/smoke.sh: OK"
