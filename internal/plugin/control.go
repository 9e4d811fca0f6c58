package plugin

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// requestedAtAnnotation asks the operator for a reconcile now, as
// `flux reconcile` does.
const requestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"

// pollInterval is how often reconcile looks at the object while it waits.
const pollInterval = 500 * time.Millisecond

func newReconcileCommand(o *options) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "reconcile (layer|helmrelease) NAME",
		Short: "Ask the operator to reconcile now, and wait until Ready or a failure",
		Example: `  kubectl kraan reconcile layer apps
  kubectl kraan reconcile helmrelease -n apps shop --timeout 10m`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.connect()
			if err != nil {
				return err
			}
			obj, err := objectOf(s, args[0], args[1])
			if err != nil {
				return err
			}
			token := strconv.FormatInt(time.Now().UnixNano(), 10)
			if err := patchObject(cmd.Context(), s, obj, func() {
				ann := obj.GetAnnotations()
				if ann == nil {
					ann = map[string]string{}
				}
				ann[requestedAtAnnotation] = token
				obj.SetAnnotations(ann)
			}); err != nil {
				return err
			}
			fmt.Fprintf(o.streams.ErrOut, "► asked for a reconcile of %s\n", describeObject(obj))
			return o.waitReady(cmd.Context(), s, obj, token, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "How long to wait for Ready.")
	return cmd
}

func newSuspendCommand(o *options, suspend bool) *cobra.Command {
	verb, short := "resume", "Resume a layer (spec.hold: false) or a HelmRelease (spec.suspend: false)"
	if suspend {
		verb, short = "suspend", "Suspend a layer (spec.hold: true) or a HelmRelease (spec.suspend: true)"
	}
	return &cobra.Command{
		Use:   verb + " (layer|helmrelease) NAME",
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.connect()
			if err != nil {
				return err
			}
			obj, err := objectOf(s, args[0], args[1])
			if err != nil {
				return err
			}
			if err := patchObject(cmd.Context(), s, obj, func() {
				switch x := obj.(type) {
				case *kraanv1.AddonsLayer:
					x.Spec.Hold = suspend
				case *kraanv1.HelmRelease:
					x.Spec.Suspend = suspend
				}
			}); err != nil {
				return err
			}
			fmt.Fprintf(o.streams.Out, "✔ %s %sed\n", describeObject(obj), map[bool]string{true: "suspend", false: "resum"}[suspend])
			return nil
		},
	}
}

// objectOf is an empty layer or HelmRelease named by the arguments.
func objectOf(s *session, kind, name string) (client.Object, error) {
	switch {
	case isLayerKind(kind):
		l := &kraanv1.AddonsLayer{}
		l.Name = name
		return l, nil
	case isReleaseKind(kind):
		hr := &kraanv1.HelmRelease{}
		hr.Namespace, hr.Name = s.namespace, name
		return hr, nil
	}
	return nil, fmt.Errorf("unknown kind %q: use layer or helmrelease", kind)
}

func describeObject(obj client.Object) string {
	if _, ok := obj.(*kraanv1.AddonsLayer); ok {
		return "AddonsLayer " + obj.GetName()
	}
	return "HelmRelease " + obj.GetNamespace() + "/" + obj.GetName()
}

// patchObject reads obj, changes it and writes the change as a merge patch.
func patchObject(ctx context.Context, s *session, obj client.Object, change func()) error {
	kind := layerKind
	if _, ok := obj.(*kraanv1.HelmRelease); ok {
		kind = releaseKind
	}
	if err := s.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return getError(kind, obj.GetNamespace(), obj.GetName(), err)
	}
	base := obj.DeepCopyObject().(client.Object)
	change()
	if err := s.client.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("updating %s: %w", describeObject(obj), err)
	}
	return nil
}

// waitReady polls until the object is Ready at its generation (and, for a
// HelmRelease, has handled the request token), printing a progress line
// whenever its message changes; a Failed or Stalled object ends the wait
// with its message.
func (o *options) waitReady(ctx context.Context, s *session, obj client.Object, token string, timeout time.Duration) error {
	last := ""
	var final error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		st, handled := progressOf(obj, token)
		if st.message != last && st.message != "" {
			fmt.Fprintf(o.streams.ErrOut, "◎ %s\n", st.message)
			last = st.message
		}
		switch {
		case !handled:
			return false, nil
		case st.tone == toneGood:
			fmt.Fprintf(o.streams.Out, "✔ %s is %s\n", describeObject(obj), st.word)
			return true, nil
		case st.tone == toneBad:
			final = fmt.Errorf("%s is %s: %s", describeObject(obj), st.word, st.message)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be Ready (--timeout %s): last state: %s", describeObject(obj), timeout, orDash(last))
	}
	return final
}

// progressOf is the object's state and whether the reconcile asked for has
// been seen: a HelmRelease records the token it handled; a layer has no such
// field, so its state at its current generation counts.
func progressOf(obj client.Object, token string) (state, bool) {
	switch x := obj.(type) {
	case *kraanv1.HelmRelease:
		return releaseState(x), x.Status.LastHandledReconcileAt == token
	case *kraanv1.AddonsLayer:
		st := layerState(x)
		ready := apimeta.FindStatusCondition(x.Status.Conditions, kraanv1.ReadyCondition)
		handled := x.Status.ObservedGeneration == x.Generation && ready != nil
		if ready != nil && ready.Status == metav1.ConditionTrue {
			st.tone = toneGood
		}
		return st, handled
	}
	return state{}, true
}
