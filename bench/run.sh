#!/usr/bin/env bash
# The Switchboard benchmark (bench/README.md). Loopback only; every loop is bounded and the script
# stops everything it started when it ends.
#
#   bench/run.sh [compare]   Switchboard vs the floor vs the LangGraph peer: turns/s, p50, p99 at
#                            4 and 32 connections, RUNS rounds interleaved, medians and ratios.
#   bench/run.sh soak        Switchboard alone for SOAK_MINUTES: per-minute turns/s and RSS.
#   bench/run.sh streams     STREAMS concurrent turns held open by a slow sub-agent: RSS per open
#                            turn, and RSS a minute after they ended.
#   bench/run.sh reload      RELOADS rewrites of a RELOAD_AGENTS-agent config under a wrk load of
#                            chat turns: write -> served (median, p95, max), failed turns. Once
#                            with file watching, once with SIGHUP (RELOAD_TRIGGERS).
#   bench/run.sh dag         DAG_TURNS turns whose plan is a 20-node DAG of known per-node delays
#                            (bench/dag.py): makespan - critical path.
#
# Environment: RUNS (3), DURATION (10 s per wrk run), CONNS ("4 32"), STORE (sqlite | memory),
# SOAK_MINUTES (10), STREAMS (10000), RELOADS (100), RELOAD_AGENTS (1000), RELOAD_CONNS (8),
# RELOAD_WRITE (rename | inplace), RELOAD_TRIGGERS ("file sighup"), RELOAD_WRK_SECONDS (90),
# RELOADS_IDLE (20: reloads without load first, for reference),
# DAG_TURNS (20), SWITCHBOARD_BIN / FLOOR_BIN (skip the cargo build),
# SKIP_PEER=1 (no Python peer), SKIP_INSTALL=1 (tools already there), BASELINE_BIN (another
# switchboard binary, e.g. a build of main, measured as a `baseline` row in the same rounds).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH="$ROOT/bench"
MODE=${1:-compare}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
CONNS=${CONNS:-"4 32"}
STORE=${STORE:-sqlite}
SOAK_MINUTES=${SOAK_MINUTES:-10}
STREAMS=${STREAMS:-10000}
RELOADS=${RELOADS:-100}
RELOAD_AGENTS=${RELOAD_AGENTS:-1000}
RELOAD_CONNS=${RELOAD_CONNS:-8}
RELOAD_WRITE=${RELOAD_WRITE:-rename}
RELOAD_TRIGGERS=${RELOAD_TRIGGERS:-"file sighup"}
RELOAD_WRK_SECONDS=${RELOAD_WRK_SECONDS:-90}
RELOADS_IDLE=${RELOADS_IDLE:-20}
DAG_TURNS=${DAG_TURNS:-20}

