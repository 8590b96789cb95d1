// Command portico-kube-apiserver is the real Kubernetes API server for the catalog operator's tests:
// kube-apiserver's own command (k8s.io/kubernetes/cmd/kube-apiserver/app), built from the Go module proxy
// because k8s.io/kubernetes cannot be `go install`ed (see go.mod). test/support/kubernetes.ts starts it
// against a private etcd. One flag is added in front of kube-apiserver's: --exit-on-stdin-eof.
package main

import (
	"io"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata" // as upstream: time zones for CronJob

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // as upstream: --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // as upstream: client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // as upstream: the version metric
	"k8s.io/component-base/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	_ "unsafe" // for go:linkname
)

const exitOnStdinEOF = "--exit-on-stdin-eof"

func main() {
	args := make([]string, 0, len(os.Args))
	watchStdin := false
	for _, arg := range os.Args {
		if arg == exitOnStdinEOF {
			watchStdin = true
			continue
		}
		args = append(args, arg)
	}
	os.Args = args
	if watchStdin {
		// A parent killed without a chance to clean up still closes our stdin, so we never outlive it:
		// SIGTERM to ourselves takes kube-apiserver's own graceful shutdown path, which takes about a
		// second, but can hang for minutes retrying etcd when etcd went away with the parent: cut it short.
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
			time.Sleep(5 * time.Second)
			os.Exit(1)
		}()
	}
	setVersion()
	command := app.NewAPIServerCommand()
	os.Exit(cli.Run(command))
}

// Kubernetes' release builds stamp their version with -ldflags -X; `go build` leaves v0.0.0-master, which
// /version would then report. The version of k8s.io/kubernetes this binary was built from is in go.mod.
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
		if module.Path != "k8s.io/kubernetes" {
			continue
		}
		parts := strings.SplitN(strings.TrimPrefix(module.Version, "v"), ".", 3)
		if len(parts) == 3 {
			gitVersion, gitMajor, gitMinor, gitTreeState = module.Version, parts[0], parts[1], "clean"
			_ = version.SetDynamicVersion(module.Version) // what Get() reports, captured before main
		}
	}
}
