#!/usr/bin/env bash
# The CouchDB example, end to end on one machine: three CouchDB-compatible
# nodes (pouchdb-server, in memory), sluice in front with sluice.cfg, and a
# walk-through of writes, replication, reads, `show stat`, a replica that
# dies and comes back, and a reload (the config edited, `kill -USR2` from the
# pid file) that keeps every counter. See README.md for what each step shows.
#
#   (cd examples/couchdb && npm ci --ignore-scripts)   # once
#   cargo build --release                              # or SLUICE_BIN=...
#   examples/couchdb/run.sh
#
# Ports (defaults: sluice 8080, nodes 5984-5986) and the binary come from the
# environment: COUCHDB_PROXY_PORT, COUCHDB1_PORT, COUCHDB2_PORT,
# COUCHDB3_PORT, SLUICE_BIN. Everything started here is stopped on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

export COUCHDB_PROXY_PORT=${COUCHDB_PROXY_PORT:-8080}
export COUCHDB1_PORT=${COUCHDB1_PORT:-5984}
export COUCHDB2_PORT=${COUCHDB2_PORT:-5985}
export COUCHDB3_PORT=${COUCHDB3_PORT:-5986}
proxy="http://127.0.0.1:$COUCHDB_PROXY_PORT"
# How long any wait may take before the walk-through gives up.
deadline_s=${COUCHDB_WAIT_S:-30}

say() { printf '\n==> %s\n' "$*"; }
info() { printf '    %s\n' "$*"; }
fail() {
    printf '\nFAILED: %s\n' "$*" >&2
    exit 1
}

for tool in node curl socat; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is needed (apt-get install $tool)"
done
pouchdb="$here/node_modules/.bin/pouchdb-server"
[ -x "$pouchdb" ] || fail "pouchdb-server is not installed: run 'npm ci --ignore-scripts' in $here"
if [ -z "${SLUICE_BIN:-}" ]; then
    SLUICE_BIN="${CARGO_TARGET_DIR:-$root/target}/release/sluice"
    if [ ! -x "$SLUICE_BIN" ]; then
        say "Building sluice (cargo build --release)"
        (cd "$root" && cargo build --release)
    fi
fi
[ -x "$SLUICE_BIN" ] || fail "no sluice binary at $SLUICE_BIN"

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-couchdb.XXXXXX")
export COUCHDB_SLUICE_SOCK="$work/sluice.sock"
# sluice's stdout: the access log and server events (the `log stdout` of
# sluice.cfg); its stderr: its own messages.
sluice_log="$work/sluice.log"
sluice_err="$work/sluice.err"
# The configuration sluice runs (a copy: step 8 edits it) and its pid file.
cfg="$work/sluice.cfg"
pidfile="$work/sluice.pid"
cp "$here/sluice.cfg" "$cfg"
declare -A pids=()

