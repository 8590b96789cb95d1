#!/usr/bin/env bash
# Builds Portico's container image without a registry or a container daemon (`npm run image`): a minimal
# Debian trixie root file system from mmdebstrap (ca-certificates, tini, the C++ runtime libraries and Debian's
# essential packages), then in a layer of its own Node 24 as /usr/local/bin/node (the binary of the npm registry's
# node-linux-<arch> package that the lockfile pins and npm ci installs for development and CI, not Debian's
# nodejs 20), then the app from scripts/stage-app.sh in a third, packed with umoci into an OCI layout and copied
# by skopeo into a docker-archive for `docker load` / `kind load image-archive`. The Dockerfile builds the same
# image where Docker is available.
#
# Reproducible: the same checkout, Debian package versions and npm lockfile give the same image digest. Every
# time in the image (files, config, history) is SOURCE_DATE_EPOCH (default: the commit time) or, for the Debian
# and Node layers, BASE_EPOCH below; layers are tars sorted by name with fixed owners and modes. Debian's
# snapshot archive is not reachable from every build machine, so the base is not pinned to a date: it is cached
# under a key of its package list and options and reused until PORTICO_IMAGE_REFRESH_BASE=1 (a rebuild then
# picks up trixie's point releases and security updates; .tools/image/base-packages.txt lists the versions).
# The base, the base with the Node layer and the production node_modules are cached once per machine, for every
# clone, in the tool cache (scripts/lib/tool-cache.sh: ~/.cache/portico/image-base/<key>, image-node/<key>,
# image-modules/<key>).
#
# Output (git-ignored, per clone): .tools/image/oci (OCI layout, tag = package.json version),
# .tools/image/portico.tar (docker-archive, portico:<version>), .tools/image/image.env (what the tests and the
# README read).
# Environment: PORTICO_IMAGE_DIR (output folder), PORTICO_IMAGE_NAME (default portico), SOURCE_DATE_EPOCH,
# PORTICO_IMAGE_SOURCE (the source URL label; default package.json repository.url, else git's origin),
# PORTICO_IMAGE_REFRESH_BASE=1, PORTICO_CACHE_DIR (the tool cache). Needs root (mmdebstrap's root mode) or working user namespaces.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=lib/tool-cache.sh
source "$root/scripts/lib/tool-cache.sh"
cache="$(tool_cache_dir)"
cd "$root"
out="${PORTICO_IMAGE_DIR:-$root/.tools/image}"
name="${PORTICO_IMAGE_NAME:-portico}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
started=$(date +%s)

for tool in mmdebstrap umoci skopeo; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "build-image: $tool is missing: run \`bash scripts/ensure-tools.sh\` as root (Debian: apt-get install mmdebstrap umoci skopeo)" >&2
    exit 1
  fi
done

# One build at a time per output folder (a test run and a developer may both start one).
exec 9>"$out/.lock"
flock 9

