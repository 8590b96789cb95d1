#!/usr/bin/env bash
# Builds, idempotently, the Kubernetes and Helm command-line tools for the Helm chart from the Go
# module proxy (no GitHub release downloads): helm, kubeconform, helm-docs, the helm-unittest plugin and kubectl.
# Versions are pinned below (kubectl in tools/kubectl/go.mod). Each is built once per machine into the tool
# cache (scripts/lib/tool-cache.sh: ~/.cache/portico/<tool>/<key>/) and linked from this clone's git-ignored
# .tools, so a fresh clone on a used machine builds nothing and a second run takes about a second. The first
# build compiles helm and kubectl: several minutes on 2 cores, much less with a warm Go build cache
# (~/.cache/go-build). Called by scripts/ensure-tools.sh. Use the tools with:
#   PATH="$PWD/.tools/bin:$PATH" HELM_PLUGINS="$PWD/.tools/helm-plugins"   # then: helm unittest <chart>
set -euo pipefail

HELM_VERSION=v3.22.0          # helm.sh/helm/v3
KUBECONFORM_VERSION=v0.8.0    # github.com/yannh/kubeconform
HELM_DOCS_VERSION=v1.14.2     # github.com/norwoodj/helm-docs
HELM_UNITTEST_VERSION=v1.1.2  # github.com/helm-unittest/helm-unittest

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=lib/tool-cache.sh
source "$root/scripts/lib/tool-cache.sh"
cache="$(tool_cache_dir)"
bin="$root/.tools/bin"
export GOWORK=off

# The Kubernetes release the chart targets: the test API server's (tools/kube-apiserver/go.mod). Go-built
# helm otherwise assumes Kubernetes 1.20 for .Capabilities.KubeVersion and for `helm lint`'s deprecations.
kube_version="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$root/tools/kube-apiserver/go.mod")"
kube_minor="$(echo "$kube_version" | cut -d. -f2)"
if [ -z "$kube_minor" ]; then
  echo "ensure-k8s-tools: cannot read the k8s.io/kubernetes version from tools/kube-apiserver/go.mod" >&2
  exit 1
fi
# For any binary that links helm's chartutil and lint packages (helm itself, helm-unittest).
helm_kube_ldflags="-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kube_minor"
helm_kube_ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kube_minor"

# What every build here shares: the Go release and platform, read once (the pinned modules ask for no newer Go
# than the one that builds them).
go_inputs="$(go_build_inputs "$root")"

# build_module_into <temporary entry> <binary name> <module> <version> <package in the module> <ldflags>: builds
# a main package from inside the downloaded module, so the module's own go.mod (with its replace directives,
# which make `go install pkg@version` refuse) and go.sum decide the dependencies, as in the project's own builds.
build_module_into() {
  local temporary="$1" name="$2" module="$3" version="$4" package="$5" ldflags="$6"
  echo "ensure-k8s-tools: building $name ($module@$version)…" >&2
  local dir
  dir="$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  if [ -z "$dir" ]; then
    echo "ensure-k8s-tools: cannot download $module@$version from the Go module proxy" >&2
    exit 1
  fi
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$temporary/$name" "$package")
  printf '%s\n' "$module@$version $package -ldflags '$ldflags'" "$go_inputs" >"$temporary/built-from"
}

# build_module <binary name> <module> <version> <package> <ldflags>: the program's cache entry, keyed by what
# decides the binary: the module, its version (its go.sum fixes the rest), the package, the ldflags (they carry
# the Kubernetes minor) and the Go release and platform. Prints the entry's folder.
build_module() {
  local name="$1" module="$2" version="$3" package="$4" ldflags="$5"
  local key entry
  key="$(printf '%s\n' "$module@$version $package -ldflags '$ldflags'" "$go_inputs" | tool_cache_key)"
  entry="$cache/$name/$key"
  tool_cache_build "$entry" "$name" build_module_into "$name" "$module" "$version" "$package" "$ldflags"
  link_into "$entry/$name" "$bin/$name"
  echo "ensure-k8s-tools: $name $version: $entry/$name" >&2
}

build_module helm helm.sh/helm/v3 "$HELM_VERSION" ./cmd/helm \
  "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean $helm_kube_ldflags"
build_module kubeconform github.com/yannh/kubeconform "$KUBECONFORM_VERSION" ./cmd/kubeconform \
  "-X main.version=$KUBECONFORM_VERSION"
build_module helm-docs github.com/norwoodj/helm-docs "$HELM_DOCS_VERSION" ./cmd/helm-docs \
  "-X main.version=${HELM_DOCS_VERSION#v}"
build_module helm-unittest github.com/helm-unittest/helm-unittest "$HELM_UNITTEST_VERSION" ./cmd/helm-unittest \
  "-X github.com/helm-unittest/helm-unittest/internal/build.version=${HELM_UNITTEST_VERSION#v} $helm_kube_ldflags"

# helm-unittest as the helm plugin `helm unittest`: a plugins folder (HELM_PLUGINS) holding unittest/plugin.yaml
# and the binary (upstream's plugin.yaml downloads a release binary in an install hook; this one runs ours).
# Its own entry, keyed by the binary it runs and by the plugin.yaml written here.
unittest_binary="$(readlink "$bin/helm-unittest")"
plugin_yaml="name: \"unittest\"
version: \"${HELM_UNITTEST_VERSION#v}\"
usage: \"unittest for helm charts\"
description: \"Unit test for helm chart in YAML with ease to keep your chart functional and robust.\"
ignoreFlags: false
command: \"\$HELM_PLUGIN_DIR/untt\""
write_plugins() {
  mkdir -p "$1/unittest"
  ln -s "$unittest_binary" "$1/unittest/untt"
  printf '%s\n' "$plugin_yaml" >"$1/unittest/plugin.yaml"
}
plugins="$cache/helm-plugins/$(printf '%s\n' "$unittest_binary" "$plugin_yaml" | tool_cache_key)"
tool_cache_build "$plugins" unittest/plugin.yaml write_plugins
link_into "$plugins" "$root/.tools/helm-plugins"
echo "ensure-k8s-tools: helm unittest plugin: HELM_PLUGINS=$root/.tools/helm-plugins ($plugins)" >&2

# kubectl from tools/kubectl, keyed as core/src/infra/go-tool.ts keys the programs it builds from tools/<name>
# (go_built_from), so either side may build it and both find it.
kubectl_source="$root/tools/kubectl"
kubectl_built_from="$(go_built_from "$kubectl_source")"
build_kubectl_into() {
  echo "ensure-k8s-tools: building kubectl (go build tools/kubectl)…" >&2
  (cd "$kubectl_source" && go build -trimpath -o "$1/kubectl" .)
  printf '%s\n' "$kubectl_built_from" >"$1/built-from"
}
kubectl_entry="$cache/kubectl/$(printf '%s\n' "$kubectl_built_from" | tool_cache_key)"
tool_cache_build "$kubectl_entry" kubectl build_kubectl_into
link_into "$kubectl_entry/kubectl" "$bin/kubectl"
echo "ensure-k8s-tools: kubectl $(awk '$1 == "k8s.io/kubectl" { print $2; exit }' "$kubectl_source/go.mod" | sed 's/^v0\./v1./'): $kubectl_entry/kubectl" >&2
