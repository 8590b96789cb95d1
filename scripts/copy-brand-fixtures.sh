#!/usr/bin/env bash
# Copies the redistributable brand lists into test/fixtures/brands as gzip files, content unchanged, straight
# from the upstream repositories at the commits test/fixtures/brands/SOURCES.md names:
#   - onc-healthit/lantern-back-end (Apache-2.0): every resources/prod_resources/*EndpointSources.json but the four
#     that are Lantern's copies of Oracle Health's and Epic's lists (SYNTHETIC below), with the repository's LICENSE
#     and NOTICE.md beside them;
#   - HL7/smart-app-launch (CC-BY-4.0): input/resources/Bundle-example1..4.json.
# The Oracle Health and Epic lists are not copied (no licence to redistribute them), nor Lantern's copies of them
# (Lantern's Apache-2.0 grant does not cover the vendors' rows): their fixtures are synthetic, written by
# scripts/synthesize-brand-fixtures.mjs.
#
#   scripts/copy-brand-fixtures.sh <lantern-back-end clone> <smart-app-launch clone>
#
# Each clone may be a work tree or a bare repository; it needs the commit below. gzip -9 -n: no name or time
# in the header, so the same input gives the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

LANTERN_COMMIT=8a6f77361f3a03857f9520164be76aa6f9aa678c
HL7_COMMIT=2494e060a45aa3cb0b86adf55e2c8426d1cb88a1
# Lantern's copies of Oracle Health's (Cerner_Corporation*) and Epic's (Epic_Systems_Corporation*) lists.
SYNTHETIC=" Cerner_Corporation_EndpointSources.json Cerner_Corporation_1_EndpointSources.json Epic_Systems_Corporation_EndpointSources.json Epic_Systems_Corporation_1_EndpointSources.json "

if [ "$#" -ne 2 ]; then
  echo "usage: $0 <lantern-back-end clone> <smart-app-launch clone>" >&2
  exit 2
fi
lantern=(git -C "$1")
hl7=(git -C "$2")
out=test/fixtures/brands

mkdir -p "$out/lantern-prod_resources" "$out/smart-app-launch-examples"
count=0
while IFS= read -r file; do
  name=$(basename "$file")
  case "$SYNTHETIC" in *" $name "*) continue ;; esac
  "${lantern[@]}" show "$LANTERN_COMMIT:$file" | gzip -9 -n > "$out/lantern-prod_resources/$name.gz"
  count=$((count + 1))
done < <("${lantern[@]}" ls-tree --name-only "$LANTERN_COMMIT" resources/prod_resources/ | grep 'EndpointSources\.json$')
"${lantern[@]}" show "$LANTERN_COMMIT:LICENSE" > "$out/lantern-prod_resources/LICENSE"
"${lantern[@]}" show "$LANTERN_COMMIT:NOTICE.md" > "$out/lantern-prod_resources/NOTICE.md"
echo "lantern-prod_resources: $count files copied (and 4 synthetic: node scripts/synthesize-brand-fixtures.mjs)"

for n in 1 2 3 4; do
  "${hl7[@]}" show "$HL7_COMMIT:input/resources/Bundle-example$n.json" | gzip -9 -n > "$out/smart-app-launch-examples/Bundle-example$n.json.gz"
done
echo "smart-app-launch-examples: 4 files"
