#!/usr/bin/env bash
# Generates the sandbox's synthetic patients with Synthea (MITRE's generator, org.mitre.synthea:synthea 3.3.0 from
# Maven Central, Apache-2.0) and keeps them as compressed fixtures in test/fixtures/synthea/, so that `npm start` and
# the tests need no Java: run it by hand (Java 17 and Maven) when the fixtures should change, and commit what it
# writes. The same seeds, reference date and Synthea version give the same patients.
#
# Environment: SYNTHEA_PATIENTS (default 3), SYNTHEA_SEED (default 20261207), SYNTHEA_REFERENCE_DATE (YYYYMMDD,
# default 20261201: ages and dates are relative to it, so they do not move with the day it runs),
# SYNTHEA_STATE (default Massachusetts).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/.tools/synthea"
out="$root/test/fixtures/synthea"
patients="${SYNTHEA_PATIENTS:-3}"
seed="${SYNTHEA_SEED:-20261207}"
reference="${SYNTHEA_REFERENCE_DATE:-20261201}"
state="${SYNTHEA_STATE:-Massachusetts}"

for tool in java mvn; do
  command -v "$tool" >/dev/null || { echo "synthea-fixtures: $tool is missing (Java 17 and Maven)" >&2; exit 1; }
done
mkdir -p "$work" "$out"
# Synthea and its dependencies, resolved by Maven into its local repository (~/.m2), once.
mvn -q -B -f "$root/scripts/synthea/pom.xml" dependency:build-classpath -Dmdep.outputFile="$work/classpath.txt"
jar="$(mvn -q -B -f "$root/scripts/synthea/pom.xml" help:evaluate -Dexpression=settings.localRepository -DforceStdout)/org/mitre/synthea/synthea/3.3.0/synthea-3.3.0.jar"

rm -rf "$work/output"
# Only the patients' own bundles (not the hospital and practitioner files), as FHIR R4 JSON.
java -cp "$jar:$(cat "$work/classpath.txt")" App \
  -s "$seed" -cs "$seed" -r "$reference" -p "$patients" \
  --exporter.baseDirectory="$work/output" \
  --exporter.fhir.export=true --exporter.hospital.fhir.export=false --exporter.practitioner.fhir.export=false \
  --exporter.csv.export=false --exporter.text.export=false \
  "$state" >"$work/synthea.log"

rm -f "$out"/*.json.gz
for bundle in "$work"/output/fhir/*.json; do
  gzip -9 -n -c "$bundle" >"$out/$(basename "$bundle").gz"
done
ls -l "$out"
