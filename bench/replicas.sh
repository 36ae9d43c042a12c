# bench/replicas.sh: the replicas section of bench/run (issue 19), sourced by bench/run.
#
# Configuration A: nginx -> one `toolwright serve --http` (legacy sessions in memory).
# Configuration B: nginx -> three replicas with `--session-store redis://...` on one
# redis-server, round-robin without affinity (the nginx configuration of deploy/run.sh).
# Both are started once for the section (loopback ports, a temp dir removed at exit) and
# measured in turn by `loadgen http --url` through nginx: 64 clients, each with its own
# connection and, in the legacy era, its own session; the modern era (no sessions) too.
# Each measurement reads the CPU time of nginx, the replicas and Redis (--watch) and
# Redis's INFO commandstats (--redis) over its measured part.
#
# Uses from bench/run: TW, LOADGEN, RES, STAMP, SECS, HTTP_CALLS, HTTP_WARMUP, RUNS,
# MISSING, say, run_one, ROOT. Defines REP_ROWS, replicas_setup, measure_replicas, replicas_stop.

# shellcheck source=deploy/nginx-conf.sh
source "$ROOT/deploy/nginx-conf.sh"

REP_ROWS=(rep-a-legacy rep-b-legacy rep-a-modern rep-b-modern)
REP_CLIENTS=64
REP_REPLICAS=3
REP_DIR=""
REP_PIDS=()
declare -A REP_URL=() REP_WATCH=()
REP_REDIS=""
# BENCH_NGINX_KEEPALIVE=N: nginx keeps up to N idle connections to the replicas (its
# `keepalive` directive), instead of deploy/run.sh's new connection per request.
REP_KEEPALIVE="${BENCH_NGINX_KEEPALIVE:-}"
case "$REP_KEEPALIVE" in ''|[1-9]|[1-9][0-9]|[1-9][0-9][0-9]) ;; *) echo "bench/run: BENCH_NGINX_KEEPALIVE wants 1-999" >&2; exit 2 ;; esac

replicas_stop() {
  local p
  for p in "${REP_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${REP_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  REP_PIDS=()
  if [ -n "$REP_DIR" ]; then
    # Keep the logs with the run's results, then remove the temp dir.
    mkdir -p "$RES/replicas"
    cp "$REP_DIR"/*.log "$RES/replicas/" 2>/dev/null
    rm -rf "$REP_DIR"
    REP_DIR=""
  fi
}

rep_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

rep_wait_port() {
  local i
  for i in $(seq 1 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# rep_replica NAME [ARGS...]: starts a replica on a port it picks; sets REP_PORT and
# REP_PID (kept in this shell, so not run in $(...)).
rep_replica() {
  local name="$1" log="$REP_DIR/$1.log" i; shift
  : > "$log"
  "$TW" serve --http 127.0.0.1:0 "$@" </dev/null >/dev/null 2>"$log" &
  REP_PID=$!
  REP_PIDS+=("$REP_PID")
  REP_PORT=""
  for i in $(seq 1 200); do
    REP_PORT="$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\)\/mcp.*/\1/p' "$log" | head -1)"
    [ -n "$REP_PORT" ] && return 0
    kill -0 "$REP_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "replica $name did not say where it listens: $(tail -2 "$log" | tr '\n' ' ' | tr -d '"' | cut -c1-300)"
  return 1
}

