#!/usr/bin/env bash
# What goes into the container image's /app, written once for both ways of building it: scripts/build-image.sh
# (mmdebstrap + umoci, no daemon) and the Dockerfile's build stage call this, so the two images hold the same
# files. Run from a checkout where `npm run build` has run.
#
#   stage-app.sh modules <dest>   production dependencies only (npm ci --omit=dev) into <dest>/node_modules
#   stage-app.sh app <dest>       package.json, bin/, the compiled API, core and operator, the demo catalog (and the
#                                 real brand lists it names)
#
# Only the .js of a source file that exists is copied (never a stale file left in dist/ by a renamed source),
# no tests, benches, source maps or type declarations. Lifecycle scripts are skipped: `prepare` would compile
# the TypeScript, and sharp's install script only checks for the prebuilt libvips that npm already installed
# (@img/sharp-linux-<arch>, glibc, which runs on Debian trixie).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
what="${1:-}"
dest="${2:-}"
if [ -z "$dest" ] || { [ "$what" != modules ] && [ "$what" != app ]; }; then
  echo "usage: stage-app.sh modules|app <dest>" >&2
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
    # Portico Connect's page scripts and stylesheet (api/src/features/smart/connect-pages.ts reads them).
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
esac
