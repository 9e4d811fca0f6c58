// Package controller holds one reconciler per kind: AddonsLayer, HelmRelease
// and Habitat. Reconcilers read top to bottom as a list of steps and delegate
// the domain logic to the packages under internal/.
package controller
