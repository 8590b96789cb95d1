#!/usr/bin/env bash
# Installs, idempotently, Schemathesis (PyPI) for the schema fuzzing test (test/fuzz/schemathesis.test.ts, issue 11)
# into a Python virtual environment in the git-ignored .tools folder. The version is pinned below; the
# environment is rebuilt only when the pin (or the Python that made it) changes, so a second run takes well
# under a second. Needs python3 with its venv module (Debian: python3-venv, installed here when root).
# Called by scripts/ensure-tools.sh. Run the tool with: .tools/venv-schemathesis/bin/schemathesis
set -euo pipefail

SCHEMATHESIS_VERSION=4.32.5

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.tools/venv-schemathesis"
stamp_file="$venv/.portico-stamp"

if ! command -v python3 >/dev/null 2>&1; then
  echo "ensure-fuzz-tools: python3 is required for Schemathesis (Debian: sudo apt-get install python3 python3-venv)" >&2
  exit 1
fi
stamp="schemathesis==$SCHEMATHESIS_VERSION $(python3 -c 'import sys; print(sys.version.split()[0])') $(command -v python3)"

if [ -x "$venv/bin/schemathesis" ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ]; then
  echo "ensure-fuzz-tools: schemathesis $SCHEMATHESIS_VERSION: $venv/bin/schemathesis" >&2
  exit 0
fi

# Debian's python3 leaves venv (and the ensurepip it needs) to the python3-venv package.
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-fuzz-tools: installing python3-venv (Debian package)…" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  else
    echo "ensure-fuzz-tools: python3's venv module is missing (Debian: sudo apt-get install python3-venv)" >&2
    exit 1
  fi
fi

echo "ensure-fuzz-tools: installing schemathesis $SCHEMATHESIS_VERSION into $venv…" >&2
# A venv's scripts name its own path, so it is built in place; the stamp is written last, so an interrupted
# run leaves no environment that looks installed (the next run starts it again).
rm -rf "$venv"
mkdir -p "$root/.tools"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "schemathesis==$SCHEMATHESIS_VERSION"
"$venv/bin/schemathesis" --version >/dev/null
printf '%s' "$stamp" >"$stamp_file"
echo "ensure-fuzz-tools: schemathesis $SCHEMATHESIS_VERSION: $venv/bin/schemathesis" >&2