# rep_nginx CFG PORT...: nginx in front of those replica ports (as deploy/run.sh: one worker,
# round-robin, no affinity, no buffering, a new upstream connection per request); sets
# REP_URL[CFG] and adds nginx's master and worker to REP_WATCH[CFG].
rep_nginx() {
  local cfg="$1" port p upstreams="" pid kids="" i conn=""; shift
  for p in "$@"; do upstreams+="    server 127.0.0.1:$p max_fails=1 fail_timeout=2s;"$'\n'; done
  if [ -n "$REP_KEEPALIVE" ]; then
    upstreams+="    keepalive $REP_KEEPALIVE;"$'\n'
    conn='proxy_set_header Connection "";'
  fi
  port="$(rep_free_port)"
  mkdir -p "$REP_DIR/nginx-$cfg"
  nginx_conf "$REP_DIR/nginx-$cfg" "$port" "$REP_DIR/nginx-$cfg.log" "$upstreams" \
    "${conn:+      $conn}" >"$REP_DIR/nginx-$cfg.conf"
  nginx -p "$REP_DIR/nginx-$cfg" -c "$REP_DIR/nginx-$cfg.conf" -e "$REP_DIR/nginx-$cfg.log" >>"$REP_DIR/nginx-$cfg.log" 2>&1 &
  pid=$!
  REP_PIDS+=("$pid")
  rep_wait_port "$port" || { echo "nginx ($cfg) did not listen on $port: $(tail -2 "$REP_DIR/nginx-$cfg.log" | tr '\n' ' ' | tr -d '"' | cut -c1-300)"; return 1; }
  for i in $(seq 1 100); do
    kids="$(cat /proc/"$pid"/task/*/children 2>/dev/null)"
    [ -n "$kids" ] && break
    sleep 0.05
  done
  [ -n "$kids" ] || { echo "nginx ($cfg) started no worker"; return 1; }
  REP_WATCH[$cfg]+=" --watch nginx=$pid"
  for p in $kids; do REP_WATCH[$cfg]+=" --watch nginx=$p"; done
  REP_URL[$cfg]="http://127.0.0.1:$port/mcp"
}

# Starts Redis, A and B. On failure prints why (for MISSING) and returns 1.
replicas_start() {
  local need n ports=() rport
  for need in redis-server nginx python3; do
    command -v "$need" >/dev/null 2>&1 || { echo "$need is not installed (Debian: apt-get install redis-server nginx)"; return 1; }
  done
  REP_DIR="$(mktemp -d "${TMPDIR:-/tmp}/bench-replicas.XXXXXX")" || { echo "mktemp failed"; return 1; }
  rport="$(rep_free_port)"
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$REP_DIR" --logfile "$REP_DIR/redis.log" >/dev/null 2>&1 &
  REP_PIDS+=("$!")
  REP_WATCH[a]="--watch redis=$!"; REP_WATCH[b]="--watch redis=$!"
  rep_wait_port "$rport" || { echo "redis-server did not listen on $rport (see bench/results/$STAMP/replicas/redis.log)"; return 1; }
  REP_REDIS="127.0.0.1:$rport"

  rep_replica a1 || return 1
  REP_WATCH[a]+=" --watch replicas=$REP_PID"
  rep_nginx a "$REP_PORT" || return 1

  for n in $(seq 1 "$REP_REPLICAS"); do
    rep_replica "b$n" --session-store "redis://$REP_REDIS" || return 1
    REP_WATCH[b]+=" --watch replicas=$REP_PID"
    ports+=("$REP_PORT")
  done
  rep_nginx b "${ports[@]}" || return 1
}

replicas_setup() {
  local why row
  if [ -n "${MISSING[toolwright]:-}" ]; then
    for row in "${REP_ROWS[@]}"; do MISSING[$row]="toolwright did not build"; done
    return
  fi
  if ! replicas_start > "$RES/replicas.why"; then
    why="$(cat "$RES/replicas.why")"
    for row in "${REP_ROWS[@]}"; do MISSING[$row]="$why"; done
    say "replicas: $why"
    replicas_stop
    return
  fi
  say "replicas: A ${REP_URL[a]} (1 replica), B ${REP_URL[b]} ($REP_REPLICAS replicas, Redis $REP_REDIS)"
}

# One run of the section: the four rows in turn, the order reversed every other run.
measure_replicas() {
  local run="$1" row cfg era order=("${REP_ROWS[@]}") watch
  if [ $((run % 2)) = 0 ]; then
    order=(); for row in "${REP_ROWS[@]}"; do order=("$row" "${order[@]}"); done
  fi
  say "run $run/$RUNS: replicas: ${order[*]}"
  for row in "${order[@]}"; do
    [ -n "${MISSING[$row]:-}" ] && continue
    cfg="${row#rep-}"; cfg="${cfg%%-*}"; era="${row##*-}"
    read -r -a watch <<<"${REP_WATCH[$cfg]}"
    run_one "$row" "$run" http --measure replicas-http --era "$era" --clients "$REP_CLIENTS" \
      --calls "$HTTP_CALLS" --warmup "$HTTP_WARMUP" --max-secs "$SECS" \
      --url "${REP_URL[$cfg]}" "${watch[@]}" --redis "$REP_REDIS"
  done
}
