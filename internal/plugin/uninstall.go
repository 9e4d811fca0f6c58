package plugin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"
)

// uninstallOptions are the flags of `kubectl kraan uninstall`.
type uninstallOptions struct {
	*options
	// crds also deletes the operator's CRDs; their custom resources are
	// deleted with propagation Orphan first, so what they own stays.
	crds bool
	// deleteNamespace also deletes the namespaces the operator ran in.
	deleteNamespace bool
	// dryRun prints what would be done and changes nothing.
	dryRun bool
	// uninstallReleases is the destructive path: the custom resources are
	// deleted while the operator runs, so their finalizers uninstall every
	// release and prune every layer.
	uninstallReleases bool
	// yes skips the confirmation uninstallReleases asks for.
	yes bool
	// timeout bounds each wait: the operator's pods gone, the custom
	// resources gone.
	timeout time.Duration
}

func newUninstallCommand(o *options) *cobra.Command {
	u := &uninstallOptions{options: o}
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove the operator and keep every release, Helm record and object it manages",
		Long: `Remove kraan-operator and keep what it manages, in this order:

  1. stop the operator: scale its Deployments (label ` + operatorLabel + "=" + operatorName + `)
     to 0 and wait until their pods are gone, so no controller acts on what follows;
  2. remove the operator's finalizers (` + finalizerList() + `) from every
     AddonsLayer, HelmRelease and chart-backed object (Habitat…) of its CRDs;
  3. delete the operator's Deployments, Services, ServiceAccounts, RBAC and webhooks;
  4. with --crds, delete the custom resources with propagation Orphan, then the CRDs;
  5. with --delete-namespace, delete the namespaces the operator ran in.

Every Helm release, its release records and every object a layer applied
stay; installing the operator again adopts them without a new revision.

--uninstall-releases is the destructive path: it deletes every custom resource
while the operator still runs, so each finalizer uninstalls its release and
prunes what its layer applied, then removes the operator as above. It asks
for confirmation unless --yes.

An operator installed by OLM is refused: delete its Subscription and
ClusterServiceVersion first, then run this command to remove the finalizers
(docs/operations.md#removing-the-operator).`,
		Example: `  kubectl kraan uninstall --dry-run
  kubectl kraan uninstall
  kubectl kraan uninstall --crds --delete-namespace
  kubectl kraan uninstall --uninstall-releases --crds    # uninstalls every release`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return u.run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.BoolVar(&u.crds, "crds", false, "Also delete the operator's CRDs (their custom resources are deleted with propagation Orphan first; workloads stay).")
	f.BoolVar(&u.deleteNamespace, "delete-namespace", false,
		"Also delete the namespaces the operator ran in, unless one holds custom resources or Helm release records. The release record key Secret goes with it.")
	f.BoolVar(&u.dryRun, "dry-run", false, "Print what would be done; change nothing.")
	f.BoolVar(&u.uninstallReleases, "uninstall-releases", false,
		"DESTRUCTIVE: delete every custom resource while the operator runs, so every Helm release is uninstalled and every layer pruned, then remove the operator.")
	f.BoolVar(&u.yes, "yes", false, "Do not ask for confirmation of --uninstall-releases.")
	f.DurationVar(&u.timeout, "timeout", 5*time.Minute, "How long each wait may take: the operator's pods gone, custom resources deleted.")
	return cmd
}

// run executes the steps in the order the command's help gives.
func (u *uninstallOptions) run(ctx context.Context) error {
	s, err := u.connect()
	if err != nil {
		return err
	}
	p, err := discover(ctx, s, u.operatorNamespace())
	if err != nil {
		return err
	}
	if err := p.refuseOLM(); err != nil {
		return err
	}
	if u.uninstallReleases {
		if err := u.uninstallEveryRelease(ctx, s, p); err != nil {
			return err
		}
		if p.resources, err = listResources(ctx, s, p.crds); err != nil {
			return err
		}
	}
	steps := []func(context.Context, *session, *plan) error{u.stopOperator, u.removeFinalizers, u.deleteOperatorObjects}
	if u.crds {
		steps = append(steps, u.deleteCRDs)
	}
	if u.deleteNamespace {
		steps = append(steps, u.deleteNamespaces)
	}
	for _, step := range steps {
		if err := step(ctx, s, p); err != nil {
			return err
		}
	}
	u.summarize(p)
	return nil
}

// operatorNamespace is -n when given: the operator is looked for there
// only; otherwise in every namespace.
func (u *uninstallOptions) operatorNamespace() string {
	if u.config.Namespace != nil {
		return *u.config.Namespace
	}
	return ""
}

// uninstallEveryRelease is --uninstall-releases: confirmed, with the
// operator running, it deletes every custom resource and waits until their
// finalizers have uninstalled and pruned everything.
func (u *uninstallOptions) uninstallEveryRelease(ctx context.Context, s *session, p *plan) error {
	if !u.dryRun && !p.operatorRunning() {
		return fmt.Errorf("--uninstall-releases needs the operator running (a ready Deployment labelled %s=%s): without it the deletions would wait on the finalizers forever", operatorLabel, operatorName)
	}
	if err := u.confirm(len(p.resources)); err != nil {
		return err
	}
	u.progress("deleting %d custom resources: the operator uninstalls their releases", len(p.resources))
	for i := range p.resources {
		if err := u.deleteResource(ctx, s, &p.resources[i], false); err != nil {
			return err
		}
	}
	return u.waitResourcesGone(ctx, s, p)
}

// confirm asks for "yes" on standard input, unless --yes or --dry-run.
func (u *uninstallOptions) confirm(count int) error {
	if u.yes || u.dryRun {
		return nil
	}
	fmt.Fprintf(u.streams.Out, "This deletes %d custom resources while the operator runs: every Helm release they manage is uninstalled "+
		"and every object their layers applied is deleted. Type yes to go on: ", count)
	line, err := bufio.NewReader(u.streams.In).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		return errors.Join(errors.New("not confirmed (pass --yes to skip the question): nothing was changed"), ignoreEOF(err))
	}
	return nil
}

// progress prints the step that starts.
func (u *uninstallOptions) progress(format string, args ...any) {
	fmt.Fprintf(u.streams.Out, "► "+format+"\n", args...)
}

// did prints what was done, or would be with --dry-run.
func (u *uninstallOptions) did(format string, args ...any) {
	suffix := ""
	if u.dryRun {
		suffix = " (dry run)"
	}
	fmt.Fprintf(u.streams.Out, "✔ "+format+suffix+"\n", args...)
}

// note prints something the user should know that is not a failure.
func (u *uninstallOptions) note(format string, args ...any) {
	fmt.Fprintf(u.streams.Out, "! "+format+"\n", args...)
}

// summarize ends the output with what stayed.
func (u *uninstallOptions) summarize(p *plan) {
	switch {
	case u.uninstallReleases:
		u.did("kraan-operator removed; its custom resources were deleted and their releases uninstalled")
	case u.crds:
		u.did("kraan-operator and its CRDs removed; every Helm release and every object a layer applied stays")
	default:
		u.did("kraan-operator removed; %d custom resources, every Helm release and every object a layer applied stay", len(p.resources))
	}
}

// poll waits until done returns true, for at most --timeout; what names the
// wait in the error.
func (u *uninstallOptions) poll(ctx context.Context, what string, done func(context.Context) (bool, error)) error {
	if u.dryRun {
		return nil
	}
	if err := wait.PollUntilContextTimeout(ctx, pollInterval, u.timeout, true, done); err != nil {
		return fmt.Errorf("waiting for %s (--timeout %s): %w", what, u.timeout, err)
	}
	return nil
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
