package plugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/internal/plugin/graph"
)

func newGraphCommand(o *options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Draw the dependency graph of all layers and HelmReleases, coloured by state (DOT, SVG or PNG)",
		Example: `  kubectl kraan graph | dot -Tsvg > graph.svg
  kubectl kraan graph -o svg > graph.svg
  kubectl kraan graph -o png > graph.png`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := o.connect()
			if err != nil {
				return err
			}
			g, err := clusterGraph(cmd.Context(), s)
			if err != nil {
				return err
			}
			switch output {
			case "dot":
				return g.DOT(o.streams.Out)
			case "svg":
				return g.Render(cmd.Context(), graph.SVG, o.streams.Out)
			case "png":
				return g.Render(cmd.Context(), graph.PNG, o.streams.Out)
			}
			return fmt.Errorf("unknown output format %q: use dot, svg or png", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "dot", "Output format: dot, svg or png.")
	return cmd
}

// clusterGraph reads every layer and HelmRelease.
func clusterGraph(ctx context.Context, s *session) (*graph.Graph, error) {
	layers := &kraanv1.AddonsLayerList{}
	if err := s.client.List(ctx, layers); err != nil {
		return nil, fmt.Errorf("listing layers: %w", err)
	}
	releases := &kraanv1.HelmReleaseList{}
	if err := s.client.List(ctx, releases); err != nil {
		return nil, fmt.Errorf("listing HelmReleases: %w", err)
	}
	return Graph(layers.Items, releases.Items), nil
}

// Graph is the dependency graph of layers (spec.prereqs.dependsOn) and
// HelmReleases (spec.dependsOn), each release drawn inside the layer that
// applied it.
func Graph(layers []kraanv1.AddonsLayer, releases []kraanv1.HelmRelease) *graph.Graph {
	g := &graph.Graph{}
	for i := range layers {
		l := &layers[i]
		st := layerState(l)
		n := graph.Node{ID: "layer/" + l.Name, Label: l.Name + "\n" + l.Spec.Version + " " + st.word, Tone: graphTone(st.tone),
			Group: "layer/" + l.Name}
		for _, d := range l.Spec.Prereqs.DependsOn {
			name, _, _ := strings.Cut(d, "@")
			n.DependsOn = append(n.DependsOn, "layer/"+strings.TrimSpace(name))
		}
		g.Nodes = append(g.Nodes, n)
	}
	for i := range releases {
		hr := &releases[i]
		st := releaseState(hr)
		n := graph.Node{ID: "helmrelease/" + hr.Namespace + "/" + hr.Name,
			Label: hr.Namespace + "/" + hr.Name + "\n" + st.word, Tone: graphTone(st.tone)}
		if l := hr.Labels[manifest.LayerLabel]; l != "" {
			n.Group = "layer/" + l
		}
		for _, d := range hr.Spec.DependsOn {
			ns := d.Namespace
			if ns == "" {
				ns = hr.Namespace
			}
			n.DependsOn = append(n.DependsOn, "helmrelease/"+ns+"/"+d.Name)
		}
		g.Nodes = append(g.Nodes, n)
	}
	return g
}

func graphTone(t tone) graph.Tone {
	switch t {
	case toneGood:
		return graph.Good
	case toneBad:
		return graph.Bad
	case toneBusy:
		return graph.Busy
	}
	return graph.Unknown
}
