#!/usr/bin/env bash
# The commands of docs/benchmarks.md, run the short way so CI keeps them
# true: `bench/run.sh --quick` with one scenario per kind and a few idle
# connections, writing both reports, then a check that sluice, haproxy and
# nginx each got a row; `bench/tcp-throughput.sh` with 1 GiB once. The figures of such a run mean nothing (CI boxes
# are noisy, the runs last a second): only that the method still works.
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
echo "bench/smoke.sh: OK"
