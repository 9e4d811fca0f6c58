package plugin

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

func newFleetCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "fleet [LAYER...]",
		Short: "Show placed AddonsLayers on their clusters: one row per cluster, one column per layer, then each layer's rollout",
		Example: `  kubectl kraan fleet
  kubectl kraan fleet base apps`,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.connect()
			if err != nil {
				return err
			}
			list := &kraanv1.AddonsLayerList{}
			if err := s.client.List(cmd.Context(), list); err != nil {
				return fmt.Errorf("listing layers: %w", err)
			}
			return printFleet(cmd.Context(), o.streams.Out, placedLayers(list.Items, args), o.colored())
		},
	}
}

// placedLayers are the layers placed on clusters, those named if any.
func placedLayers(all []kraanv1.AddonsLayer, names []string) []kraanv1.AddonsLayer {
	var out []kraanv1.AddonsLayer
	for _, l := range all {
		placed := l.Spec.Placement != nil || len(l.Status.Clusters) > 0
		if placed && (len(names) == 0 || slices.Contains(names, l.Name)) {
			out = append(out, l)
		}
	}
	return out
}

// printFleet prints the layer × cluster matrix, each cell the version the
// cluster runs and its state, then one line per layer's rollout.
func printFleet(_ context.Context, out io.Writer, layers []kraanv1.AddonsLayer, color bool) error {
	if len(layers) == 0 {
		_, err := fmt.Fprintln(out, "No AddonsLayer is placed on clusters (spec.placement).")
		return err
	}
	var clusters []string
	for _, l := range layers {
		for _, e := range l.Status.Clusters {
			if !slices.Contains(clusters, e.Cluster) {
				clusters = append(clusters, e.Cluster)
			}
		}
	}
	slices.Sort(clusters)
	matrix := &table{header: []string{"CLUSTER"}, color: color}
	for _, l := range layers {
		matrix.header = append(matrix.header, l.Name)
	}
	for _, c := range clusters {
		row := []cell{text(c)}
		for _, l := range layers {
			row = append(row, fleetCell(l, c))
		}
		matrix.add(row...)
	}
	matrix.write(out, true)
	fmt.Fprintln(out)
	rollouts := &table{header: []string{"LAYER", versionColumn, "ROLLOUT", "WAVE", messageColumn}, color: color}
	for _, l := range layers {
		r := kraanv1.RolloutStatus{}
		if l.Status.Rollout != nil {
			r = *l.Status.Rollout
		}
		rollouts.add(text(l.Name), text(l.Spec.Version), rolloutCell(r.Phase), text(r.Wave), text(oneLine(r.Message)))
	}
	rollouts.write(out, true)
	return nil
}

// fleetCell is what layer l runs on cluster: "v2 Deployed", "v1→v2 Applying", "-" when not placed there.
func fleetCell(l kraanv1.AddonsLayer, cluster string) cell {
	i := slices.IndexFunc(l.Status.Clusters, func(e kraanv1.LayerClusterStatus) bool { return e.Cluster == cluster })
	if i < 0 {
		return text("-")
	}
	e := l.Status.Clusters[i]
	version := e.DeployedVersion
	if e.Version != "" && e.Version != e.DeployedVersion && e.State != kraanv1.WaitingState && e.State != kraanv1.UnreachableState {
		version = e.DeployedVersion + "→" + e.Version
		if e.DeployedVersion == "" {
			version = e.Version
		}
	}
	c := cell{text: version + " " + e.State, tone: toneBusy}
	switch e.State {
	case kraanv1.DeployedState:
		c.tone = toneGood
	case kraanv1.FailedState, kraanv1.UnreachableState:
		c.tone = toneBad
	}
	return c
}

func rolloutCell(phase string) cell {
	c := cell{text: phase, tone: toneBusy}
	switch phase {
	case kraanv1.RolloutComplete:
		c.tone = toneGood
	case kraanv1.RolloutHalted, kraanv1.RolloutRolledBack:
		c.tone = toneBad
	case "":
		c.text, c.tone = "-", toneNone
	}
	return c
}
