package helm

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// fluxOrigin is what Flux helm-controller's origin-labels post-renderer does
// to every object of a release of the HelmRelease demo/app.
var fluxOrigin = &commonMetadataPostRenderer{&kraanv1.CommonMetadata{Labels: map[string]string{
	"helm.toolkit.fluxcd.io/name": "app", "helm.toolkit.fluxcd.io/namespace": "demo",
}}}

// TestEngine_Run_adoptsReleasesOfOtherHelmClients: a revision made by Flux
// helm-controller (its origin labels on every object) or the helm CLI
// carries none of the engine's labels. When it deploys what the spec asks
// for, the engine records its labels on that revision instead of upgrading;
// when anything differs (here the post-renderers), it upgrades as before.
// test/e2e/migration does the same with a real helm-controller.
func TestEngine_Run_adoptsReleasesOfOtherHelmClients(t *testing.T) {
	env, engine := startEngine(t)
	commonMetadata := &kraanv1.CommonMetadata{Labels: map[string]string{"team": "platform"}}
	for _, tt := range []struct {
		name string
		// madeWith are the post-renderers the other client ran; spec is
		// the engine's.
		madeWith []postrenderer.PostRenderer
		spec     func(*PostRender)
		// blockScalars renders blockScalarTemplates besides the chart's:
		// Helm 4 with a post-renderer (Flux 2.8+ always has one) ends
		// them differently from the engine (helm/helm#31948).
		blockScalars bool
		want         map[int]string
	}{
		{name: "flux", madeWith: []postrenderer.PostRenderer{fluxOrigin},
			want: map[int]string{1: "deployed"}},
		{name: "flux-common-metadata", madeWith: []postrenderer.PostRenderer{&commonMetadataPostRenderer{commonMetadata}, fluxOrigin},
			spec: func(p *PostRender) { p.CommonMetadata = commonMetadata },
			want: map[int]string{1: "deployed"}},
		{name: "flux-block-scalars", madeWith: []postrenderer.PostRenderer{fluxOrigin}, blockScalars: true,
			want: map[int]string{1: "deployed"}},
		{name: "flux-common-metadata-block-scalars", madeWith: []postrenderer.PostRenderer{&commonMetadataPostRenderer{commonMetadata}, fluxOrigin},
			spec: func(p *PostRender) { p.CommonMetadata = commonMetadata }, blockScalars: true,
			want: map[int]string{1: "deployed"}},
		{name: "helm-cli", want: map[int]string{1: "deployed"}},
		{name: "helm-cli-block-scalars", blockScalars: true, want: map[int]string{1: "deployed"}},
		{name: "other-post-renderers", madeWith: []postrenderer.PostRenderer{fluxOrigin},
			spec: func(p *PostRender) { p.CommonMetadata = commonMetadata },
			want: map[int]string{1: "superseded", 2: "deployed"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			g.Expect(env.Client.Create(ctx, namespaceObject(tt.name))).To(Succeed())
			req := interruptibleRequest(g, tt.name)
			if tt.spec != nil {
				tt.spec(&req.Actions.PostRender)
			}
			if tt.blockScalars {
				req.Desired.Chart = withTemplates(req.Desired.Chart, blockScalarTemplates)
			}
			cfg, err := engine.configFor(req.Target, testLogHandler(t), nil)
			g.Expect(err).NotTo(HaveOccurred())
			installLikeAnotherClient(g, cfg, req, tt.madeWith)

			res, err := engine.Run(ctx, req)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Next).To(Equal(ActionNone))
			stored, err := cfg.Releases.History("app")
			g.Expect(err).NotTo(HaveOccurred())
			history, err := v1Releases(stored)
			g.Expect(err).NotTo(HaveOccurred())
			statuses := map[int]string{}
			for _, rel := range history {
				statuses[rel.Version] = rel.Info.Status.String()
			}
			g.Expect(statuses).To(Equal(tt.want))
			last, err := cfg.Releases.Last("app")
			g.Expect(err).NotTo(HaveOccurred())
			latest, err := v1Release(last)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(req.Desired.Matches(latest)).To(BeTrue(), "the labels recorded in storage")
		})
	}
}

// installLikeAnotherClient installs req's chart and values as Flux or the
// helm CLI would: with their post-renderers and without the engine's labels.
func installLikeAnotherClient(g Gomega, cfg *action.Configuration, req Request, postRenderers []postrenderer.PostRenderer) {
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = req.Target.ReleaseName, req.Target.Namespace
	if len(postRenderers) > 0 {
		install.PostRenderer = chain(postRenderers)
	}
	installed, err := install.Run(req.Desired.Chart, req.Desired.Values)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := v1Release(installed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Labels).NotTo(HaveKey(ChartDigestLabel))
}

// withTemplates is c with files added to its templates; c is left alone.
func withTemplates(c *chart.Chart, files map[string]string) *chart.Chart {
	cp := *c
	cp.Templates = slices.Clone(c.Templates)
	for path, content := range files {
		cp.Templates = append(cp.Templates, &common.File{Name: "templates/" + path, Data: []byte(content)})
	}
	return &cp
}
