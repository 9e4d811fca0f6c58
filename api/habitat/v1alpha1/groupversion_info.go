// Package v1alpha1 holds the habitat.kraan.io/v1alpha1 API: Habitat, a group of
// Chef Habitat supervisors run as a StatefulSet rendered from the chart
// helm-charts/habitat, with a Go controller for peers and ring keys.
//
// +kubebuilder:object:generate=true
// +groupName=habitat.kraan.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = schema.GroupVersion{Group: "habitat.kraan.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
