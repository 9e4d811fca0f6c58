package helm

import (
	"bytes"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"
)

// forPostRendering is c as Helm 4 should post-render it: when a
// post-renderer is set, every template file ends with one more newline.
// Without a post-renderer Helm (3 and 4) applies every rendered document
// followed by a newline; with one, Helm 4 re-parses each rendered file
// before post-rendering (helm/helm#31948), and the last document of a file
// misses that newline: a block scalar ending it loses one ("data: |" of a
// file without a final newline becomes "|-", a "|+" keeps one newline
// less), so a configuration file or script would change with the mere
// presence of a post-renderer. c itself is left alone (the operator caches
// it); without a post-renderer c is returned.
func forPostRendering(c *chart.Chart, pr postrenderer.PostRenderer) *chart.Chart {
	if c == nil || pr == nil {
		return c
	}
	return withFinalNewlines(c)
}

func withFinalNewlines(c *chart.Chart) *chart.Chart {
	cp := *c
	cp.Templates = make([]*common.File, len(c.Templates))
	for i, f := range c.Templates {
		cp.Templates[i] = f
		if rendersManifests(f.Name) && len(f.Data) > 0 {
			g := *f
			g.Data = append(bytes.Clone(f.Data), '\n')
			cp.Templates[i] = &g
		}
	}
	deps := make([]*chart.Chart, 0, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		deps = append(deps, withFinalNewlines(d))
	}
	cp.SetDependencies(deps...)
	return &cp
}

// rendersManifests says whether Helm reads a template file's output as
// manifests: not partials (_helpers.tpl) nor NOTES.txt.
func rendersManifests(name string) bool {
	base := path.Base(name)
	return !strings.HasPrefix(base, "_") && base != "NOTES.txt"
}
