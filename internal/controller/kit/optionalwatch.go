package kit

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kraan-io/kraan-operator/internal/outcome"
)

// OptionalWatch is a watch of a kind whose CRD a cluster may lack: Flux's
// sources, on the many clusters that have no Flux.
type OptionalWatch struct {
	Object     client.Object
	Handler    handler.EventHandler
	Predicates []predicate.Predicate
}

// OptionalWatchInterval is how often the kinds not installed yet are
// looked for.
const OptionalWatchInterval = outcome.KindRecheckInterval

// WatchWhenInstalled starts each watch on c as soon as its kind is
// installed: at once for the kinds the cluster serves, later (looked for
// every OptionalWatchInterval) for the others. A watch of a kind without a
// CRD, given to the controller from the start, keeps it from ever starting
// (it waits for a cache that cannot sync): its objects would get no status
// at all. The objects that need a missing kind say so themselves
// (SourceKindNotInstalled) and are looked at again on their own.
func WatchWhenInstalled(mgr manager.Manager, c controller.Controller, watches []OptionalWatch) error {
	pending := make(map[schema.GroupVersionKind]OptionalWatch, len(watches))
	for _, w := range watches {
		gvk, err := apiutil.GVKForObject(w.Object, mgr.GetScheme())
		if err != nil {
			return fmt.Errorf("watching %T: %w", w.Object, err)
		}
		pending[gvk] = w
	}
	start := func(ctx context.Context) error {
		for gvk, w := range pending {
			_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
			if meta.IsNoMatchError(err) {
				continue
			}
			if err != nil {
				ctrl.LoggerFrom(ctx).V(1).Info("Cannot tell whether a kind is installed", "kind", gvk.String(), "error", err.Error())
				continue
			}
			if err := c.Watch(crsource.Kind(mgr.GetCache(), w.Object, w.Handler, w.Predicates...)); err != nil {
				return fmt.Errorf("watching %s: %w", gvk, err)
			}
			ctrl.LoggerFrom(ctx).Info("Watching a kind now installed", "kind", gvk.String())
			delete(pending, gvk)
		}
		return nil
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		tick := time.NewTicker(OptionalWatchInterval)
		defer tick.Stop()
		for {
			if err := start(ctx); err != nil {
				return err
			}
			if len(pending) == 0 {
				<-ctx.Done()
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
	}))
}
