package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/bench/report"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// appliers is how many clients apply the raw objects in parallel: the
// operator's default --concurrent.
const appliers = 4

// benchFieldManager owns what the raw appliers apply.
const benchFieldManager = "kraan-bench"

// renderReleases renders the test chart "small" with its default values
// once per release name, as `helm template` would (client-only dry run of an
// install), and returns each release's objects in Helm's install order.
func renderReleases(namespace string, names []string) ([][]*unstructured.Unstructured, error) {
	ch, err := loader.Load(chartrepo.ChartDir("small"))
	if err != nil {
		return nil, err
	}
	out := make([][]*unstructured.Unstructured, 0, len(names))
	for _, name := range names {
		install := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
		install.DryRunStrategy = action.DryRunClient
		install.ReleaseName, install.Namespace = name, namespace
		rel, err := install.Run(ch, map[string]any{})
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", name, err)
		}
		objs, err := decodeManifest(rel.(*release.Release).Manifest, namespace)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		out = append(out, objs)
	}
	return out, nil
}

// decodeManifest splits a multi-document manifest into objects in
// namespace.
func decodeManifest(manifest, namespace string) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		u.SetNamespace(namespace)
		objs = append(objs, u)
	}
}

// applyRaw server-side applies the releases' objects into namespace (which
// it creates) with `appliers` parallel loops, each over its share of the
// releases, and returns the time from the first apply until every
// Deployment of the namespace is Available, as seen by a watch started
// before the first apply.
func applyRaw(ctx context.Context, c client.WithWatch, namespace string, releases [][]*unstructured.Unstructured) (report.Raw, error) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return report.Raw{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout(len(releases)))
	defer cancel()
	deployments, applied := 0, 0
	for _, objs := range releases {
		for _, o := range objs {
			applied++
			if o.GetKind() == "Deployment" {
				deployments++
			}
		}
	}
	available := make(chan watchResult, 1)
	progress := &curve{}
	go func() {
		at, err := watchCount(ctx, c, &appsv1.DeploymentList{}, &appsv1.Deployment{}, namespace, nil, progress, isCurrent, deployments)
		available <- watchResult{at, err}
	}()
	start := time.Now()
	if err := applyParallel(ctx, c, releases); err != nil {
		return report.Raw{}, err
	}
	res := <-available
	if res.err != nil {
		return report.Raw{}, fmt.Errorf("waiting for %d Deployments Available in %s: %w", deployments, namespace, res.err)
	}
	return report.Raw{Seconds: res.at.Sub(start).Seconds(), Objects: applied, Appliers: appliers,
		Curve: progress.secondsSince(start)}, nil
}

type watchResult struct {
	at  time.Time
	err error
}

// applyParallel applies each release's objects in order, `appliers`
// loops each over its share of the releases.
func applyParallel(ctx context.Context, c client.Client, releases [][]*unstructured.Unstructured) error {
	return parallel(len(releases), appliers, func(i int) error {
		for _, o := range releases[i] {
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
				client.FieldOwner(benchFieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
		return nil
	})
}

// isCurrent reports whether kstatus calls a Deployment Current: observed at
// its generation, every replica updated, ready and available — what Helm's
// wait and the operator wait for, and stricter than the Available
// condition, which a one-replica Deployment has before its pod runs.
func isCurrent(o client.Object) bool {
	data, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return false
	}
	u := &unstructured.Unstructured{Object: data}
	u.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	res, err := status.Compute(u)
	return err == nil && res.Status == status.CurrentStatus
}
