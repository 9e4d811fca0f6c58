// Package layer holds the pure logic of AddonsLayer ordering: parsing
// `spec.prereqs.dependsOn` items, finding dependency cycles among all layers,
// and deciding from observed data whether a layer's prerequisites hold.
//
// Nothing here talks to the API server. The AddonsLayer reconciler reads the
// cluster (fresh, every reconcile), fills the small observation structs of this
// package and turns the (met, message) answers into state, conditions and
// requeues. Keeping the decisions here makes every one of them a table test.
//
// Messages keep the wording of Kraan's (github.com/fidelity/kraan) where one
// exists, so users' alerts and habits keep working, and add what the user should
// do about it.
package layer
