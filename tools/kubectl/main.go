// Command portico-kubectl is kubectl v1.37.2, the client matching the test API server (tools/kube-apiserver),
// for the Helm chart's scripts and checks. kubectl's main package lives in k8s.io/kubernetes (cmd/kubectl),
// which cannot be `go install`ed; this is that main, over the published k8s.io/kubectl module. Built into
// .tools/bin by scripts/ensure-k8s-tools.sh. To move to another release, change every v0.37.2 in go.mod
// together and run `go mod tidy`.
package main

import (
	"os"
	"runtime/debug"
	"strings"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// As upstream: the client auth plugins (exec, OIDC).
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	_ "unsafe" // for go:linkname
)

func main() {
	setVersion()
	// As upstream (k8s.io/kubernetes/cmd/kubectl): the verbosity is needed before the flags are parsed.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}

// Kubernetes' release builds stamp their version with -ldflags -X; `go build` leaves v0.0.0-master, which
// `kubectl version` would then report. The staging module k8s.io/kubectl v0.X.Y is Kubernetes v1.X.Y.
var (
	//go:linkname gitVersion k8s.io/component-base/version.gitVersion
	gitVersion string
	//go:linkname gitMajor k8s.io/component-base/version.gitMajor
	gitMajor string
	//go:linkname gitMinor k8s.io/component-base/version.gitMinor
	gitMinor string
	//go:linkname gitTreeState k8s.io/component-base/version.gitTreeState
	gitTreeState string
)

func setVersion() {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	for _, module := range info.Deps {
		if module.Path != "k8s.io/kubectl" {
			continue
		}
		parts := strings.SplitN(strings.TrimPrefix(module.Version, "v"), ".", 3)
		if len(parts) == 3 && parts[0] == "0" {
			kubernetes := "v1." + parts[1] + "." + parts[2]
			gitVersion, gitMajor, gitMinor, gitTreeState = kubernetes, "1", parts[1], "clean"
			_ = version.SetDynamicVersion(kubernetes)
		}
	}
}
