#!/usr/bin/env bash
# npm test's mocha runs over the built dist/test, which between them run every test file exactly once: the unit
# tests first (*.unit.test.js under .mocharc.unit.cjs: no service started, no process allowed), then every other
# test (.mocharc.json: the embedded database and redis-server up for the run, the rest started on first use) in
# two lanes at once. The fault suite and the schema fuzzing (test/faults, test/fuzz: about five of the run's
# minutes, mostly spent in processes of their own, each with its own servers) run in the second lane, with an
# embedded database and a Redis of their own (PORTICO_DEVDB_PORT + 1, a data folder of its own), its output held
# back and printed after the first lane's; everything else runs in the first. On two cores the run takes about
# two thirds of the time it takes one lane after the other, and the fault suite measures its load against the
# capacity it finds (test/faults/fault-injection.test.ts), so the other lane beside it is load it is meant to
# bear. Every run goes on when another fails; the status is a failure if any failed. The reporter adds each
# run's counts and file times to a totals file, and the last lines are the totals of the whole `npm test`.
set -uo pipefail
cd "$(dirname "$0")/.."

totals="$(mktemp)"
side_totals="$(mktemp)"
side_output="$(mktemp)"
trap 'rm -f "$totals" "$side_totals" "$side_output"' EXIT

PORTICO_TEST_TOTALS="$totals" npx mocha --config .mocharc.unit.cjs
unit=$?

port="${PORTICO_DEVDB_PORT:-27017}"
data="${PORTICO_DATA_DIR:-.data}"
PORTICO_TEST_TOTALS="$side_totals" PORTICO_DEVDB_PORT="$((port + 1))" PORTICO_DATA_DIR="$data/side-lane" \
  npx mocha 'dist/test/faults/**/*.test.js' 'dist/test/fuzz/**/*.test.js' >"$side_output" 2>&1 &
side_lane=$!
PORTICO_TEST_TOTALS="$totals" npx mocha --ignore 'dist/test/**/*.unit.test.js' --ignore 'dist/test/faults/**' --ignore 'dist/test/fuzz/**' 'dist/test/**/*.test.js'
rest=$?
wait "$side_lane"
side=$?
cat "$side_output"

node test/support/test-totals.cjs "$totals" "$side_totals"
[ "$unit" -eq 0 ] && [ "$rest" -eq 0 ] && [ "$side" -eq 0 ]
