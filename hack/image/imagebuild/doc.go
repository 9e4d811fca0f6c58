// Package imagebuild builds the operator, bundle and catalog images as OCI
// image layouts, without a container engine, and pushes them to a registry.
//
// The images are assembled from files with go-containerregistry: the operator
// image is a minimal base (passwd and group entries for the nonroot user
// 65532, CA certificates from golang.org/x/crypto/x509roots/fallback, /tmp)
// plus the static binary, watches.yaml and helm-charts/; the bundle image is
// bundle/ with the labels of its metadata/annotations.yaml; the catalog image
// is catalog/ under /configs. Every timestamp is fixed and every tar entry
// normalised, so two builds of the same commit give the same digests.
//
// The committed bundle/ and catalog/ name the operator and bundle images by
// tag (a digest changes with every commit, and `make verify` compares them
// with what `make bundle catalog` generates). The images carry the same
// files with those tags replaced by digests, as operator-sdk's
// --use-image-digests does: see Pins.
package imagebuild
