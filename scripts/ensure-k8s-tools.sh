#!/usr/bin/env bash
# Builds, idempotently, the Kubernetes and Helm command-line tools for the Helm chart (issue 10) into the
# git-ignored .tools folder, from the Go module proxy (no GitHub release downloads): helm, kubeconform,
# helm-docs, the helm-unittest plugin and kubectl. Versions are pinned below (kubectl in tools/kubectl/go.mod);
# a tool is rebuilt only when its pin changes, so a second run takes about a second. The first build compiles
# helm and kubectl: several minutes on 2 cores, much less with a warm Go build cache (~/.cache/go-build).
# Called by scripts/ensure-tools.sh. Use the tools with:
#   PATH="$PWD/.tools/bin:$PATH" HELM_PLUGINS="$PWD/.tools/helm-plugins"   # then: helm unittest <chart>
set -euo pipefail

HELM_VERSION=v3.22.0          # helm.sh/helm/v3
KUBECONFORM_VERSION=v0.8.0    # github.com/yannh/kubeconform
HELM_DOCS_VERSION=v1.14.2     # github.com/norwoodj/helm-docs
HELM_UNITTEST_VERSION=v1.1.2  # github.com/helm-unittest/helm-unittest

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/.tools/bin"
plugins="$root/.tools/helm-plugins"
mkdir -p "$bin" "$plugins"
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

# up_to_date <binary> <stamp>: whether <binary> exists and was built from what <stamp> describes.
up_to_date() {
  [ -x "$1" ] && [ -f "$1.stamp" ] && [ "$(cat "$1.stamp")" = "$2" ]
}

# install_built <temporary> <binary> <stamp>: moves a finished build into place (never half a binary).
install_built() {
  mv -f "$1" "$2"
  printf '%s' "$3" >"$2.stamp"
}

# build_module <binary name> <module> <version> <package in the module> <ldflags>: builds a main package from
# inside the downloaded module, so the module's own go.mod (with its replace directives, which make
# `go install pkg@version` refuse) and go.sum decide the dependencies, as in the project's own builds.
build_module() {
  local name="$1" module="$2" version="$3" package="$4" ldflags="$5"
  local binary="$bin/$name" stamp="$module@$version $package -ldflags '$ldflags'"
  if ! up_to_date "$binary" "$stamp"; then
    echo "ensure-k8s-tools: building $name ($module@$version)…" >&2
    local dir
    dir="$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    if [ -z "$dir" ]; then
      echo "ensure-k8s-tools: cannot download $module@$version from the Go module proxy" >&2
      exit 1
    fi
    (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$binary.$$.tmp" "$package")
    install_built "$binary.$$.tmp" "$binary" "$stamp"
  fi
  echo "ensure-k8s-tools: $name $version: $binary" >&2
}

build_module helm helm.sh/helm/v3 "$HELM_VERSION" ./cmd/helm \
  "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean $helm_kube_ldflags"
build_module kubeconform github.com/yannh/kubeconform "$KUBECONFORM_VERSION" ./cmd/kubeconform \
  "-X main.version=$KUBECONFORM_VERSION"
build_module helm-docs github.com/norwoodj/helm-docs "$HELM_DOCS_VERSION" ./cmd/helm-docs \
  "-X main.version=${HELM_DOCS_VERSION#v}"
build_module helm-unittest github.com/helm-unittest/helm-unittest "$HELM_UNITTEST_VERSION" ./cmd/helm-unittest \
  "-X github.com/helm-unittest/helm-unittest/internal/build.version=${HELM_UNITTEST_VERSION#v} $helm_kube_ldflags"

# helm-unittest as the helm plugin `helm unittest`: a plugin folder under HELM_PLUGINS with plugin.yaml and the
# binary (upstream's plugin.yaml downloads a release binary in an install hook; this one runs ours).
unittest_plugin="$plugins/unittest"
mkdir -p "$unittest_plugin"
ln -sf "$bin/helm-unittest" "$unittest_plugin/untt"
cat >"$unittest_plugin/plugin.yaml.$$.tmp" <<EOF
name: "unittest"
version: "${HELM_UNITTEST_VERSION#v}"
usage: "unittest for helm charts"
description: "Unit test for helm chart in YAML with ease to keep your chart functional and robust."
ignoreFlags: false
command: "\$HELM_PLUGIN_DIR/untt"
EOF
mv -f "$unittest_plugin/plugin.yaml.$$.tmp" "$unittest_plugin/plugin.yaml"
echo "ensure-k8s-tools: helm unittest plugin: HELM_PLUGINS=$plugins" >&2

# kubectl from tools/kubectl, as core/src/infra/go-tool.ts builds tools/<name>: rebuilt when go.mod, go.sum or
# a .go file there changes (the same stamp, so either may build it).
kubectl_source="$root/tools/kubectl"
kubectl_stamp="$(cd "$kubectl_source" && LC_ALL=C cat go.mod go.sum $(LC_ALL=C ls -- *.go) | sha256sum | cut -d' ' -f1)"
if ! up_to_date "$bin/kubectl" "$kubectl_stamp"; then
  echo "ensure-k8s-tools: building kubectl (go build tools/kubectl)…" >&2
  (cd "$kubectl_source" && go build -trimpath -o "$bin/kubectl.$$.tmp" .)
  install_built "$bin/kubectl.$$.tmp" "$bin/kubectl" "$kubectl_stamp"
fi
echo "ensure-k8s-tools: kubectl $(awk '$1 == "k8s.io/kubectl" { print $2; exit }' "$kubectl_source/go.mod" | sed 's/^v0\./v1./'): $bin/kubectl" >&2
