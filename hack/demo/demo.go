package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/test/env"
)

// fieldOwner is the server-side apply field manager of the AddonsLayers.
const fieldOwner = "kraan-demo"

// demo is one run of the demo on a started environment.
type demo struct {
	env      *env.Env
	out      io.Writer
	root     string // the repository root
	progress *progress
	timeout  time.Duration
}

// publishCharts serves the project's test charts from the Helm repository.
func (d *demo) publishCharts() error {
	d.progress.step("publishing the charts small and realistic in the Helm repository")
	for _, name := range []string{"small", "realistic"} {
		if err := d.env.AddChart(filepath.Join(d.root, "testdata", "charts", name)); err != nil {
			return err
		}
	}
	d.progress.done()
	return nil
}

// rollout commits examples/layers/<version> (with the chart the mgmt layer
// installs from Git), applies its AddonsLayers and shows the table until
// every layer is Deployed at version and every release Ready.
func (d *demo) rollout(ctx context.Context, version, what string) error {
	fmt.Fprintf(d.out, "\n== version %s: %s\n", version, what)
	src := filepath.Join(d.root, "examples", "layers", version)
	d.progress.step("committing examples/layers/" + version + " to the Git repository")
	rev, err := d.env.Commit(ctx, "version "+version, map[string]string{
		".": src, "charts/small": filepath.Join(d.root, "testdata", "charts", "small")})
	if err != nil {
		return err
	}
	// Record from before the layers change, so that no transition is missed.
	recCtx, stopRecording := context.WithCancel(ctx)
	defer stopRecording()
	rec := startOrderRecorder(recCtx, d.env.Client, version, rev, time.Now())
	d.progress.step("applying " + filepath.Join("examples", "layers", version, "layers.yaml"))
	if err := applyFile(ctx, d.env.Client, filepath.Join(src, "layers.yaml")); err != nil {
		return err
	}
	d.progress.done()
	w := newWatcher(d.env.Client, d.out, version, rev)
	if err := w.run(ctx, d.timeout); err != nil {
		return err
	}
	order, err := rec.report()
	if err != nil {
		return err
	}
	fmt.Fprintln(d.out, order)
	return nil
}

// applyFile applies every object of a multi-document YAML file server-side.
func applyFile(ctx context.Context, c client.Client, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 { // an empty document, e.g. after a leading ---
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}

// checkHandOver verifies what version 0.2.0 promises: the release
// monitoring/logging now belongs to the base layer, and it was upgraded in
// place with the new message (Helm revision 2), not uninstalled and installed
// again.
func (d *demo) checkHandOver(ctx context.Context) error {
	hr := &kraanv1.HelmRelease{}
	if err := d.env.Client.Get(ctx, client.ObjectKey{Namespace: "monitoring", Name: "logging"}, hr); err != nil {
		return err
	}
	var problems []string
	if l := hr.Labels[manifest.LayerLabel]; l != "base" {
		problems = append(problems, fmt.Sprintf("it belongs to layer %q, not base", l))
	}
	if hr.Spec.Values == nil || !strings.Contains(string(hr.Spec.Values.Raw), "logging v2") {
		problems = append(problems, "its values do not have the new message")
	}
	if len(hr.Status.History) == 0 || hr.Status.History[0].Version != 2 {
		problems = append(problems, fmt.Sprintf("its Helm history is %v, not one upgrade", historyVersions(hr)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("release monitoring/logging after 0.2.0: %s", strings.Join(problems, "; "))
	}
	fmt.Fprintln(d.out, "monitoring/logging moved from mgmt to base and was upgraded in place (Helm revision 2).")
	return nil
}

// historyVersions lists the Helm revisions of a release, newest first.
func historyVersions(hr *kraanv1.HelmRelease) []string {
	vs := make([]string, 0, len(hr.Status.History))
	for _, s := range hr.Status.History {
		vs = append(vs, fmt.Sprintf("%d:%s", s.Version, s.Status))
	}
	return vs
}
