package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GadgetSpec is the desired state of a gadget.
type GadgetSpec struct {
	Common `json:",inline"`

	// Parts of the gadget.
	// +optional
	Parts []Part `json:"parts,omitempty"`
}

// Gadget is a smaller thing made of the same parts.
//
// +kubebuilder:object:root=true
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GadgetSpec `json:"spec,omitempty"`
}