SUB_PORT=18081 SB_PORT=18080 PEER_PORT=18082 FLOOR_PORT=18083 SLOW_PORT=18084 BASE_PORT=18085
RUN_DIR=$(mktemp -d /tmp/switchboard-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
log() { printf '%s\n' "$*" >&2; }

# --- what the benchmark needs, from the package registries ------------------------------------
install() {
  [ "${SKIP_INSTALL:-0}" = 1 ] || install_packages
  if [ -z "${SWITCHBOARD_BIN:-}" ] || [ -z "${FLOOR_BIN:-}" ]; then
    (cd "$ROOT" && cargo build --release --locked --bin switchboard --example bench_floor)
  fi
  SWITCHBOARD_BIN=${SWITCHBOARD_BIN:-$ROOT/target/release/switchboard}
  FLOOR_BIN=${FLOOR_BIN:-$ROOT/target/release/examples/bench_floor}
}

# nginx, wrk and curl from Debian's packages; the Python peer's venv (compare mode).
install_packages() {
  local missing=()
  command -v nginx >/dev/null || missing+=(nginx-light)
  command -v wrk >/dev/null || missing+=(wrk)
  command -v curl >/dev/null || missing+=(curl)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if [ "$MODE" = compare ] && [ "${SKIP_PEER:-0}" != 1 ] && [ ! -x "$BENCH/peers/.venv/bin/uvicorn" ]; then
    python3 -m venv "$BENCH/peers/.venv"
    "$BENCH/peers/.venv/bin/pip" install -q -r "$BENCH/peers/requirements.txt"
  fi
}

# Waits (at most 30 s) until `url` answers.
wait_up() {
  for _ in $(seq 1 300); do
    curl -fsS -o /dev/null -X "${2:-GET}" -H 'content-type: application/json' \
      ${3:+--data "$3"} "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  log "not up: $1"; return 1
}

start_nginx() {
  mkdir -p "$RUN_DIR/nginx/tmp"
  nginx -p "$RUN_DIR/nginx" -c "$BENCH/nginx.conf" >/dev/null 2>&1 &
  PIDS+=($!)
  wait_up "http://127.0.0.1:$SUB_PORT/health"
}

# start_switchboard CONFIG [BIN PORT NAME]: Switchboard on SB_PORT with the STORE store; file
# watching off unless WATCH=1.
start_switchboard() {
  local bin=${2:-$SWITCHBOARD_BIN} port=${3:-$SB_PORT} name=${4:-switchboard} store=memory:// watch=--no-watch
  [ "$STORE" = sqlite ] && store="sqlite://$RUN_DIR/$name-sessions.db"
  [ "${WATCH:-0}" = 1 ] && watch=
  RUST_LOG=${RUST_LOG:-info} "$bin" serve --config "$1" --listen "127.0.0.1:$port" \
    --store "$store" --max-concurrent-requests "${MAX_CONCURRENT:-1024}" $watch >"$RUN_DIR/$name.log" 2>&1 &
  [ "$name" = switchboard ] && SB_PID=$!
  PIDS+=($!)
  wait_up "http://127.0.0.1:$port/healthz"
}

start_floor() {
  "$FLOOR_BIN" "127.0.0.1:$FLOOR_PORT" "http://127.0.0.1:$SUB_PORT" >"$RUN_DIR/floor.log" 2>&1 &
  PIDS+=($!)
  wait_up "http://127.0.0.1:$FLOOR_PORT/v1/chat" POST '{"query":"x","user_id":"u"}'
}

start_peer() {
  (cd "$BENCH/peers" && SUB_AGENT_BASE="http://127.0.0.1:$SUB_PORT" exec .venv/bin/uvicorn langgraph_peer:app \
    --host 127.0.0.1 --port "$PEER_PORT" --workers 2 --log-level warning --no-access-log) >"$RUN_DIR/peer.log" 2>&1 &
  PIDS+=($!)
  wait_up "http://127.0.0.1:$PEER_PORT/v1/chat" POST '{"query":"x","user_id":"u"}'
}

# stop_pid PID: SIGTERM to one process this script started, and wait for it (at most 15 s).
stop_pid() {
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 1 150); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  wait "$1" 2>/dev/null || true
}

machine() { log "machine: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB; load: $(cut -d' ' -f1-3 /proc/loadavg) ($(date -u +%H:%M) UTC)"; }

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# wrk_run NAME URL CONNS SECONDS: one wrk run; appends "name conns rps p50_ms p99_ms errors" to results.
wrk_run() {
  local out="$RUN_DIR/wrk-$1-$3-$RANDOM.txt"
  wrk -t1 -c"$3" -d"$4"s --timeout 10s --latency -s "$BENCH/chat.lua" "$2/v1/chat" >"$out" 2>&1 || true
  python3 "$BENCH/report.py" parse "$1" "$3" "$out" | tee -a "$RUN_DIR/results.tsv"
}

compare() {
  start_nginx
  start_switchboard "$BENCH/agents.yaml"
  [ -n "${BASELINE_BIN:-}" ] && start_switchboard "$BENCH/agents.yaml" "$BASELINE_BIN" "$BASE_PORT" baseline
  start_floor
  if [ "${SKIP_PEER:-0}" != 1 ]; then start_peer; fi
  log "machine: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  log "store: $STORE; runs: $RUNS x ${DURATION}s per target and connection count"
  # Warm-up (connections, caches, the peer's imports).
  for url in "http://127.0.0.1:$SB_PORT" "http://127.0.0.1:$FLOOR_PORT" ${BASELINE_BIN:+"http://127.0.0.1:$BASE_PORT"}; do
    wrk -t1 -c4 -d2s -s "$BENCH/chat.lua" "$url/v1/chat" >/dev/null 2>&1 || true
  done
  for c in $CONNS; do
    for r in $(seq 1 "$RUNS"); do
      wrk_run switchboard "http://127.0.0.1:$SB_PORT" "$c" "$DURATION"
      if [ -n "${BASELINE_BIN:-}" ]; then wrk_run baseline "http://127.0.0.1:$BASE_PORT" "$c" "$DURATION"; fi
      wrk_run floor "http://127.0.0.1:$FLOOR_PORT" "$c" "$DURATION"
      if [ "${SKIP_PEER:-0}" != 1 ]; then wrk_run langgraph "http://127.0.0.1:$PEER_PORT" "$c" "$DURATION"; fi
    done
  done
  python3 "$BENCH/report.py" table "$RUN_DIR/results.tsv"
  log "switchboard RSS after the runs: $(rss_kb "$SB_PID") kB"
}

