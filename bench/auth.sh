# bench/auth.sh: the access-token section of bench/run (issue 39), sourced by bench/run.
#
# The same `toolwright serve --http 127.0.0.1:PORT --no-metrics` two ways, measured in turn
# in each run (the order reversed every other run):
#   auth-static  --auth-token-env BENCH_TOKEN (a random token made for the run)
#   auth-jwt     --auth-issuer http://127.0.0.1:PORT --auth-audience urn:toolwright-bench,
#                the issuer being `loadgen issuer` (RFC 8414 metadata, a JWKS of one ES256
#                key), and the token the one it minted at start
# Every request carries `Authorization: Bearer TOKEN`; each client sends the same token on
# every call, so after a server's first request with it the JWT row takes it from the
# verified-token memory (exp and nbf checked, no signature). Figures: HTTP throughput,
# p50, p99 and server CPU per call with 64 clients (as the telemetry section's HTTP
# measurement), and the p50 of one client calling one at a time (client on CPU 0, server
# on CPU 1 as in the main section). CPU per call JWT − static is what validation costs.
#
# Uses from bench/run: TW, LOADGEN, RES, STAMP, SECS, RUNS, SEQ_CALLS, SEQ_WARMUP,
# HTTP_CALLS, HTTP_WARMUP, SEQ_CLIENT, SEQ_SERVER, CLIENT_PREFIX, RESULTS, MISSING, say,
# run_one.
# Defines AUTH_ROWS, AUTH_CLIENTS, AUTH_AUDIENCE, auth_setup, measure_auth, auth_stop.

AUTH_ROWS=(auth-static auth-jwt)
AUTH_CLIENTS=64
AUTH_AUDIENCE=urn:toolwright-bench
AUTH_ISSUER_PID=""
AUTH_ISSUER=""
AUTH_JWT=""
AUTH_STATIC=""

auth_stop() {
  [ -n "$AUTH_ISSUER_PID" ] && kill "$AUTH_ISSUER_PID" 2>/dev/null
  AUTH_ISSUER_PID=""
}

# Starts the issuer for the whole section (it ends by itself after an hour at the latest)
# and makes the static token.
auth_setup() {
  local row port_file="$RES/issuer.port" token_file="$RES/issuer.token" i why=""
  if [ -n "${MISSING[toolwright]:-}" ]; then
    for row in "${AUTH_ROWS[@]}"; do MISSING[$row]="toolwright did not build"; done
    return
  fi
  AUTH_STATIC="bench-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
  rm -f "$port_file" "$token_file"
  "$LOADGEN" issuer --addr 127.0.0.1:0 --port-file "$port_file" --token-file "$token_file" \
    --audience "$AUTH_AUDIENCE" --max-secs 3600 >>"$RES/issuer.log" 2>&1 &
  AUTH_ISSUER_PID=$!
  for i in $(seq 1 100); do
    [ -s "$port_file" ] && break
    sleep 0.05
  done
  if [ -s "$port_file" ] && [ -s "$token_file" ]; then
    AUTH_ISSUER="http://127.0.0.1:$(cat "$port_file")"
    AUTH_JWT="$(cat "$token_file")"
    say "auth: issuer on $AUTH_ISSUER"
  else
    why="loadgen issuer did not start (see bench/results/$STAMP/issuer.log)"
    MISSING[auth-jwt]="$why"
    say "auth: $why"
  fi
}

# The issuer's fetch counts, as a JSON object (or null).
auth_issuer_stats() {
  python3 -c 'import json,sys,urllib.request as u; print(json.dumps(json.load(u.urlopen(sys.argv[1]+"/stats", timeout=5))))' "$AUTH_ISSUER" 2>/dev/null \
    || echo null
}

# One run of the section: the rows in turn, the order reversed every other run.
measure_auth() {
  local run="$1" row order=("${AUTH_ROWS[@]}") env=() srv=() token
  if [ $((run % 2)) = 0 ]; then
    order=(); for row in "${AUTH_ROWS[@]}"; do order=("$row" "${order[@]}"); done
  fi
  say "run $run/$RUNS: access tokens: ${order[*]}"
  for row in "${order[@]}"; do
    [ -n "${MISSING[$row]:-}" ] && continue
    case "$row" in
      auth-static)
        token="$AUTH_STATIC"; env=(--env "BENCH_TOKEN=$AUTH_STATIC")
        srv=("$TW" serve --http '127.0.0.1:{port}' --no-metrics --auth-token-env BENCH_TOKEN) ;;
      auth-jwt)
        token="$AUTH_JWT"; env=()
        srv=("$TW" serve --http '127.0.0.1:{port}' --no-metrics --auth-issuer "$AUTH_ISSUER"
          --auth-audience "$AUTH_AUDIENCE") ;;
    esac
    run_one "$row" "$run" http --measure auth-http --clients "$AUTH_CLIENTS" --calls "$HTTP_CALLS" \
      --warmup "$HTTP_WARMUP" --max-secs "$SECS" --header "Authorization: Bearer $token" \
      "${env[@]}" -- "${srv[@]}"
    CLIENT_PREFIX=("${SEQ_CLIENT[@]}")
    run_one "$row" "$run" http --measure auth-seq --clients 1 --calls "$SEQ_CALLS" \
      --warmup "$SEQ_WARMUP" --max-secs "$SECS" --header "Authorization: Bearer $token" \
      "${env[@]}" -- "${SEQ_SERVER[@]}" "${srv[@]}"
    CLIENT_PREFIX=()
  done
  [ -n "$AUTH_ISSUER" ] && printf '{"measure":"auth-issuer","label":"auth-jwt","run":%s,"issuer":%s}\n' \
    "$run" "$(auth_issuer_stats)" >>"$RESULTS"
}
