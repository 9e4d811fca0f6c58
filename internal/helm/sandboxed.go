package helm

import (
	"context"
	"fmt"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/kraan-io/kraan-operator/internal/helm/sandbox"
)

// RenderInSandbox makes the engine run the templates of every chart it
// installs, upgrades or renders for a comparison in a bounded worker process
// (see package sandbox): a chart's templates can then cost the operator no
// more than limits, and a release over them fails naming the bound. Without
// it (tests of the engine alone) templates run in the process.
func (e *Engine) RenderInSandbox(limits sandbox.Limits) error {
	r, err := sandbox.New(limits)
	if err != nil {
		return err
	}
	e.renderer = r
	return nil
}

// sandboxed returns the chart Helm's action runs instead of c: c's
// templates rendered by the worker, as literal text (sandbox.Literal). The
// record Helm writes keeps c (see originalChart); done forgets the pair.
// values and rel are what the action renders with; cfg's capabilities are
// computed now if it has none, so the action renders with the same.
func (e *Engine) sandboxed(ctx context.Context, cfg *action.Configuration, target Target, c *chart.Chart, values map[string]any,
	rel common.ReleaseOptions) (literal *chart.Chart, done func(), err error) {
	if e.renderer == nil || c == nil {
		return c, func() {}, nil
	}
	caps, err := capabilitiesOf(cfg)
	if err != nil {
		return nil, nil, err
	}
	files, err := e.renderer.Render(ctx, sandbox.Input{Chart: c, Values: values, Release: rel, Capabilities: caps,
		Lookup: lookupThrough(cfg), Tenant: target.tenant()})
	if err != nil {
		return nil, nil, fmt.Errorf("rendering chart %s-%s: %w", c.Name(), c.Metadata.Version, err)
	}
	literal = sandbox.Literal(c, files)
	e.literals.Store(literal, c)
	return literal, func() { e.literals.Delete(literal) }, nil
}

// originalChart is the chart a literal chart the engine made stands for, so
// that a release record keeps the chart as it came; c itself otherwise.
func (e *Engine) originalChart(c *chart.Chart) *chart.Chart {
	if c == nil {
		return nil
	}
	if orig, ok := e.literals.Load(c); ok {
		return orig.(*chart.Chart)
	}
	return c
}

// installRelease is what install renders with: revision 1.
func installRelease(install *action.Install) common.ReleaseOptions {
	return common.ReleaseOptions{Name: install.ReleaseName, Namespace: install.Namespace, Revision: 1, IsInstall: true}
}

// sandboxedUpgrade is sandboxed for upgrade of last (upgradeInputs).
func (e *Engine) sandboxedUpgrade(ctx context.Context, cfg *action.Configuration, upgrade *action.Upgrade, target Target,
	c *chart.Chart, values map[string]any, last *release.Release) (*chart.Chart, func(), error) {
	if e.renderer == nil || c == nil {
		return c, func() {}, nil
	}
	rc, rv, rel, err := upgradeInputs(cfg, upgrade, target.ReleaseName, c, values, last)
	if err != nil {
		return nil, nil, err
	}
	return e.sandboxed(ctx, cfg, target, rc, rv, rel)
}

// upgradeInputs are the chart, values and release options an upgrade of
// last renders with, as Helm's upgrade derives them: the next revision, and
// with ReuseValues the previous values coalesced in (and the chart's own
// values replaced by the previous ones).
func upgradeInputs(cfg *action.Configuration, u *action.Upgrade, name string, c *chart.Chart, values map[string]any,
	last *release.Release) (*chart.Chart, map[string]any, common.ReleaseOptions, error) {
	rel := common.ReleaseOptions{Name: name, Namespace: u.Namespace, Revision: 1, IsUpgrade: true}
	if last == nil {
		return c, values, rel, nil
	}
	rel.Revision = last.Version + 1
	rel.Namespace = last.Namespace
	if !u.ReuseValues || c == nil {
		return c, values, rel, nil
	}
	current := last
	if last.Info == nil || last.Info.Status != rcommon.StatusDeployed {
		if deployed, err := cfg.Releases.Deployed(last.Name); err == nil {
			if d, err := v1Release(deployed); err == nil && d != nil {
				current = d
			}
		}
	}
	rel.Namespace = current.Namespace
	oldValues, err := util.CoalesceValues(current.Chart, current.Config)
	if err != nil {
		return nil, nil, rel, fmt.Errorf("failed to rebuild old values: %w", err)
	}
	withOld := *c
	withOld.Values = oldValues
	return &withOld, util.CoalesceTables(deepCopyValues(values), current.Config), rel, nil
}

// deepCopyValues copies the maps and lists of a values tree, which
// CoalesceTables changes in place.
func deepCopyValues(v map[string]any) map[string]any {
	if v == nil {
		return map[string]any{}
	}
	out := make(map[string]any, len(v))
	for k, e := range v {
		out[k] = deepCopyValue(e)
	}
	return out
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyValues(t)
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopyValue(e)
		}
		return l
	}
	return v
}

// capabilitiesOf are cfg's capabilities, computed as Helm computes them when
// it has none.
func capabilitiesOf(cfg *action.Configuration) (*common.Capabilities, error) {
	if cfg.Capabilities != nil {
		return cfg.Capabilities, nil
	}
	dc, err := cfg.RESTClientGetter.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("could not get Kubernetes discovery client: %w", err)
	}
	dc.Invalidate()
	version, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("could not get server version from Kubernetes: %w", err)
	}
	apiVersions, err := action.GetVersionSet(dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("could not get apiVersions from Kubernetes: %w", err)
	}
	cfg.Capabilities = &common.Capabilities{
		APIVersions: apiVersions,
		KubeVersion: common.KubeVersion{Version: version.GitVersion, Major: version.Major, Minor: version.Minor},
		HelmVersion: common.DefaultCapabilities.HelmVersion,
	}
	return cfg.Capabilities, nil
}

// lookupThrough answers a template's lookup as Helm does, with cfg's
// identity: an object, a list when name is empty, nothing when it does not
// exist.
func lookupThrough(cfg *action.Configuration) sandbox.Lookup {
	return func(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]any, error) {
		config, err := cfg.RESTClientGetter.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		mapper, err := cfg.RESTClientGetter.ToRESTMapper()
		if err != nil {
			return nil, err
		}
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return nil, err
		}
		mapping, err := mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
		if err != nil {
			return nil, fmt.Errorf("unable to get apiresource from unstructured: %s: %w", gv.WithKind(kind), err)
		}
		dyn, err := dynamic.NewForConfig(config)
		if err != nil {
			return nil, err
		}
		var client dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace && namespace != "" {
			client = dyn.Resource(mapping.Resource).Namespace(namespace)
		}
		if name != "" {
			obj, err := client.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return map[string]any{}, nil
			}
			if err != nil {
				return nil, err
			}
			return obj.UnstructuredContent(), nil
		}
		list, err := client.List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return map[string]any{}, nil
		}
		if err != nil {
			return nil, err
		}
		return list.UnstructuredContent(), nil
	}
}
