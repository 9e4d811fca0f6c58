// Package helm is the operator's embedded Helm engine: every use of the Helm
// SDK (helm.sh/helm/v4) goes through it. It builds an action configuration per
// release on top of one shared discovery client and REST mapper, observes the
// release in Helm's storage, decides the next action from that observation
// (install, upgrade, test, rollback, uninstall, unlock), and runs it. A
// deployed revision another Helm client made (Flux helm-controller, the helm
// CLI) is adopted without a new revision when it is what the engine would
// deploy (adopt.go).
//
// The decision is made from what storage holds on each pass, never from status
// the operator wrote earlier, so a crash mid-upgrade or a release changed by
// hand is handled like any other state.
package helm
