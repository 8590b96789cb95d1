#!/usr/bin/env bash
# Installs, idempotently, what the tests start for real: Debian's redis-server and etcd-server (the store
# behind the test Kubernetes API server, tools/kube-apiserver), and checks for the Go toolchain that builds
# the embedded database (tools/devdb) and kube-apiserver. Safe to run on every test run.
# Also the Helm chart's tools: Debian's mmdebstrap, umoci, skopeo and runc, which build and run the
# container image, and, through scripts/ensure-k8s-tools.sh, helm, kubeconform, helm-docs, helm-unittest and
# kubectl. And Schemathesis in a Python virtual environment, through scripts/ensure-fuzz-tools.sh. And Debian's
# chromium, which the browser tests drive (testkit/browser.ts), with a font for its screenshots.
# What is built is built once per machine, in the tool cache (scripts/lib/tool-cache.sh:
# ${PORTICO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/portico}), and linked from this clone's .tools: in a new
# clone on a machine that has run it before, it builds nothing and takes a few seconds.
set -euo pipefail

# Installs Debian packages, quietly, when this runs as root where apt-get is; false otherwise (or when apt-get
# fails), and the caller says what is missing and how to get it.
apt_install() {
  [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 || return 1
  echo "ensure-tools: installing $* (Debian packages)…" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! command -v go >/dev/null 2>&1; then
  echo "ensure-tools: Go is required to build the embedded database (tools/devdb); install Go 1.24+ or set MONGODB_URI" >&2
  exit 1
fi

if [ -z "${REDIS_URL:-}" ] && ! command -v redis-server >/dev/null 2>&1; then
  if apt_install redis-server; then
    # The package starts a system service; the tests start their own server on a free port instead.
    (command -v service >/dev/null && service redis-server stop >/dev/null 2>&1) || true
  else
    echo "ensure-tools: redis-server is missing: install it (Debian: sudo apt-get install redis-server) or set REDIS_URL" >&2
    exit 1
  fi
fi

if [ -z "${PORTICO_ETCD:-}" ] && ! command -v etcd >/dev/null 2>&1; then
  if apt_install etcd-server; then
    # Like redis: the package starts a system etcd on the default ports; the tests start their own.
    (command -v service >/dev/null && service etcd stop >/dev/null 2>&1) || true
    (command -v systemctl >/dev/null && systemctl disable --now etcd >/dev/null 2>&1) || true
  else
    echo "ensure-tools: etcd is missing: install it (Debian: sudo apt-get install etcd-server) or set PORTICO_ETCD to an etcd binary" >&2
    exit 1
  fi
fi

# The container image's tools (scripts/build-image.sh, and runc for the image tests, which run as root only).
# A user who is not root is told how to install them.
missing=()
for package in mmdebstrap umoci skopeo runc; do
  command -v "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ] && ! apt_install "${missing[@]}"; then
  echo "ensure-tools: ${missing[*]} missing, needed to build the container image (Debian: sudo apt-get install ${missing[*]})" >&2
fi

# The browser tests' Chromium (test/browser, driven by playwright-core through testkit/browser.ts: no browser is
# downloaded), and a font for the text in its screenshots (DejaVu, which a slim image may lack).
# PORTICO_CHROMIUM points the tests at another Chromium instead.
missing=()
if [ -z "${PORTICO_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then missing+=(chromium); fi
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
if [ "${#missing[@]}" -gt 0 ] && ! apt_install "${missing[@]}"; then
  echo "ensure-tools: ${missing[*]} missing, needed by the browser tests (Debian: sudo apt-get install ${missing[*]}) or set PORTICO_CHROMIUM to a Chromium binary" >&2
  exit 1
fi

bash "$(dirname "$0")/ensure-k8s-tools.sh"
bash "$(dirname "$0")/ensure-fuzz-tools.sh"
