// Command kubeplane is the local control plane in one binary: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok,
// chosen by the name it is run as (the tool cache links each name to it), the
// way hyperkube was.
//
// Why one binary: on a fresh 2-core machine a first `make demo` is almost all
// compiling, and the control plane's commands share most of their packages
// (gRPC, protobuf, the etcd client, client-go, OpenTelemetry): built from one
// module, each shared package compiles once, and one link of the union costs
// about what one of them did. Each command is upstream's own main, called as
// upstream calls it.
package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	_ "time/tzdata" // for timeZone support in CronJob

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// servers are the Kubernetes commands run through cli.Run, by name.
var servers = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

// commands are every name kubeplane answers to, with upstream's main for it.
var commands = map[string]func(){
	"etcd":    func() { etcdmain.Main(os.Args) },
	"kubectl": runKubectl,
	"kwok":    runKwok,
}

func init() {
	for name, newCommand := range servers {
		commands[name] = func() { os.Exit(cli.Run(newCommand())) }
	}
}

func main() {
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	run, ok := commands[name]
	if !ok {
		names := slices.Sorted(maps.Keys(commands))
		fmt.Fprintf(os.Stderr, "kubeplane: run it as one of %s (a link of that name), not %q\n", strings.Join(names, ", "), name)
		os.Exit(2)
	}
	run()
}

// runKubectl is cmd/kubectl's main.
func runKubectl() {
	logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := kubectl.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err)
	}
}