soak() {
  start_nginx
  start_switchboard "$BENCH/agents.yaml"
  printf 'minute\tturns/s\tp99_ms\trss_kb\n'
  for m in $(seq 1 "$SOAK_MINUTES"); do
    local line
    line=$(wrk_run switchboard "http://127.0.0.1:$SB_PORT" 8 60 | tail -1)
    printf '%s\t%s\t%s\t%s\n' "$m" "$(cut -f3 <<<"$line")" "$(cut -f5 <<<"$line")" "$(rss_kb "$SB_PID")"
  done
}

streams() {
  # Each open turn holds three sockets in Switchboard (the client's, one per sub-agent call):
  # STREAMS is capped by the open-file limit the machine allows.
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  local cap=$(( ($(ulimit -n) - 1000) / 3 ))
  if [ "$STREAMS" -gt "$cap" ]; then
    log "STREAMS=$STREAMS needs $((STREAMS * 3)) open files; the limit here is $(ulimit -n): using $cap"
    STREAMS=$cap
  fi
  start_nginx
  # The sub-agents answer after HOLD seconds (the floor binary in slow-agent mode), so every turn
  # stays open meanwhile.
  local hold=${HOLD:-20}
  "$FLOOR_BIN" --slow-agent "127.0.0.1:$SLOW_PORT" "$((hold * 1000))" >"$RUN_DIR/slow.log" 2>&1 &
  PIDS+=($!)
  wait_up "http://127.0.0.1:$SLOW_PORT/weather" POST '{}' || true
  sed "s#127.0.0.1:$SUB_PORT#127.0.0.1:$SLOW_PORT#; s#timeout: 10s#timeout: 120s#" "$BENCH/agents.yaml" >"$BENCH/.streams.yaml"
  # Every stream comes from 127.0.0.1: lift the per-address connection cap (default 256).
  SWITCHBOARD_MAX_CONNECTIONS_PER_ADDRESS=$((STREAMS * 2)) MAX_CONCURRENT=$((STREAMS * 2)) \
    start_switchboard "$BENCH/.streams.yaml"
  local idle open after
  idle=$(rss_kb "$SB_PID")
  # STREAMS connections, each one turn at a time; wrk stops after HOLD*1.5 s.
  wrk -t2 -c"$STREAMS" -d"$((hold * 3 / 2))"s --timeout 60s -s "$BENCH/chat.lua" "http://127.0.0.1:$SB_PORT/v1/chat" \
    >"$RUN_DIR/wrk-streams.txt" 2>&1 &
  local wrk_pid=$!
  sleep "$((hold - 2))"
  open=$(rss_kb "$SB_PID")
  local conns
  conns=$(ss -Htn state established "( sport = :$SB_PORT )" | wc -l)
  wait "$wrk_pid" || true
  sleep 60
  after=$(rss_kb "$SB_PID")
  rm -f "$BENCH/.streams.yaml"
  printf 'streams\t%s\nopen connections\t%s\nidle rss kB\t%s\nopen rss kB\t%s\nper open turn kB\t%s\nrss a minute after kB\t%s\n' \
    "$STREAMS" "$conns" "$idle" "$open" "$(( (open - idle) / (conns > 0 ? conns : 1) ))" "$after"
  grep -E 'requests in|errors' "$RUN_DIR/wrk-streams.txt" || true
}