# --- What the image says about itself -------------------------------------------------------------------
version="$(node -p 'require("./package.json").version')"
revision="$(git rev-parse HEAD)"
# A build from uncommitted changes is not that commit: say so rather than claim it.
if [ -n "$(git status --porcelain --untracked-files=normal -- . ':!.tools')" ]; then revision="$revision-dirty"; fi
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
source_url="${PORTICO_IMAGE_SOURCE:-$(node -p 'const r = require("./package.json").repository; (typeof r === "string" ? r : r?.url) ?? ""')}"
[ -n "$source_url" ] || source_url="$(git remote get-url origin 2>/dev/null || true)"
# A URL a reader can open: git@host:path becomes https://host/path; a local path or anything else is left out.
case "$source_url" in
  git+https://*) source_url="${source_url#git+}" ;;
  git@*:*) source_url="https://$(echo "${source_url#git@}" | sed 's|:|/|')" ;;
esac
case "$source_url" in https://*) source_url="${source_url%.git}" ;; *) source_url="" ;; esac
license="$(node -p 'require("./package.json").license')"

# --- The Debian base, cached ----------------------------------------------------------------------------
# Its own fixed epoch (trixie's release day), so a new commit does not rebuild it.
BASE_EPOCH=1754697600
BASE_SUITE=trixie
# No nodejs: Node comes in a layer of its own (below). What its binary links besides libc (ldd): libstdc++ and
# libgcc_s. ca-certificates: the system's trust store, which the image tells Node to use (NODE_USE_SYSTEM_CA).
BASE_PACKAGES=ca-certificates,tini,libstdc++6,libgcc-s1
BASE_MIRRORS=(
  "deb http://deb.debian.org/debian trixie main"
  "deb http://deb.debian.org/debian trixie-updates main"
  "deb http://deb.debian.org/debian-security trixie-security main"
)
BASE_OPTIONS=(
  # Essential (dpkg, coreutils, bash, …: what maintainer scripts need) plus ours; no apt, no Recommends.
  --variant=essential
  --include="$BASE_PACKAGES"
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/lintian/*'
  # The user the programs run as, and its writable folder (an emptyDir in the chart).
  --customize-hook='echo "portico:x:10001:10001:Portico:/data:/usr/sbin/nologin" >>"$1/etc/passwd"'
  --customize-hook='echo "portico:x:10001:" >>"$1/etc/group"'
  --customize-hook='install -d -m 0750 -o 10001 -g 10001 "$1/data"'
  # The runtime provides these (the host's would make the layer differ between machines), and dpkg's and
  # debconf's backups are not needed.
  --customize-hook='rm -f "$1/etc/resolv.conf" "$1/etc/hostname" "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old'
)
# Left out of the layer: device nodes (the runtime mounts /dev, and a layer with them cannot be unpacked
# without privileges) and apt's configuration and state (mmdebstrap used it from outside; it is not installed).
BASE_DELETE=('./dev/?*' './etc/apt' './var/lib/apt' './var/cache/apt' './var/log/apt')
BASE_HISTORY="mmdebstrap --variant=essential --include=$BASE_PACKAGES $BASE_SUITE"
architecture="$(dpkg --print-architecture)"
# Keyed by what goes into it (epoch, suite, mirrors, options, what is deleted, the history line) and the
# architecture; not by the day it was built, which is what PORTICO_IMAGE_REFRESH_BASE=1 is for.
base_key="$( (printf '%s\n' "$BASE_EPOCH" "$BASE_SUITE" "${BASE_MIRRORS[@]}" "${BASE_OPTIONS[@]}" "${BASE_DELETE[@]}" "$BASE_HISTORY" "$architecture") | tool_cache_key)"
base="$cache/image-base/$base_key"
build_base() {
  local temporary="$1"
  echo "build-image: building the Debian $BASE_SUITE base with mmdebstrap (about a minute; cached as $base)…" >&2
  SOURCE_DATE_EPOCH=$BASE_EPOCH mmdebstrap --quiet "${BASE_OPTIONS[@]}" --format=tar "$BASE_SUITE" - "${BASE_MIRRORS[@]}" |
    tar --delete --wildcards "${BASE_DELETE[@]}" >"$temporary/rootfs.tar"
  tar -xOf "$temporary/rootfs.tar" ./var/lib/dpkg/status |
    awk '/^Package:/ { p = $2 } /^Version:/ { print p " " $2 }' | sort >"$temporary/base-packages.txt"
  stat -c %s "$temporary/rootfs.tar" >"$temporary/rootfs.size"
  # Cached as a compressed layer in an OCI layout, so a warm build compresses only the app.
  umoci init --layout "$temporary/oci"
  umoci new --image "$temporary/oci:base"
  umoci raw add-layer --image "$temporary/oci:base" --history.created "$(date -u -d "@$BASE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)" \
    --history.created_by "$BASE_HISTORY" "$temporary/rootfs.tar"
  rm "$temporary/rootfs.tar"
  touch "$temporary/ready"
}
if [ "${PORTICO_IMAGE_REFRESH_BASE:-}" = 1 ]; then
  # Under the entry's lock: no other clone is copying from it (they hold it shared while they do, below).
  tool_cache_lock "$base"
  rm -rf "$base"
  tool_cache_unlock
fi
tool_cache_build "$base" ready build_base
# The base is read under its lock, shared, so that a PORTICO_IMAGE_REFRESH_BASE=1 in another clone waits.
exec {base_lock}>"$base.lock"
flock -s "$base_lock"
if [ ! -f "$base/ready" ]; then
  echo "build-image: another clone is refreshing the Debian base ($base): run again" >&2
  exit 1
fi

# --- Node, cached: the base with the Node layer on it ---------------------------------------------------
# The lockfile's node-linux-<arch> (scripts/stage-app.sh runtime: /usr/local/bin/node and its licence), a layer
# of its own, so that a new Node does not rebuild the Debian base and a new commit does not recompress Node's
# 121 MiB.
# Keyed by the base it is on (its OCI index: a refreshed base has another), the lockfile's entry for the package
# (version and integrity), how the layer is made, and the architecture.
node_arch="$(node -p process.arch)"
NODE_PACKAGE="node-linux-$node_arch"
node_pinned="$(node -p "JSON.stringify(require('./package-lock.json').packages['node_modules/$NODE_PACKAGE'] ?? null)")"
if [ "$node_pinned" = null ]; then
  echo "build-image: package-lock.json pins no $NODE_PACKAGE (the image's Node for $node_arch)" >&2
  exit 1
fi
NODE_VERSION="$(node -p "require('./package-lock.json').packages['node_modules/$NODE_PACKAGE'].version")"
NODE_HISTORY="scripts/stage-app.sh runtime ($NODE_PACKAGE $NODE_VERSION: /usr/local/bin/node)"
node_key="$( (cat "$base/oci/index.json"; echo; printf '%s\n' "$node_pinned" "$NODE_HISTORY" "$BASE_EPOCH" "$architecture"; sed -n '/^  runtime)/,/;;/p' scripts/stage-app.sh) | tool_cache_key)"
node_layer="$cache/image-node/$node_key"
build_node() {
  local temporary="$1"
  echo "build-image: adding Node $NODE_VERSION ($NODE_PACKAGE) to the base (cached as $node_layer)…" >&2
  bash scripts/stage-app.sh runtime "$temporary/rootfs"
  tar --create --file="$temporary/node.tar" --directory="$temporary/rootfs" --format=gnu --sort=name \
    --owner=0 --group=0 --numeric-owner --mode='a+rX,u+w,go-w' --mtime="@$BASE_EPOCH" usr
  stat -c %s "$temporary/node.tar" >"$temporary/node.size"
  cp -r "$base/oci" "$temporary/oci"
  umoci raw add-layer --image "$temporary/oci:base" --history.created "$(date -u -d "@$BASE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)" \
    --history.created_by "$NODE_HISTORY" "$temporary/node.tar"
  rm -r "$temporary/node.tar" "$temporary/rootfs"
  touch "$temporary/ready"
}
tool_cache_build "$node_layer" ready build_node

# --- The app: production node_modules (cached by lockfile) and the compiled code ------------------------
npm run build --silent
# Keyed by the lockfile, by stage-app.sh (it decides what is installed and trimmed), and by the npm and the
# platform that choose the optional packages (sharp's prebuilt libvips for this OS and CPU).
modules_key="$( (cat package-lock.json scripts/stage-app.sh; npm --version; node -p 'process.platform + " " + process.arch') | tool_cache_key)"
modules="$cache/image-modules/$modules_key"
build_modules() {
  echo "build-image: installing production dependencies (npm ci --omit=dev; cached as $modules)…" >&2
  bash scripts/stage-app.sh modules "$1"
}
tool_cache_build "$modules" node_modules build_modules
stage="$out/stage"
rm -rf "$stage"
mkdir -p "$stage/app"
bash scripts/stage-app.sh app "$stage/app"
# Hard links where the cache is on the same file system (tar only reads them).
cp -al "$modules/node_modules" "$stage/app/node_modules" 2>/dev/null || cp -a "$modules/node_modules" "$stage/app/node_modules"
# Owned by root and read-only to the app's user; every time is SOURCE_DATE_EPOCH; sorted; no pax times.
tar --create --file="$stage/app.tar" --directory="$stage" --format=gnu --sort=name \
  --owner=0 --group=0 --numeric-owner --mode='a+rX,u+w,go-w' --mtime="@$SOURCE_DATE_EPOCH" app

# --- Pack: base layer + Node layer + app layer + config -------------------------------------------------
layout="$out/oci"
rm -rf "$layout"
cp -r "$node_layer/oci" "$layout"
umoci raw add-layer --image "$layout:base" --tag "$version" --history.created "$created" \
  --history.created_by "scripts/stage-app.sh (/app)" "$stage/app.tar"
config=(
  --config.user 10001:10001
  --config.workingdir /app
  --config.entrypoint /usr/bin/tini --config.entrypoint --
  --config.cmd node --config.cmd /app/bin/portico.js --config.cmd serve
  --config.exposedports 8080/tcp
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  --config.env NODE_ENV=production
  --config.env NODE_USE_SYSTEM_CA=1
  --config.env HOST=0.0.0.0
  --config.env PORTICO_DATA_DIR=/data
  --config.label org.opencontainers.image.title=portico
  --config.label "org.opencontainers.image.description=Portico: the platform API and the BrandCatalog operator (node /app/bin/portico-operator.js run)"
  --config.label "org.opencontainers.image.version=$version"
  --config.label "org.opencontainers.image.revision=$revision"
  --config.label "org.opencontainers.image.created=$created"
  --config.label "org.opencontainers.image.licenses=$license"
  --config.label "org.opencontainers.image.base.name=debian:$BASE_SUITE"
)
[ -z "$source_url" ] || config+=(--config.label "org.opencontainers.image.source=$source_url")
umoci config --no-history --image "$layout:$version" --created "$created" --architecture "$(dpkg --print-architecture)" --os linux "${config[@]}"
umoci tag --image "$layout:$version" latest
umoci rm --image "$layout:base"
umoci gc --layout "$layout"

archive="$out/$name.tar"
rm -f "$archive"
skopeo copy --quiet --insecure-policy "oci:$layout:$version" "docker-archive:$archive:$name:$version"

# --- Report ---------------------------------------------------------------------------------------------
# json <file> <expression of j>: a field of a JSON file.
json() { node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(eval(process.argv[2]))' "$@"; }
digest="$(json "$layout/index.json" "j.manifests.find((m) => m.annotations['org.opencontainers.image.ref.name'] === '$version').digest")"
manifest="$layout/blobs/sha256/${digest#sha256:}"
config_digest="$(json "$manifest" 'j.config.digest')"
compressed="$(json "$manifest" 'j.layers.reduce((n, l) => n + l.size, 0)')"
uncompressed=$(($(cat "$base/rootfs.size") + $(cat "$node_layer/node.size") + $(stat -c %s "$stage/app.tar")))
rm -rf "$stage"
cp "$base/base-packages.txt" "$out/base-packages.txt"
cat >"$out/image.env" <<EOF
IMAGE_NAME=$name:$version
IMAGE_DIGEST=$digest
IMAGE_ID=$config_digest
IMAGE_LAYOUT=$layout
IMAGE_ARCHIVE=$archive
IMAGE_SIZE_BYTES=$uncompressed
IMAGE_COMPRESSED_BYTES=$compressed
IMAGE_NODE_VERSION=$NODE_VERSION
IMAGE_REVISION=$revision
IMAGE_CREATED=$created
EOF
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "build-image: $name:$version in $(($(date +%s) - started)) s"
echo "  digest   $digest (OCI manifest; the image ID docker shows: $config_digest)"
echo "  size     $(mib "$uncompressed") unpacked, $(mib "$compressed") compressed"
echo "  node     $NODE_VERSION ($NODE_PACKAGE, /usr/local/bin/node)"
echo "  layout   $layout (tags $version, latest)"
echo "  archive  $archive (docker load -i …; kind load image-archive …)"
