#!/usr/bin/env bash
# Generates the sandbox's synthetic patients with Synthea (MITRE's generator, org.mitre.synthea:synthea 3.3.0 from
# Maven Central, Apache-2.0) and keeps them as compressed fixtures in test/fixtures/synthea/, so that `npm start` and
# the tests need no Java: run it by hand (Java 17 and Maven) when the fixtures should change, and commit what it
# writes. The same seeds, reference date and Synthea version give the same patients.
#
# Environment: SYNTHEA_PATIENTS (default 3), SYNTHEA_SEED (default 20261207), SYNTHEA_REFERENCE_DATE (YYYYMMDD,
# default 20261201: ages and dates are relative to it, so they do not move with the day it runs),
# SYNTHEA_STATE (default Massachusetts), SYNTHEA_LARGE_SEED (the benchmark's patient, default 20261208).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/.tools/synthea"
out="$root/test/fixtures/synthea"
patients="${SYNTHEA_PATIENTS:-3}"
seed="${SYNTHEA_SEED:-20261207}"
reference="${SYNTHEA_REFERENCE_DATE:-20261201}"
state="${SYNTHEA_STATE:-Massachusetts}"
large_seed="${SYNTHEA_LARGE_SEED:-20261208}"

for tool in java mvn; do
  command -v "$tool" >/dev/null || { echo "synthea-fixtures: $tool is missing (Java 17 and Maven)" >&2; exit 1; }
done
mkdir -p "$work" "$out"
# Synthea and its dependencies, resolved by Maven into its local repository (~/.m2), once.
mvn -q -B -f "$root/scripts/synthea/pom.xml" dependency:build-classpath -Dmdep.outputFile="$work/classpath.txt"
jar="$(mvn -q -B -f "$root/scripts/synthea/pom.xml" help:evaluate -Dexpression=settings.localRepository -DforceStdout)/org/mitre/synthea/synthea/3.3.0/synthea-3.3.0.jar"

# One population: each patient's own bundle, and the organizations (with their locations) and practitioners the
# patients' records point at (Synthea writes those as separate transaction bundles, named by the time they were
# written: renamed here). FHIR R4 JSON only.
generate() { # <output folder> <synthea arguments…>
  local output="$1"
  shift
  rm -rf "$output"
  java -cp "$jar:$(cat "$work/classpath.txt")" App \
    -r "$reference" --exporter.baseDirectory="$output" \
    --exporter.fhir.export=true --exporter.hospital.fhir.export=true --exporter.practitioner.fhir.export=true \
    --exporter.csv.export=false --exporter.text.export=false "$@" "$state" >"$output.log"
}
keep() { # <output folder> <fixture folder>
  rm -f "$2"/*.json.gz
  mkdir -p "$2"
  for bundle in "$1"/fhir/*.json; do
    name="$(basename "$bundle")"
    case "$name" in
      hospitalInformation*) name=organizations.json ;;
      practitionerInformation*) name=practitioners.json ;;
    esac
    gzip -9 -n -c "$bundle" >"$2/$name.gz"
  done
  ls -l "$2"
}

# The sandbox's and the tests' patients.
generate "$work/output" -s "$seed" -cs "$seed" -p "$patients"
keep "$work/output" "$out"
# The benchmark's patient: one whole long life (bench/whole-record.ts). Synthea exports the patients of the population
# who died on the way too; of them all, the one bundle closest to 13,000 resources is kept (about 11,000 of the record
# types: Synthea adds claims and supply deliveries), with the population's organizations and practitioners.
generate "$work/large" -s "$large_seed" -cs "$large_seed" -p 1 -a 95-100
chosen="$(node -e '
  const fs = require("fs"), path = require("path");
  const dir = process.argv[1];
  const sizes = fs.readdirSync(dir).filter((f) => !/^(hospital|practitioner)Information/.test(f))
    .map((f) => [f, JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")).entry.length]);
  sizes.sort((a, b) => Math.abs(a[1] - 13000) - Math.abs(b[1] - 13000) || (a[0] < b[0] ? -1 : 1));
  console.log(sizes[0][0]);
' "$work/large/fhir")"
for bundle in "$work"/large/fhir/*.json; do
  case "$(basename "$bundle")" in "$chosen" | hospitalInformation* | practitionerInformation*) ;; *) rm "$bundle" ;; esac
done
keep "$work/large" "$out/large"
