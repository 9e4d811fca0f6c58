// Package v1 holds the example.com/v1 API of the generator's tests: Widget
// and Gadget, made of <parts>.
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1
