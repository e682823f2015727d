#!/usr/bin/env bash
# The cost of one Lua action per request, counted: instructions and
# allocations per keep-alive request (bench/instructions.sh's method) of
# haproxy 2.6 and sluice on proxy-bench's template with
# `lua-load bench/configs/lua-action.lua` and `http-request lua.tag`,
# then of both on the template alone.
#
#   bench/lua.sh
#   N=2000 bench/lua.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${SHARED:-$root/../shared}
template=$shared/bench/configs/haproxy.cfg
(cd "$root" && cargo build --release --quiet)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The template with the script loaded and its action on every request.
sed -e "s|^global|global\n    lua-load $here/configs/lua-action.lua|" \
    -e "s|^    default_backend be|    http-request lua.tag\n    default_backend be|" \
    "$template" >"$tmp/lua.cfg"
echo "With one Lua action per request:"
"$here/instructions.sh" /usr/sbin/haproxy "$root/target/release/sluice" "$tmp/lua.cfg"
echo
echo "Without Lua:"
"$here/instructions.sh" /usr/sbin/haproxy "$root/target/release/sluice" "$template"
