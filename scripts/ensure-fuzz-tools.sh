#!/usr/bin/env bash
# Installs, idempotently, Schemathesis (PyPI) for the schema fuzzing test (test/fuzz/schemathesis.test.ts)
# into a Python virtual environment in the per-machine tool cache (scripts/lib/tool-cache.sh:
# ~/.cache/portico/schemathesis/<key>/venv), linked from this clone as .tools/venv-schemathesis. The version is
# pinned below; a new environment is made only when the pin or the Python that makes it changes, so a fresh
# clone on a used machine installs nothing and a second run takes well under a second. Needs python3 with its
# venv module (Debian: python3-venv, installed here when root).
# Called by scripts/ensure-tools.sh. Run the tool with: .tools/venv-schemathesis/bin/schemathesis
set -euo pipefail

SCHEMATHESIS_VERSION=4.32.5

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=lib/tool-cache.sh
source "$root/scripts/lib/tool-cache.sh"

if ! command -v python3 >/dev/null 2>&1; then
  echo "ensure-fuzz-tools: python3 is required for Schemathesis (Debian: sudo apt-get install python3 python3-venv)" >&2
  exit 1
fi
# The key: the pin, and the interpreter the environment is made from and links to (its version, path and
# platform); pip's choice of Schemathesis' own dependencies is fixed when the entry is made.
python="$(command -v python3)"
built_from="schemathesis==$SCHEMATHESIS_VERSION
$("$python" -c 'import platform, sys; print(sys.version.split()[0], platform.machine())') $python"
entry="$(tool_cache_dir)/schemathesis/$(printf '%s\n' "$built_from" | tool_cache_key)"
venv="$entry/venv"

# A venv's scripts name its own path, so it cannot be built elsewhere and renamed: it is built in place, under
# the entry's lock, and `ready` is written last, so an interrupted run leaves no environment that looks
# installed (the next run starts it again).
if [ ! -f "$entry/ready" ]; then
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
  tool_cache_lock "$entry"
  if [ ! -f "$entry/ready" ]; then
    echo "ensure-fuzz-tools: installing schemathesis $SCHEMATHESIS_VERSION into $venv…" >&2
    rm -rf "$entry"
    mkdir -p "$entry"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "schemathesis==$SCHEMATHESIS_VERSION"
    "$venv/bin/schemathesis" --version >/dev/null
    printf '%s\n' "$built_from" >"$entry/built-from"
    touch "$entry/ready"
  fi
  tool_cache_unlock
fi
link_into "$venv" "$root/.tools/venv-schemathesis"
echo "ensure-fuzz-tools: schemathesis $SCHEMATHESIS_VERSION: $root/.tools/venv-schemathesis/bin/schemathesis ($venv)" >&2
