// Command kubectl-kraan is the kubectl plugin of kraan-operator: `kubectl
// kraan get|tree|graph|diff|trace|reconcile|suspend|resume|events|uninstall`. See
// docs/kubectl-plugin.md; the commands live in internal/plugin.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kraan-io/kraan-operator/internal/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := plugin.Run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