cleanup() {
    local status=$?
    for name in "${!pids[@]}"; do
        kill "${pids[$name]}" 2>/dev/null || true
    done
    for name in "${!pids[@]}"; do
        wait "${pids[$name]}" 2>/dev/null || true
    done
    if [ "$status" -ne 0 ]; then
        for f in "$sluice_log" "$sluice_err"; do
            [ -f "$f" ] || continue
            printf '\n--- %s ---\n' "$(basename "$f")" >&2
            cat "$f" >&2
        done
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for <what> <command...>: polls the command until it succeeds.
wait_for() {
    local what=$1 tries=$((deadline_s * 10))
    shift
    while ! "$@" >/dev/null 2>&1; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || fail "gave up waiting for $what"
        sleep 0.1
    done
}

# start_node <n> <port>: one in-memory node, its config and log in $work.
start_node() {
    local dir="$work/couchdb$1"
    mkdir -p "$dir"
    (cd "$dir" && exec "$pouchdb" --in-memory --host 127.0.0.1 --port "$2" \
        --config "$dir/config.json" --no-color >"$dir/out.log" 2>&1) &
    pids[couchdb$1]=$!
}

node_up() { curl -sf "http://127.0.0.1:$1/" | grep -q Welcome; }

cli() { echo "$1" | socat -t 5 stdio "unix-connect:$COUCHDB_SLUICE_SOCK"; }

# The columns of `show stat` worth looking at here, as a table.
show_stat() {
    cli "show stat" | awk -F, '
        NR == 1 { sub(/^# /, ""); for (i = 1; i <= NF; i++) col[$i] = i
                  printf "    %-15s %-9s %-8s %4s %4s %4s %5s %5s %6s %s\n",
                         "pxname", "svname", "status", "scur", "smax", "slim",
                         "stot", "qcur", "weight", "check_status"; next }
        NF > 1  { printf "    %-15s %-9s %-8s %4s %4s %4s %5s %5s %6s %s\n",
                         $col["pxname"], $col["svname"], $col["status"],
                         $col["scur"], $col["smax"], $col["slim"], $col["stot"],
                         $col["qcur"], $col["weight"], $col["check_status"] }'
}

# status_is <backend> <server> <status>: the server's status is exactly that
# (not "UP 1/2", a server between states).
status_is() {
    cli "show stat" | awk -F, -v px="$1" -v sv="$2" -v want="$3" '
        $1 == px && $2 == sv && $18 == want { found = 1 }
        END { exit !found }'
}

# stat <backend> <server> <column>: one field of `show stat`.
stat() {
    cli "show stat" | awk -F, -v px="$1" -v sv="$2" -v name="$3" '
        NR == 1 { sub(/^# /, ""); for (i = 1; i <= NF; i++) col[$i] = i; next }
        $1 == px && $2 == sv { print $col[name] }'
}
stat_is() { [ "$(stat "$1" "$2" "$3")" = "$4" ]; }

log_lines() { grep -c "$1" "$sluice_log" || true; }
# log_grew <pattern> <count>: more than <count> log lines match the pattern.
log_grew() { [ "$(log_lines "$1")" -gt "$2" ]; }

# request <method> <path> [json]: one request through sluice; prints the
# status, the start of the body, and the `backend/server` of its access log
# line (waiting for that line: sluice writes it when the response is done).
# Sets last_server.
last_server=""
request() {
    local method=$1 path=$2 data=${3:-} before code body
    local args=(-sS --max-time 10 -X "$method" -o "$work/body" -w '%{http_code}')
    [ -z "$data" ] || args+=(-H 'Content-Type: application/json' -d "$data")
    before=$(log_lines "\"$method $path ")
    code=$(curl "${args[@]}" "$proxy$path")
    body=$(cat "$work/body")
    [ "${#body}" -le 100 ] || body="${body:0:100}..."
    wait_for "the log line of $method $path" log_grew "\"$method $path " "$before"
    # client [date] frontend backend/server timers status ... "request"
    last_server=$(grep "\"$method $path " "$sluice_log" | tail -n 1 | awk '{ print $4 }')
    info "$method $path -> $code from $last_server: $body"
    case $code in
    2??) ;;
    *) fail "$method $path answered $code" ;;
    esac
}

# read_docs <n>: n reads of doc1 through sluice; sets seen to the replicas
# that answered, in order.
seen=""
read_docs() {
    local i servers=()
    for ((i = 0; i < $1; i++)); do
        request GET /demo/doc1
        servers+=("${last_server#slave_backend/}")
    done
    seen="${servers[*]}"
    info "served by: $seen"
}

say "Starting three CouchDB-compatible nodes (pouchdb-server, in memory)"
start_node 1 "$COUCHDB1_PORT"
start_node 2 "$COUCHDB2_PORT"
start_node 3 "$COUCHDB3_PORT"
for n in 1 2 3; do
    port_var="COUCHDB${n}_PORT"
    wait_for "couchdb$n on port ${!port_var}" node_up "${!port_var}"
    info "couchdb$n: http://127.0.0.1:${!port_var}/ $(curl -s "http://127.0.0.1:${!port_var}/" | cut -c1-60)..."
done

say "Starting sluice: $SLUICE_BIN -f $cfg -p $pidfile (a copy of sluice.cfg; proxy on $proxy)"
"$SLUICE_BIN" -c -f "$cfg" | sed 's/^/    /'
"$SLUICE_BIN" -f "$cfg" -p "$pidfile" >"$sluice_log" 2>"$sluice_err" &
pids[sluice]=$!
wait_for "the stats socket" cli "show info"
for sv in master_backend/couchdb1 slave_backend/couchdb2 slave_backend/couchdb3; do
    wait_for "$sv to pass its first check" status_is "${sv%/*}" "${sv#*/}" UP
done
show_stat

say "1. Create a database: PUT /demo goes to the master (acl master_methods)"
request PUT /demo
[ "$last_server" = master_backend/couchdb1 ] || fail "PUT went to $last_server"

say "2. Write documents: PUT and POST go to the master"
request PUT /demo/doc1 '{"title":"written through sluice","n":1}'
request POST /demo '{"_id":"doc2","title":"posted through sluice","n":2}'
[ "$last_server" = master_backend/couchdb1 ] || fail "POST went to $last_server"
info "the replicas do not have it yet (asked directly, not through sluice):"
info "couchdb2: $(curl -s "http://127.0.0.1:$COUCHDB2_PORT/demo")"

say "3. Replicate master -> replicas: POST /_replicate through sluice (to the master, which pushes to the replicas' own URLs)"
for n in 2 3; do
    port_var="COUCHDB${n}_PORT"
    request POST /_replicate \
        "{\"source\":\"demo\",\"target\":\"http://127.0.0.1:${!port_var}/demo\",\"create_target\":true}"
done

say "4. Read back through sluice: GET goes round-robin to the replicas"
read_docs 4
case $seen in
"couchdb2 couchdb3 couchdb2 couchdb3" | "couchdb3 couchdb2 couchdb3 couchdb2") ;;
*) fail "reads did not alternate between the replicas: $seen" ;;
esac

