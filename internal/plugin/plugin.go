package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Exit codes, kubectl diff's convention for every command.
const (
	// ExitOK is success, and "no difference" for diff.
	ExitOK = 0
	// ExitDifferent means diff found differences.
	ExitDifferent = 1
	// ExitError is any error: bad input, a cluster that cannot be reached,
	// permission denied.
	ExitError = 2
)

// errDifferent makes Run exit with ExitDifferent without printing anything.
var errDifferent = errors.New("differences found")

// Run executes one command line (args without the program name) and returns
// its exit code. Errors are printed to streams.ErrOut as one line.
func Run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errDifferent):
		return ExitDifferent
	}
	fmt.Fprintln(streams.ErrOut, "Error: "+oneLine(userMessage(err)))
	return ExitError
}

// options are the flags every command shares.
type options struct {
	streams genericiooptions.IOStreams
	config  *genericclioptions.ConfigFlags
	// allNamespaces is -A.
	allNamespaces bool
	// color is --color: auto (when the output is a terminal), always or never.
	color string
}

// NewCommand returns the root command, `kubectl kraan`.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{streams: streams, config: genericclioptions.NewConfigFlags(true)}
	root := &cobra.Command{
		Use:           "kubectl-kraan",
		Short:         "See, preview and operate kraan-operator's AddonsLayers and HelmReleases",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Run as `kubectl kraan`, kubectl shows this name in help.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl kraan"},
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.config.AddFlags(root.PersistentFlags())
	root.PersistentFlags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "List HelmReleases in every namespace.")
	root.PersistentFlags().StringVar(&o.color, "color", "auto", "Colour the status: auto, always or never.")
	root.AddCommand(newGetCommand(o), newTreeCommand(o), newGraphCommand(o), newDiffCommand(o), newTraceCommand(o),
		newReconcileCommand(o), newSuspendCommand(o, true), newSuspendCommand(o, false), newEventsCommand(o),
		newUninstallCommand(o), newTakeOverCommand(o), newFleetCommand(o))
	return root
}

// colored says whether output is coloured.
func (o *options) colored() bool {
	switch o.color {
	case "always":
		return true
	case "never":
		return false
	}
	f, ok := o.streams.Out.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// oneLine joins the lines of a message: an error is one line.
func oneLine(msg string) string {
	fields := strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	return strings.Join(fields, "; ")
}