reload() {
  start_nginx
  local dir="$RUN_DIR/reload" url="http://127.0.0.1:$SB_PORT" trigger wrk_pid until
  local cfg="$dir/agents_config.yaml"
  # The config alone in its directory (watched): the session database stays in RUN_DIR.
  mkdir -p "$dir"
  for trigger in $RELOAD_TRIGGERS; do
    python3 "$BENCH/reload.py" gen "$cfg" "$RELOAD_AGENTS"
    if [ "$trigger" = file ]; then WATCH=1 start_switchboard "$cfg"; else start_switchboard "$cfg"; fi
    log "--- reload, trigger $trigger (write: $RELOAD_WRITE); store $STORE"
    machine
    # Warm-up, then the same load without reloads, for reference.
    wrk -t1 -c4 -d2s -s "$BENCH/chat.lua" "$url/v1/chat" >/dev/null 2>&1 || true
    wrk -t1 -c"$RELOAD_CONNS" -d5s --timeout 10s --latency -s "$BENCH/chat_check.lua" "$url/v1/chat" \
      >"$RUN_DIR/wrk-noreload-$trigger.txt" 2>&1 || true
    printf 'without reloads, 5 s:\t'
    python3 "$BENCH/report.py" parse "$RELOAD_AGENTS-agents" "$RELOAD_CONNS" "$RUN_DIR/wrk-noreload-$trigger.txt"
    grep -h 'checked turns' "$RUN_DIR/wrk-noreload-$trigger.txt" || true
    # A few reloads without load, for reference: the reload's own cost without CPU contention.
    if [ "$RELOADS_IDLE" -gt 0 ]; then
      printf 'idle (no load): '
      python3 "$BENCH/reload.py" run "$cfg" "$url" --agents "$RELOAD_AGENTS" --reloads "$RELOADS_IDLE" \
        --trigger "$trigger" --pid "$SB_PID" --write "$RELOAD_WRITE" --log "$RUN_DIR/switchboard.log" | sed -n 2,3p
    fi
    # The load, and the reloads under it.
    until=$(( $(date +%s) + RELOAD_WRK_SECONDS ))
    wrk -t1 -c"$RELOAD_CONNS" -d"$RELOAD_WRK_SECONDS"s --timeout 10s --latency -s "$BENCH/chat_check.lua" \
      "$url/v1/chat" >"$RUN_DIR/wrk-reload-$trigger.txt" 2>&1 &
    wrk_pid=$!
    PIDS+=("$wrk_pid")
    sleep 1
    python3 "$BENCH/reload.py" run "$cfg" "$url" --agents "$RELOAD_AGENTS" --reloads "$RELOADS" \
      --trigger "$trigger" --pid "$SB_PID" --write "$RELOAD_WRITE" --log "$RUN_DIR/switchboard.log" --load-until "$until"
    machine
    wait "$wrk_pid" || true
    printf 'with reloads, %s s:\t' "$RELOAD_WRK_SECONDS"
    python3 "$BENCH/report.py" parse "$RELOAD_AGENTS-agents" "$RELOAD_CONNS" "$RUN_DIR/wrk-reload-$trigger.txt"
    grep -hE 'requests in|Non-2xx|Socket errors|checked turns|first incomplete' "$RUN_DIR/wrk-reload-$trigger.txt" || true
    printf 'server log: %s WARN, %s ERROR lines\n' \
      "$(grep -c ' WARN' "$RUN_DIR/switchboard.log" || true)" "$(grep -c ' ERROR' "$RUN_DIR/switchboard.log" || true)"
    grep -hE ' (WARN|ERROR)' "$RUN_DIR/switchboard.log" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-240 | head -5 || true
    cp "$RUN_DIR/switchboard.log" "$RUN_DIR/switchboard-reload-$trigger.log"
    stop_pid "$SB_PID"
  done
  log "logs and wrk outputs: $RUN_DIR"
}

dag() {
  # The slow sub-agent serves POST /delay/{ms}/{key}, the DAG's nodes (bench/floor.rs).
  "$FLOOR_BIN" --slow-agent "127.0.0.1:$SLOW_PORT" 0 >"$RUN_DIR/slow.log" 2>&1 &
  PIDS+=($!)
  wait_up "http://127.0.0.1:$SLOW_PORT/delay/0/k00" POST '{}'
  python3 "$BENCH/dag.py" gen "$RUN_DIR/dag.yaml" "http://127.0.0.1:$SLOW_PORT"
  start_switchboard "$RUN_DIR/dag.yaml"
  log "store: $STORE"
  machine
  python3 "$BENCH/dag.py" run "http://127.0.0.1:$SB_PORT" "$DAG_TURNS" "http://127.0.0.1:$SLOW_PORT"
  machine
}

install
case "$MODE" in
  compare) compare ;;
  soak) soak ;;
  streams) streams ;;
  reload) reload ;;
  dag) dag ;;
  *) log "unknown mode $MODE (compare | soak | streams | reload | dag)"; exit 2 ;;
esac