say "5. show stat on the stats socket: echo 'show stat' | socat stdio unix-connect:$COUCHDB_SLUICE_SOCK"
show_stat

say "6. Kill replica couchdb3: its checks fail, sluice takes it out"
kill "${pids[couchdb3]}"
wait "${pids[couchdb3]}" 2>/dev/null || true
unset 'pids[couchdb3]'
wait_for "couchdb3 to go DOWN" status_is slave_backend couchdb3 DOWN
grep 'couchdb3 is DOWN' "$sluice_log" | sed 's/^/    log: /'
show_stat
info "reads keep working, all on couchdb2:"
read_docs 3
[ "$seen" = "couchdb2 couchdb2 couchdb2" ] || fail "reads with couchdb3 down: $seen"

say "7. Restart couchdb3 (empty: it is in memory), replicate to it again, watch it rejoin"
start_node 3 "$COUCHDB3_PORT"
wait_for "couchdb3 to restart" node_up "$COUCHDB3_PORT"
request POST /_replicate \
    "{\"source\":\"demo\",\"target\":\"http://127.0.0.1:$COUCHDB3_PORT/demo\",\"create_target\":true}"
wait_for "couchdb3 to come back UP" status_is slave_backend couchdb3 UP
grep 'couchdb3 is UP' "$sluice_log" | sed 's/^/    log: /'
show_stat
read_docs 4
case $seen in
*couchdb2*couchdb3* | *couchdb3*couchdb2*) ;;
*) fail "couchdb3 did not rejoin the rotation: $seen" ;;
esac

say "8. Reload: give couchdb3 weight 3 in the config, then kill -USR2 \$(cat $pidfile)"
declare -A stot_before=()
for sv in master_backend/couchdb1 slave_backend/couchdb2 slave_backend/couchdb3; do
    stot_before[$sv]=$(stat "${sv%/*}" "${sv#*/}" stot)
done
sed -i 's/^\(    server couchdb3 .*\) weight 1 /\1 weight 3 /' "$cfg"
grep '^    server couchdb3 ' "$cfg" | sed 's/^ */    config: /'
"$SLUICE_BIN" -c -f "$cfg" | sed 's/^/    /'
kill -USR2 "$(cat "$pidfile")"
wait_for "the reload (couchdb3 at weight 3)" stat_is slave_backend couchdb3 weight 3
cli "show info" | grep -E '^(Generation|Last_reload_status):' | sed 's/^/    /'
cli "show reload" | sed '/^$/d; s/^/    /'
show_stat
for sv in master_backend/couchdb1 slave_backend/couchdb2 slave_backend/couchdb3; do
    now=$(stat "${sv%/*}" "${sv#*/}" stot)
    [ "$now" -ge "${stot_before[$sv]}" ] || fail "$sv stot went from ${stot_before[$sv]} to $now"
    info "$sv stot ${stot_before[$sv]} -> $now (kept)"
done
status_is slave_backend couchdb3 UP || fail "couchdb3 is no longer UP after the reload"
info "reads now go 3 to 1 to couchdb3:"
read_docs 8
n3=$(tr ' ' '\n' <<<"$seen" | grep -c '^couchdb3$' || true)
[ "$n3" -eq 6 ] || fail "couchdb3 served $n3 of 8 reads at weight 3 (want 6): $seen"

say "The access log (option httplog) of the walk-through"
grep -E '"(GET|PUT|POST|DELETE) ' "$sluice_log" | sed 's/^/    /'

say "All steps passed."
