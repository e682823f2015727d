# Shared by the bench scripts (sourced, not run): the nginx backend they
# put behind the proxies, as proxy-bench's: one worker, keep-alive without
# limit, a 100-byte answer at /.

# start_backend DIR PORT: starts nginx on 127.0.0.1:PORT with its files in
# DIR; sets BACKEND_PID.
start_backend() {
  local dir=$1 port=$2
  mkdir -p "$dir"
  cat >"$dir/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log error;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/body; proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi; uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
    keepalive_timeout 120s; keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$port backlog=4096;
        location = / { default_type text/plain; return 200 "$(printf '%099d' 0)\n"; }
    }
}
CONF
  nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
  BACKEND_PID=$!
}

# proxy_config_head: the global and defaults sections the scripts' configs
# share, read alike by sluice and haproxy: two threads, 4000 connections,
# HTTP with server connections reused.
proxy_config_head() {
  cat <<HEAD
global
    nbthread 2
    maxconn 4000
defaults
    mode http
    maxconn 4000
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    http-reuse always
HEAD
}

# bench_scratch: a scratch directory in $tmp and the list $pids of the
# processes a script starts; both are cleaned up when the script exits.
bench_scratch() {
  tmp=$(mktemp -d)
  pids=()
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
