package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Output formats of -o where output is data.
const (
	outputTable = "table"
	outputYAML  = "yaml"
	outputJSON  = "json"
)

// kinds the commands take, with kubectl's spellings.
var (
	layerNames   = []string{"layer", "layers", "addonslayer", "addonslayers", "al"}
	releaseNames = []string{"helmrelease", "helmreleases", "hr", "khr"}
)

func isLayerKind(s string) bool   { return contains(layerNames, s) }
func isReleaseKind(s string) bool { return contains(releaseNames, s) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

type getOptions struct {
	*options
	output string
	watch  bool
}

func newGetCommand(o *options) *cobra.Command {
	g := &getOptions{options: o}
	cmd := &cobra.Command{
		Use:   "get (layers|helmreleases) [NAME]",
		Short: "List AddonsLayers or HelmReleases with their status, revision and message",
		Example: `  kubectl kraan get layers
  kubectl kraan get helmreleases -A --watch
  kubectl kraan get layer base -o yaml`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			return g.run(cmd.Context(), args[0], name)
		},
	}
	cmd.Flags().StringVarP(&g.output, "output", "o", outputTable, "Output format: table, yaml or json.")
	cmd.Flags().BoolVarP(&g.watch, "watch", "w", false, "After listing, print every change until interrupted.")
	return cmd
}

func (g *getOptions) run(ctx context.Context, kind, name string) error {
	if g.output != outputTable && g.output != outputYAML && g.output != outputJSON {
		return fmt.Errorf("unknown output format %q: use table, yaml or json", g.output)
	}
	var list client.ObjectList
	switch {
	case isLayerKind(kind):
		list = &kraanv1.AddonsLayerList{}
	case isReleaseKind(kind):
		list = &kraanv1.HelmReleaseList{}
	default:
		return fmt.Errorf("unknown kind %q: use layers or helmreleases", kind)
	}
	s, err := g.connect()
	if err != nil {
		return err
	}
	opts := g.listOptions(s, kind, name)
	if err := s.client.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("listing %s: %w", kind, err)
	}
	if name != "" && itemsOf(list) == 0 {
		return notFound(kind, s.namespaceOf(kind), name)
	}
	if name != "" && g.output != outputTable && !g.watch {
		// One object asked for by name is printed alone, as kubectl does.
		return printData(g.streams.Out, g.output, firstItem(list))
	}
	if err := g.print(list, true); err != nil || !g.watch {
		return err
	}
	return g.follow(ctx, s, list, opts)
}

// namespaceOf is the namespace a name of kind is looked up in ("" for layers).
func (s *session) namespaceOf(kind string) string {
	if isLayerKind(kind) {
		return ""
	}
	return s.namespace
}

func (g *getOptions) listOptions(s *session, kind, name string) []client.ListOption {
	var opts []client.ListOption
	if isReleaseKind(kind) && !g.allNamespaces {
		opts = append(opts, client.InNamespace(s.namespace))
	}
	if name != "" {
		opts = append(opts, client.MatchingFields{"metadata.name": name})
	}
	return opts
}

// notFound is the error for a name that does not exist.
func notFound(kind, namespace, name string) error {
	k := layerKind
	if isReleaseKind(kind) {
		k = releaseKind
		return fmt.Errorf("%s %s/%s not found: check the name and -n (kubectl kraan get helmreleases -A lists them all)", k, namespace, name)
	}
	return fmt.Errorf("%s %s not found: kubectl kraan get layers lists them", k, name)
}

// firstItem is the first object of a non-empty list.
func firstItem(list client.ObjectList) client.Object {
	switch l := list.(type) {
	case *kraanv1.AddonsLayerList:
		return &l.Items[0]
	case *kraanv1.HelmReleaseList:
		return &l.Items[0]
	}
	return nil
}

func itemsOf(list client.ObjectList) int {
	switch l := list.(type) {
	case *kraanv1.AddonsLayerList:
		return len(l.Items)
	case *kraanv1.HelmReleaseList:
		return len(l.Items)
	}
	return 0
}

