#!/usr/bin/env bash
# Large maps: a 1,000,000-entry map file loaded for each indexed matcher
# (str, beg, ip, dom) and for end (a scan, for comparison), the load time
# and the cost of a lookup printed (src/sample/map_bench.rs, an ignored
# test, in a release build). Nothing is asserted about time.
#
#   bench/maps.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$here")"
exec cargo test --release --lib million_entry_maps -- --ignored --nocapture
