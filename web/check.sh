#!/usr/bin/env bash
# The web frontend's checks (CI runs this from .ci/run; README, "Web frontend"):
#  1. `npm ci` from web/package-lock.json, then web/dist must be exactly the esbuild bundle of
#     web/src (the Rust build embeds the committed dist and never runs npm);
#  2. the AG-UI event tests: real streams of `switchboard demo` through @ag-ui/core's schemas and
#     @ag-ui/client's HttpAgent verifier;
#  3. the browser tests: Debian's Chromium (installed here with apt-get when missing; without it
#     they print SKIPPED) driven by playwright-core; screenshots in ci-artifacts/web/.
set -euo pipefail
cd "$(dirname "$0")"
repo="$(cd .. && pwd)"

(cd "$repo" && cargo build --locked --quiet)
export SWITCHBOARD_BIN="$repo/target/debug/switchboard"

npm ci --no-audit --no-fund --loglevel=error
npx tsc -p .
node build.mjs --check
node --test test/events.test.mjs

chromium="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ] && command -v apt-get >/dev/null 2>&1; then
  # CJK fonts so the screenshots show the Chinese UI text.
  { apt-get update -qq && apt-get install -y -qq chromium fonts-noto-cjk; } >/dev/null 2>&1 || true
fi
if [ ! -x "$chromium" ]; then
  echo "SKIPPED web browser tests: Chromium could not be installed (set CHROMIUM to a Chromium binary)"
  exit 0
fi
export CHROMIUM="$chromium"
node --test test/browser.test.mjs
echo "web: screenshots in $repo/ci-artifacts/web/"
