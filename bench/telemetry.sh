# bench/telemetry.sh: the telemetry section of bench/run (issue 20), sourced by bench/run.
#
# The same `toolwright serve` three ways, measured in turn in each run:
#   tel-off      no telemetry: stdio `serve`, HTTP `serve --http ... --no-metrics`
#   tel-metrics  HTTP only: `serve --http ...` as it ships (/metrics on, the default)
#   tel-export   tel-off plus OTLP/HTTP trace export (OTEL_EXPORTER_OTLP_ENDPOINT, protocol
#                http/protobuf) to `loadgen otlp-sink`, which counts what arrives
# Figures: sequential p50 (stdio, client and server pinned as in the main section),
# pipelined throughput and server CPU per call (stdio, 64 in flight), HTTP throughput,
# p50, p99 and server CPU per call (64 clients), and for tel-export the spans and bytes
# the sink received per request sent. A spawned server's CPU includes its exporter's
# thread, so CPU per call export − off is what export costs.
#
# Uses from bench/run: TW, LOADGEN, RES, STAMP, SECS, RUNS, PIPE_CALLS, PIPE_WARMUP,
# SEQ_CALLS, SEQ_WARMUP, HTTP_CALLS, HTTP_WARMUP, SEQ_CLIENT, SEQ_SERVER, CLIENT_PREFIX,
# RESULTS, MISSING, say, run_one. Defines TEL_ROWS, telemetry_setup, measure_telemetry,
# telemetry_stop.

TEL_ROWS=(tel-off tel-metrics tel-export)
TEL_CLIENTS=64
TEL_SINK_PID=""
TEL_SINK=""

telemetry_stop() {
  [ -n "$TEL_SINK_PID" ] && kill "$TEL_SINK_PID" 2>/dev/null
  TEL_SINK_PID=""
}

# Starts the sink for the whole section (it ends by itself after an hour at the latest).
telemetry_setup() {
  local row port_file="$RES/otlp-sink.port" i why=""
  if [ -n "${MISSING[toolwright]:-}" ]; then
    for row in "${TEL_ROWS[@]}"; do MISSING[$row]="toolwright did not build"; done
    return
  fi
  rm -f "$port_file"
  "$LOADGEN" otlp-sink --addr 127.0.0.1:0 --port-file "$port_file" --max-secs 3600 \
    >>"$RES/otlp-sink.log" 2>&1 &
  TEL_SINK_PID=$!
  for i in $(seq 1 100); do
    [ -s "$port_file" ] && break
    sleep 0.05
  done
  if [ -s "$port_file" ]; then
    TEL_SINK="127.0.0.1:$(cat "$port_file")"
    say "telemetry: OTLP sink on $TEL_SINK"
  else
    why="loadgen otlp-sink did not start (see bench/results/$STAMP/otlp-sink.log)"
    MISSING[tel-export]="$why"
    say "telemetry: $why"
  fi
}

# The sink's counts: "requests spans bytes".
tel_sink_counts() {
  python3 -c 'import json,sys,urllib.request as u; d=json.load(u.urlopen("http://"+sys.argv[1]+"/stats", timeout=5)); print(d["requests"], d["spans"], d["bytes"])' "$TEL_SINK" 2>/dev/null \
    || echo "- - -"
}

# tel_spans RUN TRANSPORT BEFORE SENT_EXTRA: after a tel-export measurement, one line
# with the spans and bytes that arrived since BEFORE per request sent (the measured calls
# of the results' last line plus SENT_EXTRA warm-up calls).
tel_spans() {
  local run="$1" transport="$2" before="$3" extra="$4" after
  after="$(tel_sink_counts)"
  python3 - "$run" "$transport" "$before" "$after" "$extra" "$RESULTS" >>"$RESULTS" <<'PY'
import json, sys
run, transport, before, after, extra, results = sys.argv[1:7]
line = {"measure": f"tel-otlp-{transport}", "label": "tel-export", "run": int(run)}
last = json.loads(open(results).read().splitlines()[-1])
b, a = before.split(), after.split()
if "-" in b + a:
    line["error"] = "the OTLP sink did not answer GET /stats"
elif "error" in last or "calls" not in last:
    line["error"] = "the measurement failed: " + str(last.get("error", "no calls"))[:200]
else:
    sent = last["calls"] + int(extra)
    line.update({
        "requests_sent": sent,
        "exports": int(a[0]) - int(b[0]),
        "spans_per_call": (int(a[1]) - int(b[1])) / sent,
        "bytes_per_call": (int(a[2]) - int(b[2])) / sent,
    })
print(json.dumps(line))
PY
}

# The loadgen options that turn export on.
tel_env() {
  printf '%s\n' --env "OTEL_EXPORTER_OTLP_ENDPOINT=http://$TEL_SINK" \
    --env "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf" --env "OTEL_SERVICE_NAME=toolwright-bench"
}

# One run of the section: the rows in turn, the order reversed every other run.
measure_telemetry() {
  local run="$1" row order=("${TEL_ROWS[@]}") env=() http=() before
  if [ $((run % 2)) = 0 ]; then
    order=(); for row in "${TEL_ROWS[@]}"; do order=("$row" "${order[@]}"); done
  fi
  say "run $run/$RUNS: telemetry: ${order[*]}"
  for row in "${order[@]}"; do
    [ -n "${MISSING[$row]:-}" ] && continue
    env=(); http=(--http '127.0.0.1:{port}' --no-metrics)
    case "$row" in
      tel-export) mapfile -t env < <(tel_env) ;;
      tel-metrics) http=(--http '127.0.0.1:{port}') ;;
    esac
    if [ "$row" != tel-metrics ]; then
      CLIENT_PREFIX=("${SEQ_CLIENT[@]}")
      run_one "$row" "$run" stdio-seq --measure tel-stdio-seq --calls "$SEQ_CALLS" \
        --warmup "$SEQ_WARMUP" --max-secs "$SECS" "${env[@]}" -- "${SEQ_SERVER[@]}" "$TW" serve
      CLIENT_PREFIX=()
      before="$(tel_sink_counts)"
      run_one "$row" "$run" stdio-pipelined --measure tel-stdio-pipelined --calls "$PIPE_CALLS" \
        --warmup "$PIPE_WARMUP" --inflight 64 --max-secs "$SECS" "${env[@]}" -- "$TW" serve
      [ "$row" = tel-export ] && tel_spans "$run" stdio "$before" "$PIPE_WARMUP"
    fi
    before="$(tel_sink_counts)"
    run_one "$row" "$run" http --measure tel-http --clients "$TEL_CLIENTS" --calls "$HTTP_CALLS" \
      --warmup "$HTTP_WARMUP" --max-secs "$SECS" "${env[@]}" -- "$TW" serve "${http[@]}"
    [ "$row" = tel-export ] && tel_spans "$run" http "$before" "$((HTTP_WARMUP * TEL_CLIENTS))"
  done
}
