#!/usr/bin/env bash
# npm test's two mocha runs over the built dist/test, which between them run every test file exactly once:
# the unit tests (*.unit.test.js under .mocharc.unit.cjs: no service started, no process allowed), then every
# other test (.mocharc.json: the embedded database and redis-server up for the run, the rest started on first
# use). The second runs even when the first fails, and the status is a failure if either failed. The reporter
# adds the second run's counts and file times to the first's, so the output ends with the totals of both.
set -uo pipefail
cd "$(dirname "$0")/.."

totals="$(mktemp)"
trap 'rm -f "$totals"' EXIT
export PORTICO_TEST_TOTALS="$totals"

npx mocha --config .mocharc.unit.cjs
unit=$?
npx mocha --ignore 'dist/test/**/*.unit.test.js' 'dist/test/**/*.test.js'
rest=$?
[ "$unit" -eq 0 ] && [ "$rest" -eq 0 ]
