package controller

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kraan-io/kraan-operator/internal/helm"
)

// setupHybrid registers the Helm/Go hybrid APIs: one chart reconciler per
// watches.yaml entry (Options.Watches), then the Habitat Go controller, which
// completes the chart-backed Habitat kind.
func setupHybrid(engine *helm.Engine) func(ctrl.Manager, Options) error {
	return func(mgr ctrl.Manager, opts Options) error {
		for _, w := range opts.Watches {
			r := &ChartReconciler{
				Client:   mgr.GetClient(),
				Engine:   engine,
				Watch:    w,
				Recorder: mgr.GetEventRecorder("kraan-operator"),
			}
			if err := r.SetupWithManager(mgr, opts); err != nil {
				return fmt.Errorf("setting up the chart-backed %s controller: %w", w.String(), err)
			}
		}
		return (&HabitatReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr, opts)
	}
}