// print writes the list in the output format; header is for the table.
func (g *getOptions) print(list client.ObjectList, header bool) error {
	switch g.output {
	case outputYAML, outputJSON:
		return printData(g.streams.Out, g.output, list)
	}
	t := &table{color: g.colored()}
	switch l := list.(type) {
	case *kraanv1.AddonsLayerList:
		layerTable(t, l.Items, time.Now())
	case *kraanv1.HelmReleaseList:
		releaseTable(t, l.Items, g.allNamespaces, time.Now())
	}
	t.write(g.streams.Out, header)
	return nil
}

func layerTable(t *table, layers []kraanv1.AddonsLayer, now time.Time) {
	t.header = []string{"NAME", versionColumn, "STATUS", "REVISION", "AGE", messageColumn}
	for i := range layers {
		l := &layers[i]
		st := layerState(l)
		t.add(text(l.Name), text(l.Spec.Version), cell{text: st.word, tone: st.tone}, text(l.Status.Revision),
			text(age(l.CreationTimestamp, now)), text(st.message))
	}
}

func releaseTable(t *table, releases []kraanv1.HelmRelease, allNamespaces bool, now time.Time) {
	t.header = []string{"NAME", "CHART", versionColumn, "STATUS", "REVISION", "AGE", messageColumn}
	if allNamespaces {
		t.header = append([]string{"NAMESPACE"}, t.header...)
	}
	for i := range releases {
		hr := &releases[i]
		st := releaseState(hr)
		rev := ""
		if n := helmRevision(hr); n > 0 {
			rev = strconv.Itoa(n)
		}
		row := []cell{text(hr.Name), text(chartName(hr)), text(hr.Status.LastAttemptedRevision), {text: st.word, tone: st.tone},
			text(rev), text(age(hr.CreationTimestamp, now)), text(st.message)}
		if allNamespaces {
			row = append([]cell{text(hr.Namespace)}, row...)
		}
		t.add(row...)
	}
}

// chartName is the chart's name, or the kind/name of a chartRef.
func chartName(hr *kraanv1.HelmRelease) string {
	switch {
	case hr.Spec.Chart != nil:
		return hr.Spec.Chart.Spec.Chart
	case hr.Spec.ChartRef != nil:
		return hr.Spec.ChartRef.Kind + "/" + hr.Spec.ChartRef.Name
	}
	return ""
}

// printData writes obj as YAML or JSON with its apiVersion and kind.
func printData(out io.Writer, format string, obj runtime.Object) error {
	if err := setKinds(obj); err != nil {
		return err
	}
	if format == outputJSON {
		data, err := json.MarshalIndent(obj, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(data))
		return err
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}

// setKinds fills apiVersion and kind, which typed reads leave empty, on obj
// and the items of a list.
func setKinds(obj runtime.Object) error {
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	switch l := obj.(type) {
	case *kraanv1.AddonsLayerList:
		for i := range l.Items {
			l.Items[i].SetGroupVersionKind(kraanv1.GroupVersion.WithKind(layerKind))
		}
	case *kraanv1.HelmReleaseList:
		for i := range l.Items {
			l.Items[i].SetGroupVersionKind(kraanv1.GroupVersion.WithKind(releaseKind))
		}
	}
	return nil
}

// follow prints each change after the initial list until ctx ends or the
// watch closes.
func (g *getOptions) follow(ctx context.Context, s *session, list client.ObjectList, opts []client.ListOption) error {
	opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
	w, err := s.client.Watch(ctx, list, opts...)
	if err != nil {
		return fmt.Errorf("watching: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			if err := g.printEvent(ev); err != nil {
				return err
			}
		}
	}
}

func (g *getOptions) printEvent(ev watch.Event) error {
	switch obj := ev.Object.(type) {
	case *kraanv1.AddonsLayer:
		return g.print(&kraanv1.AddonsLayerList{Items: []kraanv1.AddonsLayer{*obj}}, false)
	case *kraanv1.HelmRelease:
		return g.print(&kraanv1.HelmReleaseList{Items: []kraanv1.HelmRelease{*obj}}, false)
	}
	if ev.Type == watch.Error {
		return fmt.Errorf("watch: %v", ev.Object)
	}
	return nil
}
