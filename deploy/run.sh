#!/usr/bin/env bash
# Three toolwright replicas behind nginx (round-robin, no affinity), sharing legacy sessions
# through Redis. Everything runs as the current user, on loopback ports, in a temp dir that
# is removed on exit.
#
#   deploy/run.sh [--bin PATH] [--replicas N] [-- SERVE_ARGS…]
#
# SERVE_ARGS go to every `toolwright serve` (default: --fixtures probe --fixtures
# conformance). The script prints `url=…` (the nginx endpoint), `redis=…`, one
# `replica=N PID PORT` line per replica and `ready`, then waits until interrupted or until
# nginx or Redis exits. Needs redis-server and nginx (Debian: apt-get install redis-server
# nginx); the replicas' logs are in the temp dir, named in the `dir=` line.
set -euo pipefail

bin=""
replicas=3
serve_args=(--fixtures probe --fixtures conformance)
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --replicas) replicas="$2"; shift 2 ;;
    --) shift; serve_args=("$@"); break ;;
    *) echo "deploy/run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "$bin" ]; then
  if [ -x "$here/target/debug/toolwright" ]; then bin="$here/target/debug/toolwright"
  else bin="$(command -v toolwright || true)"; fi
fi
for need in redis-server nginx python3; do
  command -v "$need" >/dev/null 2>&1 || { echo "deploy/run.sh: $need is not installed" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "deploy/run.sh: no toolwright binary (cargo build, or --bin PATH)" >&2; exit 1; }

dir="$(mktemp -d "${TMPDIR:-/tmp}/toolwright-deploy.XXXXXX")"
pids=()
cleanup() {
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() {
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "deploy/run.sh: nothing listens on port $1 ($2)" >&2
  exit 1
}

redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log" &
pids+=("$!")
wait_port "$redis_port" redis-server
redis_url="redis://127.0.0.1:$redis_port"

upstreams=""
lines=()
for n in $(seq 1 "$replicas"); do
  port="$(free_port)"
  "$bin" serve --http "127.0.0.1:$port" --session-store "$redis_url" --trusted-proxy 127.0.0.1 "${serve_args[@]}" \
    </dev/null >"$dir/replica$n.out" 2>"$dir/replica$n.log" &
  pid="$!"
  pids+=("$pid")
  wait_port "$port" "replica $n"
  upstreams+="    server 127.0.0.1:$port max_fails=1 fail_timeout=2s;"$'\n'
  lines+=("replica=$n $pid $port")
done

nginx_port="$(free_port)"
mkdir -p "$dir/nginx"
# shellcheck source=deploy/nginx-conf.sh
source "$here/deploy/nginx-conf.sh"
nginx_conf "$dir/nginx" "$nginx_port" "$dir/nginx-error.log" "$upstreams" \
  '      add_header X-Upstream $upstream_addr always;' >"$dir/nginx.conf"
nginx -p "$dir/nginx" -c "$dir/nginx.conf" -e "$dir/nginx-error.log" &
nginx_pid="$!"
pids+=("$nginx_pid")
wait_port "$nginx_port" nginx

echo "dir=$dir"
echo "url=http://127.0.0.1:$nginx_port/mcp"
echo "redis=$redis_url"
for l in "${lines[@]}"; do echo "$l"; done
echo "ready"
# Until interrupted, or until nginx or Redis goes away (a replica may be killed on purpose).
wait -n "$nginx_pid" "${pids[0]}" || true
