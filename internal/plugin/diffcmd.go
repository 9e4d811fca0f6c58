package plugin

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/layerspec"
	"github.com/kraan-io/kraan-operator/internal/plugin/diff"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// releaseDiffManager is the field manager of the dry runs of a release's
// objects: Helm's own manager is the name of whichever binary ran it.
const releaseDiffManager = "kubectl-kraan"

type diffOptions struct {
	*options
	local           string
	sourceNamespace string
	artifactHost    string
}

func newDiffCommand(o *options) *cobra.Command {
	d := &diffOptions{options: o}
	cmd := &cobra.Command{
		Use:   "diff (layer|helmrelease) NAME",
		Short: "Show what the operator would change: live objects against a server-side dry run of what it would apply",
		Long: `Render what the operator would apply, with the operator's own code, from the
source's current artifact (or --local DIR), values and valuesFrom; apply it as a
server-side dry run; and print a unified diff of live against desired for every
object, including the objects that would be pruned. Secret data is masked.

Exit code: 0 no difference, 1 differences, 2 or more an error.`,
		Example: `  kubectl kraan diff layer apps
  kubectl kraan diff layer apps --local ./addons/apps
  kubectl kraan diff helmrelease -n platform ingress
  kubectl kraan diff helmrelease -n platform ingress --local ./charts/ingress`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case isLayerKind(args[0]):
				return d.layer(cmd.Context(), args[1])
			case isReleaseKind(args[0]):
				return d.release(cmd.Context(), args[1])
			}
			return fmt.Errorf("unknown kind %q: use layer or helmrelease", args[0])
		},
	}
	cmd.Flags().StringVar(&d.local, "local", "", "Diff this directory (a working copy of the layer's directory, or of the chart) instead of the source's artifact.")
	cmd.Flags().StringVar(&d.sourceNamespace, "default-source-namespace", "",
		"The namespace of a layer's source when spec.source.namespace is empty; by default the running operator's --default-source-namespace (or its namespace), flux-system when no operator is found.")
	cmd.Flags().StringVar(&d.artifactHost, "artifact-host", "",
		"Fetch artifacts from this host:port (a port-forward to source-controller) instead of through the API server's service proxy.")
	return cmd
}

// layer diffs one AddonsLayer.
func (d *diffOptions) layer(ctx context.Context, name string) error {
	s, err := d.connect()
	if err != nil {
		return err
	}
	layer := &kraanv1.AddonsLayer{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: name}, layer); err != nil {
		return getError(layerKind, "", name, err)
	}
	rendered, err := d.renderLayer(ctx, s, layer)
	if err != nil {
		return fmt.Errorf("layer %s: %w", name, err)
	}
	changes, err := diff.Compare(ctx, s.client, rendered.All(), inventoryObjects(layer), diff.Options{
		FieldManager: apply.FieldManager,
		DeleteNote:   "no longer in layer " + name + ": released, and pruned after spec.interval unless another layer adopts it",
	})
	if err != nil {
		return rendered.Redactor.Error(fmt.Errorf("layer %s: %w", name, err))
	}
	return d.report(changes)
}

func (d *diffOptions) renderLayer(ctx context.Context, s *session, layer *kraanv1.AddonsLayer) (*layerspec.Rendered, error) {
	if d.local != "" {
		return layerspec.RenderLayerDir(layer, d.local)
	}
	dir, err := os.MkdirTemp("", "kubectl-kraan-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	store, err := source.New(dir, source.Options{HostOverride: d.artifactHost, HTTPClient: artifactClient(s.config)})
	if err != nil {
		return nil, err
	}
	return layerspec.RenderLayer(ctx, s.client, store, layer, defaultSourceNamespace(ctx, s, d.sourceNamespace))
}

// inventoryObjects are the objects the layer applied, from its status. Entries
// Kraan wrote before the operator took the layer over are not the layer's.
func inventoryObjects(layer *kraanv1.AddonsLayer) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, 0, len(layer.Status.Resources))
	for _, r := range layer.Status.Resources {
		if r.WrittenByKraan() {
			continue
		}
		objs = append(objs, apply.RefOfResource(r).Object())
	}
	return objs
}

// release diffs one HelmRelease.
func (d *diffOptions) release(ctx context.Context, name string) error {
	s, err := d.connect()
	if err != nil {
		return err
	}
	hr := &kraanv1.HelmRelease{}
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, hr); err != nil {
		return getError(releaseKind, s.namespace, name, err)
	}
	engine, err := helm.NewEngine(s.config)
	if err != nil {
		return err
	}
	charts, cleanup, err := d.charts(s)
	if err != nil {
		return err
	}
	defer cleanup()
	p, err := releasespec.PreviewRelease(ctx, engine, s.client, charts, hr)
	if err != nil {
		return err
	}
	changes, err := diff.Compare(ctx, s.client, p.Desired, p.Current, diff.Options{
		FieldManager: releaseDiffManager,
		DeleteNote:   "no longer rendered by the chart: the upgrade deletes it",
	})
	if err != nil {
		return p.Redactor.Error(fmt.Errorf("HelmRelease %s/%s: %w", hr.Namespace, hr.Name, err))
	}
	if diff.Changed(changes) {
		fmt.Fprintf(d.streams.Out, "# HelmRelease %s/%s: release %s revision %d (%s) -> chart version %s\n",
			hr.Namespace, hr.Name, p.Target.ReleaseName, p.CurrentRevision, orNone(p.CurrentChart), p.ChartVersion)
	}
	return d.report(changes)
}

func orNone(s string) string {
	if s == "" {
		return "not installed"
	}
	return s
}

// charts is where the release's chart comes from: --local, or its source
// as the operator reads it.
func (d *diffOptions) charts(s *session) (releasespec.ChartGetter, func(), error) {
	if d.local != "" {
		return localChart(d.local), func() {}, nil
	}
	dir, err := os.MkdirTemp("", "kubectl-kraan-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	store, err := source.New(dir, source.Options{HostOverride: d.artifactHost, HTTPClient: artifactClient(s.config)})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	// The operator's chart getter: the same fetcher and artifact store it runs with.
	return &releasespec.SourceCharts{Reader: s.client, Fetcher: chart.NewFetcher(chart.Options{}), Artifacts: store}, cleanup, nil
}

// localChart gets the chart from a directory, whatever the release's source.
type localChart string

func (l localChart) GetChart(_ context.Context, _ *kraanv1.HelmRelease) (*releasespec.SourcedChart, error) {
	c, err := helm.LoadChart(string(l))
	if err != nil {
		return nil, fmt.Errorf("loading the chart in %s: %w", string(l), err)
	}
	return &releasespec.SourcedChart{Chart: c, Digest: helm.ChartDigest(c), SourceRevision: "local:" + string(l)}, nil
}

// report prints the changes and returns errDifferent when there are any.
func (d *diffOptions) report(changes []diff.Change) error {
	if err := diff.Write(d.streams.Out, changes, d.colored()); err != nil {
		return err
	}
	if diff.Changed(changes) {
		return errDifferent
	}
	return nil
}
