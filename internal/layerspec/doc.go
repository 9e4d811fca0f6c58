// Package layerspec reads what an AddonsLayer defines: its Flux source and
// the artifact the source serves, the layer's directory in that artifact,
// and the objects rendered from the directory. It writes nothing. The
// AddonsLayer controller reconciles from it, and the kubectl plugin previews
// a layer through it, so a preview renders exactly what a reconcile would
// apply without the plugin importing the controller.
package layerspec
