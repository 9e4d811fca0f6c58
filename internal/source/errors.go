package source

import (
	"fmt"
	"net/url"
)

// DigestMismatchError means the downloaded bytes do not hash to the digest
// the source published: the artifact was tampered with or corrupted in
// transit, or source-controller replaced it while it was being downloaded.
// Nothing is extracted. Retrying with the source's current artifact is the
// usual remedy.
type DigestMismatchError struct {
	// URL is the artifact URL as requested (after any host override).
	URL string
	// Revision is the artifact's revision.
	Revision string
	// Expected is the digest the source published.
	Expected string
	// Got is the digest of the downloaded bytes.
	Got string
}

// Error implements error.
func (e *DigestMismatchError) Error() string {
	// Revision is left out: Fetch's wrapping already names it.
	return fmt.Sprintf("artifact %s digest mismatch: expected %s, got %s: tampered or corrupted artifact",
		e.URL, e.Expected, e.Got)
}

// UnsafeArchiveError names a tar entry that would leave the target directory
// or is of a type that is never extracted (device, FIFO, …). The archive is
// rejected as a whole.
type UnsafeArchiveError struct {
	// Entry is the entry name exactly as it appears in the archive.
	Entry string
	// Reason says why the entry is unsafe.
	Reason string
}

// Error implements error.
func (e *UnsafeArchiveError) Error() string {
	return fmt.Sprintf("unsafe archive entry %q: %s", e.Entry, e.Reason)
}

// Limit names a resource limit of a Store.
type Limit string

// The limits a TooLargeError can report.
const (
	// LimitDownloadBytes is Options.MaxDownloadBytes (compressed tarball).
	LimitDownloadBytes Limit = "download size"
	// LimitUntarBytes is Options.MaxUntarBytes (sum of file sizes).
	LimitUntarBytes Limit = "uncompressed size"
	// LimitFiles is Options.MaxFiles (number of archive entries).
	LimitFiles Limit = "entry count"
	// LimitFileBytes is Options.MaxFileBytes (size of one file).
	LimitFileBytes Limit = "file size"
)

// limitFlags are the operator flags that set each limit.
var limitFlags = map[Limit]string{
	LimitDownloadBytes: FlagMaxArtifactSize, // the download's limit follows the uncompressed one
	LimitUntarBytes:    FlagMaxArtifactSize,
	LimitFiles:         FlagMaxArtifactFiles,
	LimitFileBytes:     FlagMaxArtifactFileSize,
}

// TooLargeError means an artifact exceeds one of the Store's limits. It is
// terminal for that artifact: raise the limit or shrink the source.
type TooLargeError struct {
	// Limit is the limit that was exceeded.
	Limit Limit
	// Max is the configured value (bytes or entries).
	Max int64
	// Entry names the file over LimitFileBytes; empty for other limits.
	Entry string
}

// Error implements error.
func (e *TooLargeError) Error() string {
	what := "artifact"
	if e.Entry != "" {
		what = fmt.Sprintf("artifact file %q", e.Entry)
	}
	return fmt.Sprintf("%s exceeds the %s limit of %d (%s)", what, e.Limit, e.Max, limitFlags[e.Limit])
}

// HTTPError is a download answered with a status other than 200 OK. A 404
// usually means source-controller has already replaced the artifact: re-read
// the source object and fetch its current artifact.
type HTTPError struct {
	// URL is the requested URL with any credentials redacted.
	URL string
	// StatusCode is the HTTP status code, e.g. 404.
	StatusCode int
	// Status is the HTTP status line text, e.g. "404 Not Found".
	Status string
}

// Error implements error.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("downloading artifact %s: unexpected HTTP status %s", e.URL, e.Status)
}

// PathNotFoundError means a consumer's path does not exist in an artifact.
type PathNotFoundError struct {
	// Path is the path as the consumer gave it, e.g. "./addons/base".
	Path string
	// Revision is the artifact revision, when known (the layer controller
	// sets it; ResolvePath alone cannot know it).
	Revision string
}

// Error implements error.
func (e *PathNotFoundError) Error() string {
	if e.Revision == "" {
		return fmt.Sprintf("path %s not found in artifact", e.Path)
	}
	return fmt.Sprintf("path %s not found in revision %s", e.Path, e.Revision)
}

// UnsafePathError means a consumer's path would resolve outside the
// artifact, lexically ("..", absolute) or through a symbolic link.
type UnsafePathError struct {
	// Path is the path as the consumer gave it.
	Path string
	// Reason says why it is refused.
	Reason string
}

// Error implements error.
func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("path %s is not allowed: %s", e.Path, e.Reason)
}

// redact removes credentials from a URL before it appears in errors or logs.
// source-controller URLs carry none, but a misconfigured override might.
func redact(u *url.URL) string { return u.Redacted() }
