// Package manifest reads a layer's directory, inside a fetched source artifact,
// into the objects the layer applies.
//
// A directory with a kustomization file is built with kustomize in-process
// (plugins, Helm inflation and remote bases off; no file outside the artifact is
// read). Any other directory is read like `kubectl apply -R -f`: every YAML or
// JSON file, recursively, every document. Flux helm.toolkit.fluxcd.io
// HelmReleases are converted to kraan.io/v1alpha1 HelmReleases on the way, with a
// warning for every field our HelmRelease does not support, so Kraan users'
// repositories keep working without Flux's helm-controller.
//
// The package does not talk to the API server: it turns files into
// unstructured objects, labels them with their owning layer and sorts them for
// apply. Objects are returned in a deterministic order, so the inventory and the
// diff of a layer do not change between reconciles of the same revision.
package manifest
