package plugin

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

func newEventsCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "events (layer|helmrelease) NAME",
		Short: "Show the events of a layer or HelmRelease and of the objects it manages, merged by time",
		Example: `  kubectl kraan events layer apps
  kubectl kraan events helmrelease -n apps shop`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.connect()
			if err != nil {
				return err
			}
			m, err := newManaged(s)
			if err != nil {
				return err
			}
			var objs []*unstructured.Unstructured
			switch {
			case isLayerKind(args[0]):
				objs, err = m.layerFamily(cmd.Context(), args[1])
			case isReleaseKind(args[0]):
				objs, err = m.releaseFamily(cmd.Context(), client.ObjectKey{Namespace: s.namespace, Name: args[1]})
			default:
				err = fmt.Errorf("unknown kind %q: use layer or helmrelease", args[0])
			}
			if err != nil {
				return err
			}
			events, err := eventsOf(cmd.Context(), s, objs)
			if err != nil {
				return err
			}
			t := &table{color: o.colored(), header: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", messageColumn}}
			now := time.Now()
			for _, e := range events {
				tn := toneNone
				if e.Type == corev1.EventTypeWarning {
					tn = toneBad
				}
				obj := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
				if e.InvolvedObject.Namespace != "" {
					obj = e.InvolvedObject.Kind + "/" + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
				}
				t.add(text(since(now.Sub(eventTime(e)))), cell{text: e.Type, tone: tn}, text(e.Reason), text(obj), text(oneLine(e.Message)))
			}
			t.write(o.streams.Out, true)
			return nil
		},
	}
}

// layerFamily is the layer, its objects, and the objects of its releases.
func (m *managed) layerFamily(ctx context.Context, name string) ([]*unstructured.Unstructured, error) {
	l := &kraanv1.AddonsLayer{}
	if err := m.s.client.Get(ctx, client.ObjectKey{Name: name}, l); err != nil {
		return nil, getError(layerKind, "", name, err)
	}
	self := &unstructured.Unstructured{}
	self.SetGroupVersionKind(kraanv1.GroupVersion.WithKind(layerKind))
	self.SetName(name)
	family := []*unstructured.Unstructured{self}
	for _, obj := range m.layerObjects(l) {
		if obj.GroupVersionKind().Group == kraanv1.GroupVersion.Group && obj.GetKind() == releaseKind {
			objs, err := m.releaseFamily(ctx, client.ObjectKeyFromObject(obj))
			if err != nil {
				return nil, err
			}
			family = append(family, objs...)
			continue
		}
		family = append(family, obj)
	}
	return family, nil
}

// releaseFamily is the HelmRelease and the objects of its newest revision.
func (m *managed) releaseFamily(ctx context.Context, key client.ObjectKey) ([]*unstructured.Unstructured, error) {
	hr := &kraanv1.HelmRelease{}
	if err := m.s.client.Get(ctx, key, hr); err != nil {
		return nil, getError(releaseKind, key.Namespace, key.Name, err)
	}
	self := &unstructured.Unstructured{}
	self.SetGroupVersionKind(kraanv1.GroupVersion.WithKind(releaseKind))
	self.SetNamespace(key.Namespace)
	self.SetName(key.Name)
	p, err := m.releaseObjects(ctx, hr)
	if err != nil {
		return nil, err
	}
	return append([]*unstructured.Unstructured{self}, p.Current...), nil
}

// eventsOf lists the events about objs, oldest first.
func eventsOf(ctx context.Context, s *session, objs []*unstructured.Unstructured) ([]corev1.Event, error) {
	wanted := map[string]bool{}
	namespaces := map[string]bool{}
	for _, o := range objs {
		wanted[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = true
		namespaces[o.GetNamespace()] = true
	}
	var events []corev1.Event
	for ns := range namespaces {
		list := &corev1.EventList{}
		// Events about cluster-scoped objects live in "default".
		if ns == "" {
			ns = "default"
		}
		if err := s.client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing events in %s: %w", ns, err)
		}
		for _, e := range list.Items {
			io := e.InvolvedObject
			if wanted[io.Kind+"/"+io.Namespace+"/"+io.Name] {
				events = append(events, e)
			}
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	return dedupe(events), nil
}

// dedupe drops the second listing of an event read from two namespaces.
func dedupe(events []corev1.Event) []corev1.Event {
	seen := map[string]bool{}
	out := events[:0]
	for _, e := range events {
		if !seen[string(e.UID)] {
			seen[string(e.UID)] = true
			out = append(out, e)
		}
	}
	return out
}

// eventTime is when the event last happened.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	}
	return e.CreationTimestamp.Time
}

func since(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return duration.HumanDuration(d)
}
