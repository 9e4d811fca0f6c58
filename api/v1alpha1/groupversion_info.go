// Package v1alpha1 holds the kraan.io/v1alpha1 API: AddonsLayer (Kraan-compatible
// ordered layers of add-ons) and HelmRelease (Flux v2 field names, installed by the
// operator's embedded Helm SDK).
//
// +kubebuilder:object:generate=true
// +groupName=kraan.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = schema.GroupVersion{Group: "kraan.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
