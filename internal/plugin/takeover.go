package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/layer"
)

// takeOverOptions are the flags of `kubectl kraan takeover`.
type takeOverOptions struct {
	*options
	all     bool
	force   bool
	dryRun  bool
	wait    bool
	timeout time.Duration
}

// previousControllers are the images of the controllers the operator takes
// over from: while one runs, a take-over would give a layer or a Helm release
// two owners.
var previousControllers = []string{"kraan-controller", "helm-controller"}

func newTakeOverCommand(o *options) *cobra.Command {
	to := &takeOverOptions{options: o}
	cmd := &cobra.Command{
		Use:   "takeover [LAYER...]",
		Short: "Hand the AddonsLayers Kraan's controller left behind to the operator, dependencies first",
		Long: `Hand AddonsLayers whose status Kraan's controller wrote to kraan-operator.

Until a layer is handed over the operator writes nothing for it: not to the
layer, not to what it applied, and it creates no HelmRelease. This command:

  1. refuses while a Deployment running Kraan's controller or Flux
     helm-controller (images ` + strings.Join(previousControllers, ", ") + `) has a replica: scale them to 0 first;
  2. orders the layers dependencies first (prereqs.dependsOn);
  3. suspends the Flux HelmReleases each layer's Kraan status lists, so that
     no release has two owners (a kraan.io HelmRelease waits while a Flux one
     that is not suspended manages its release), should helm-controller start again;
  4. annotates each ` + kraanv1.TakeOverAnnotation + `=<now>, and with --wait (the default) waits
     until the operator has it Ready before handing over the layers that depend on it.

The operator then adopts every Helm release the layer's HelmReleases name
(no new revision when chart, values and objects are unchanged) and applies the
layer's objects in place. See docs/migrating-from-kraan.md.`,
		Example: `  kubectl kraan takeover --all --dry-run
  kubectl kraan takeover --all
  kubectl kraan takeover bootstrap base`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if to.all == (len(args) > 0) {
				return errors.New("name the layers to take over, or pass --all (not both)")
			}
			return to.run(cmd.Context(), args)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&to.all, "all", false, "Take over every layer whose status is still Kraan's.")
	f.BoolVar(&to.force, "force", false, "Take over even while Kraan's controller or helm-controller runs (two owners: only when they no longer act on the cluster).")
	f.BoolVar(&to.dryRun, "dry-run", false, "Print the order the layers would be taken over in; change nothing.")
	f.BoolVar(&to.wait, "wait", true, "Wait until each layer is Ready before taking over the layers that depend on it.")
	f.DurationVar(&to.timeout, "timeout", 10*time.Minute, "How long to wait for each layer to be Ready.")
	return cmd
}

func (to *takeOverOptions) run(ctx context.Context, names []string) error {
	s, err := to.connect()
	if err != nil {
		return err
	}
	if !to.force {
		if err := refuseWhileRunning(ctx, s, to.streams.ErrOut, to.timeout); err != nil {
			return err
		}
	}
	layers, err := layersToTakeOver(ctx, s, names, to.all)
	if err != nil {
		return err
	}
	if len(layers) == 0 {
		fmt.Fprintln(to.streams.Out, "✔ no AddonsLayer awaits a take-over")
		return nil
	}
	for _, l := range layers {
		if err := to.suspendFluxReleases(ctx, s, l); err != nil {
			return err
		}
		if to.dryRun {
			fmt.Fprintf(to.streams.Out, "would take over AddonsLayer %s\n", l.Name)
			continue
		}
		at := time.Now().UTC().Format(time.RFC3339)
		if err := patchObject(ctx, s, l, func() { setAnnotation(l, kraanv1.TakeOverAnnotation, at) }); err != nil {
			return err
		}
		fmt.Fprintf(to.streams.ErrOut, "► took over AddonsLayer %s\n", l.Name)
		if to.wait {
			if err := to.waitReady(ctx, s, l, "", to.timeout); err != nil {
				return err
			}
		}
	}
	return nil
}

// kraanFluxReleaseKind is how Kraan's controller names the kind of a Flux
// HelmRelease in a layer's status.resources.
const kraanFluxReleaseKind = "helmreleases.helm.toolkit.fluxcd.io"

// suspendFluxReleases sets spec.suspend on each Flux HelmRelease l's Kraan
// status lists (a dry run says which it would). One already gone, or a
// cluster without Flux's CRD, is nothing to suspend.
func (to *takeOverOptions) suspendFluxReleases(ctx context.Context, s *session, l *kraanv1.AddonsLayer) error {
	for _, r := range l.Status.Resources {
		if r.Kind != kraanFluxReleaseKind && (r.Kind != "HelmRelease" || !strings.HasPrefix(r.APIVersion, "helm.toolkit.fluxcd.io/")) {
			continue
		}
		if to.dryRun {
			fmt.Fprintf(to.streams.Out, "would suspend Flux HelmRelease %s/%s\n", r.Namespace, r.Name)
			continue
		}
		hr := &unstructured.Unstructured{}
		hr.SetAPIVersion("helm.toolkit.fluxcd.io/v2")
		hr.SetKind("HelmRelease")
		hr.SetNamespace(r.Namespace)
		hr.SetName(r.Name)
		err := s.client.Patch(ctx, hr, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			continue
		case err != nil:
			return fmt.Errorf("suspending Flux HelmRelease %s/%s of layer %s: %w", r.Namespace, r.Name, l.Name, err)
		}
		fmt.Fprintf(to.streams.ErrOut, "► suspended Flux HelmRelease %s/%s\n", r.Namespace, r.Name)
	}
	return nil
}

