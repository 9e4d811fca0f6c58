package sandbox

import (
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Literal returns a copy of c whose templates print files, the rendering of
// c by Render: each template of c and of its dependencies becomes a template
// that prints its rendered text verbatim, and one files has no text for (a
// partial, a subchart the values disable) prints nothing. Helm's engine
// renders it in time linear in the text, with nothing of c's templates
// left to run; names, metadata, values, files and schema are c's, so Helm's
// action treats it as c. c is not changed.
func Literal(c *chart.Chart, files map[string]string) *chart.Chart {
	cp := *c
	cp.Templates = make([]*common.File, len(c.Templates))
	prefix := c.ChartFullPath()
	for i, f := range c.Templates {
		g := *f
		g.Data = []byte(literalTemplate(files[path.Join(prefix, f.Name)]))
		cp.Templates[i] = &g
	}
	deps := make([]*chart.Chart, 0, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		deps = append(deps, Literal(d, files))
	}
	cp.SetDependencies(deps...)
	return &cp
}

// literalTemplate is a Go template printing text: raw string actions, with
// each backquote (which ends a raw string) printed by an action of its own.
func literalTemplate(text string) string {
	if text == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(text) + 16)
	for {
		i := strings.IndexByte(text, '`')
		if i < 0 {
			b.WriteString("{{`" + text + "`}}")
			return b.String()
		}
		b.WriteString("{{`" + text[:i] + "`}}{{\"`\"}}")
		text = text[i+1:]
	}
}
