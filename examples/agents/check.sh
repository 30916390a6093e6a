#!/usr/bin/env bash
# Builds, tests and starts every template under examples/agents/, then runs
# `switchboard check-agent --card <template>/card.yaml` against each running agent.
# Used by CI (.ci/run) after `cargo test`; runnable by hand from anywhere:
#   bash examples/agents/check.sh            (SWITCHBOARD=path/to/switchboard to choose the binary)
# Installs: one Python venv (examples/agents/.venv) for the FastAPI templates, `npm ci` for the
# Node ones. Each agent gets a bounded wait to come up; every agent started is killed on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${SWITCHBOARD:-$repo/target/debug/switchboard}"
if [ ! -x "$bin" ]; then
  (cd "$repo" && cargo build --locked --bin switchboard)
fi

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# Python: one venv for both FastAPI templates (their requirements.txt are the same pins).
venv="$here/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
stamp="$venv/.requirements.sha256"
want="$(cat "$here"/python-*/requirements.txt | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/python-http/requirements.txt" \
    -r "$here/python-sse/requirements.txt"
  echo "$want" > "$stamp"
fi

# Node: exactly the locked packages.
for t in ts-sse a2a-js; do
  (cd "$here/$t" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
done

echo "== template tests"
for t in python-http python-sse; do
  (cd "$here/$t" && "$venv/bin/python" -m pytest -q -p no:cacheprovider)
done
for t in ts-sse a2a-js; do
  (cd "$here/$t" && npm test --silent)
done

# wait_for URL: up to 20 s for the agent to answer.
wait_for() {
  for _ in $(seq 1 100); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "timed out waiting for $1" >&2
  return 1
}

start() { # start NAME DIR COMMAND... (logs to $log_dir/NAME.log)
  local name="$1" dir="$2"
  shift 2
  (cd "$dir" && exec "$@") >"$log_dir/$name.log" 2>&1 &
  pids+=("$!")
}

log_dir="$(mktemp -d)"
start python-http "$here/python-http" "$venv/bin/python" -m uvicorn app:app --host 127.0.0.1 --port 9201
start python-sse "$here/python-sse" "$venv/bin/python" -m uvicorn app:app --host 127.0.0.1 --port 9202
start ts-sse "$here/ts-sse" node dist/server.js
start a2a-js "$here/a2a-js" node server.js

failed=0
for t in python-http:9201/healthz python-sse:9202/healthz ts-sse:9203/healthz a2a-js:9204/healthz; do
  name="${t%%:*}"
  echo "== check-agent $name"
  if ! wait_for "http://127.0.0.1:${t#*:}"; then
    cat "$log_dir/$name.log" >&2
    failed=$((failed + 1))
    continue
  fi
  if ! "$bin" check-agent --card "$here/$name/card.yaml"; then
    cat "$log_dir/$name.log" >&2
    failed=$((failed + 1))
  fi
done
echo "templates checked: $((4 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
