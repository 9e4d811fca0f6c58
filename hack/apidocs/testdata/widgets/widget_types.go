package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Common holds the fields every spec shares.
type Common struct {
	// Owner of the object.
	// +optional
	Owner string `json:"owner,omitempty"`
}

// WidgetSpec is the desired state of a widget.
//
// +kubebuilder:validation:XValidation:rule="self.size <= 5 || has(self.parts)",message="a widget larger than 5 needs parts"
type WidgetSpec struct {
	Common `json:",inline"`

	// Size of the widget, in <units>.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Size int32 `json:"size,omitempty"`

	// Color of the widget.
	//
	// Blue costs more.
	// +kubebuilder:validation:Enum=red;green;blue
	Color string `json:"color"`

	// Interval between two polishes.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(ms|s|m))+$`
	Interval metav1.Duration `json:"interval,omitempty"`

	// Parts of the widget.
	// +optional
	// +listType=map
	// +listMapKey=name
	Parts []Part `json:"parts,omitempty"`

	// Shape of the widget.
	// +optional
	Shape *Shape `json:"shape,omitempty"`

	// Env of the widget's process.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Secret is never serialised.
	Secret string `json:"-"`

	cache string
}

// Part is one part of a widget or gadget.
type Part struct {
	// Name of the part.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Labels of the part.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// Shape is the outline of a widget.
//
// +kubebuilder:validation:Enum=round;square
type Shape string

// WidgetStatus is the observed state of a widget.
type WidgetStatus struct {
	// Conditions of the widget.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Orphan is used by no kind and is left out of the reference.
type Orphan struct {
	// Name of the orphan.
	Name string `json:"name"`
}

// Widget is a thing made of parts.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName={wd,wdg}
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WidgetSpec `json:"spec"`
	// +optional
	Status WidgetStatus `json:"status,omitempty"`
}

// WidgetList is a list of Widgets.
//
// +kubebuilder:object:root=true
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}