func setAnnotation(obj client.Object, key, value string) {
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[key] = value
	obj.SetAnnotations(ann)
}

// refuseWhileRunning fails when a Deployment of a controller the operator
// takes over from has replicas, naming each and the command that stops it.
// One scaled to 0 whose pods are still stopping is waited for, up to
// timeout: right after `kubectl scale … --replicas=0` they are, and the
// guide runs the take-over next.
func refuseWhileRunning(ctx context.Context, s *session, out io.Writer, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	announced := false
	for {
		running, stopping, err := previousControllersRunning(ctx, s)
		if err != nil {
			return err
		}
		if len(running) > 0 {
			return fmt.Errorf("kraan-controller or helm-controller still runs and would act on the layers taken over: stop it first (%s), or pass --force",
				strings.Join(running, "; "))
		}
		if len(stopping) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the pods of %s, scaled to 0, still run after %v: wait until they are gone, or pass --force",
				strings.Join(stopping, ", "), timeout)
		}
		if !announced {
			fmt.Fprintf(out, "◎ waiting for the pods of %s to stop\n", strings.Join(stopping, ", "))
			announced = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// previousControllersRunning lists the Deployments of controllers the
// operator takes over from: running, as the commands that stop them, and
// stopping (scaled to 0, pods left), as namespace/name.
func previousControllersRunning(ctx context.Context, s *session) (running, stopping []string, err error) {
	deployments := &appsv1.DeploymentList{}
	if err := s.client.List(ctx, deployments); err != nil {
		return nil, nil, fmt.Errorf("listing Deployments to check that Kraan and helm-controller are stopped: %w", err)
	}
	for _, d := range deployments.Items {
		if !runsPreviousController(&d) {
			continue
		}
		switch {
		case d.Spec.Replicas == nil || *d.Spec.Replicas > 0:
			running = append(running, fmt.Sprintf("kubectl scale deployment %s -n %s --replicas=0", d.Name, d.Namespace))
		case d.Status.Replicas > 0:
			stopping = append(stopping, d.Namespace+"/"+d.Name)
		}
	}
	slices.Sort(running)
	slices.Sort(stopping)
	return running, stopping, nil
}

// runsPreviousController says whether a container of d runs one of
// previousControllers: the last path element of its image, without tag or
// digest.
func runsPreviousController(d *appsv1.Deployment) bool {
	for _, c := range d.Spec.Template.Spec.Containers {
		image, _, _ := strings.Cut(c.Image, "@")
		image = path.Base(image)
		if i := strings.LastIndexByte(image, ':'); i >= 0 {
			image = image[:i]
		}
		if slices.Contains(previousControllers, image) {
			return true
		}
	}
	return false
}

// layersToTakeOver returns the named layers (every layer that awaits a
// take-over with all), dependencies first.
func layersToTakeOver(ctx context.Context, s *session, names []string, all bool) ([]*kraanv1.AddonsLayer, error) {
	list := &kraanv1.AddonsLayerList{}
	if err := s.client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing AddonsLayers: %w", err)
	}
	byName := map[string]*kraanv1.AddonsLayer{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	var chosen []*kraanv1.AddonsLayer
	if all {
		for _, l := range byName {
			if l.AwaitsTakeOver() {
				chosen = append(chosen, l)
			}
		}
	}
	for _, name := range names {
		l, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("AddonsLayer %s not found", name)
		}
		chosen = append(chosen, l)
	}
	return dependenciesFirst(chosen), nil
}

// dependenciesFirst orders layers so that each comes after the layers of the
// list it depends on; otherwise by name. Dependencies outside the list, and
// the layers of a cycle (which the operator reports), do not hold a layer back.
func dependenciesFirst(layers []*kraanv1.AddonsLayer) []*kraanv1.AddonsLayer {
	slices.SortFunc(layers, func(a, b *kraanv1.AddonsLayer) int { return strings.Compare(a.Name, b.Name) })
	byName := map[string]*kraanv1.AddonsLayer{}
	for _, l := range layers {
		byName[l.Name] = l
	}
	placed, visiting := map[string]bool{}, map[string]bool{}
	out := make([]*kraanv1.AddonsLayer, 0, len(layers))
	var place func(l *kraanv1.AddonsLayer)
	place = func(l *kraanv1.AddonsLayer) {
		if placed[l.Name] || visiting[l.Name] {
			return
		}
		visiting[l.Name] = true
		deps, _ := layer.ParseDependencies(l.Spec.Prereqs.DependsOn)
		for _, d := range deps {
			if dep, ok := byName[d.Name]; ok {
				place(dep)
			}
		}
		placed[l.Name] = true
		out = append(out, l)
	}
	for _, l := range layers {
		place(l)
	}
	return out
}
