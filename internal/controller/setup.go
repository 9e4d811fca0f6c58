package controller

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// Options are the settings shared by every reconciler.
type Options struct {
	// MaxConcurrentReconciles is the number of workers per kind.
	MaxConcurrentReconciles int
}

// WatchedKinds are the kinds whose informers must have synced before the
// operator reports ready.
func WatchedKinds() []client.Object {
	return []client.Object{&kraanv1.AddonsLayer{}, &kraanv1.HelmRelease{}, &habitatv1.Habitat{}}
}

// SetupAll registers every reconciler with mgr.
func SetupAll(mgr ctrl.Manager, opts Options) error {
	setups := []struct {
		name  string
		setup func(ctrl.Manager, Options) error
	}{
		{"AddonsLayer", (&AddonsLayerReconciler{Client: mgr.GetClient()}).SetupWithManager},
		{"HelmRelease", (&HelmReleaseReconciler{Client: mgr.GetClient()}).SetupWithManager},
		{"Habitat", (&HabitatReconciler{Client: mgr.GetClient()}).SetupWithManager},
	}
	for _, s := range setups {
		if err := s.setup(mgr, opts); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", s.name, err)
		}
	}
	return nil
}

// Leader election, events and the namespaces' default service accounts are
// needed by every controller.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core;events.k8s.io,resources=events,verbs=create;patch
