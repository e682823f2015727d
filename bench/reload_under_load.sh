#!/usr/bin/env bash
# Reloads under load (the test CI runs, in a release build and with as many
# reloads as asked): client load on 127.0.0.1
# (keep-alive and new connections, long requests) while the config is
# reloaded N times (default 100), alternating two variants (a server added
# and removed, a weight changed, an ACL changed). Fails on any failed
# request, reset, misrouted response or counter going backwards.
#
#   bench/reload_under_load.sh          # 100 reloads
#   bench/reload_under_load.sh 500      # 500 reloads
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$here")"
SLUICE_RELOADS=${1:-100} exec cargo test --release --test reload_under_load -- --nocapture
