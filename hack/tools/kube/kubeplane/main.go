// Command kubeplane is kube-apiserver, kube-controller-manager,
// kube-scheduler and kubectl in one binary, chosen by the name it is run as
// (the tool cache links the four names to it), the way hyperkube was.
//
// Why one binary: on a fresh 2-core machine most of a cold `make demo` went
// into building the control plane, and a quarter of that into linking four
// binaries of 100 MB or more that share nine tenths of their packages. One
// link of the union costs about what one of them did. Each command is
// upstream's own main, called as upstream calls it.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	_ "time/tzdata" // for timeZone support in CronJob

	"github.com/spf13/cobra"
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

// servers are the commands run through cli.Run, by name.
var servers = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func main() {
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	if name == "kubectl" {
		runKubectl()
		return
	}
	newCommand, ok := servers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "kubeplane: run it as kube-apiserver, kube-controller-manager, kube-scheduler or kubectl (a link of that name), not %q\n", name)
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}

// runKubectl is cmd/kubectl's main.
func runKubectl() {
	logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := kubectl.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err)
	}
}
