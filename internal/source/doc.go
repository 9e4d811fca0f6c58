// Package source fetches Flux source artifacts (GitRepository, OCIRepository
// and Bucket status.artifact) and makes their contents available as plain
// directories for the AddonsLayer and HelmRelease controllers.
//
// A Store downloads an artifact over HTTP, verifies its digest before
// anything is extracted, untars it safely and keeps it on disk under its
// digest:
//
//	<root>/sha256-<hex>/            the extracted artifact, read-only by convention
//	<root>/sha256-<hex>.verified    marker written last; proves the directory is complete
//	                                and lists the link entries that were skipped
//	<root>/.tmp-*                   downloads, extractions and GC deletions in progress
//
// The directory is extracted into a temporary directory inside root and
// renamed into place, so a reader either sees the complete tree or nothing:
// Kraan had a window where a revision directory was missing while it was
// being replaced and layers flipped to Failed. A digest names immutable
// content, so a directory, once published, is never rewritten; a new
// revision is a new directory and the old one stays readable until GC
// removes it.
//
// Extraction never writes outside the target directory: entries with
// absolute paths or ".." elements are rejected with an UnsafeArchiveError,
// and symbolic and hard links are skipped, not created. Skipping matches
// source-controller, which drops links when it builds Git and OCI artifacts,
// so artifacts produced by Flux never contain them; a hand-made artifact
// with a link loses the link instead of failing or exposing files outside
// the tree. Writes go through an os.Root as a second line of defence.
// The files' summed and single sizes, the entry count and the decompressed
// stream are limited (TooLargeError, naming the operator flag to raise).
//
// ResolvePath maps a consumer's path ("./addons/base", "charts/podinfo")
// inside a fetched directory, refusing paths that leave it.
//
// One Store owns its root directory: use one Store per root per process.
// GC removes the directories that no consumer references any more; a
// directory being fetched, or returned by Fetch within Options.GCMinAge, is
// never removed, so a reconcile reading the tree it just fetched cannot
// lose it underneath.
package source
