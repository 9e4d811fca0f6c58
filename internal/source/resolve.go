package source

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// ResolvePath returns the file-system path of p inside dir, a directory
// returned by Fetch. p is relative to the artifact root, with or without a
// leading "./" ("./addons/base", "charts/podinfo"); "", "." and "./" mean
// dir itself. p may name a directory or a file (a packaged chart).
//
// It returns an UnsafePathError when p is absolute, has a ".." element or
// resolves outside dir through a symbolic link, and a PathNotFoundError
// (without Revision, which the caller that knows it sets) when p does not exist.
func ResolvePath(dir, p string) (string, error) {
	rel, err := cleanConsumerPath(p)
	if err != nil {
		return "", err
	}
	full := filepath.Join(dir, rel)
	real, err := filepath.EvalSymlinks(full)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return "", &PathNotFoundError{Path: p}
	}
	if err != nil {
		return "", err
	}
	// Fetch never creates links, but dir may not come from Fetch, and a
	// check here costs little: the result must stay inside the real dir.
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if !within(realDir, real) {
		return "", &UnsafePathError{Path: p, Reason: "resolves outside the artifact through a symbolic link"}
	}
	return full, nil
}

// cleanConsumerPath checks a consumer's path lexically. ".." is refused
// outright rather than cleaned: "a/../b" is never needed in a layer or chart
// path and accepting it would make the rule harder to state.
func cleanConsumerPath(p string) (string, error) {
	switch {
	case strings.ContainsAny(p, "\\\x00"):
		return "", &UnsafePathError{Path: p, Reason: "must not contain a backslash or NUL byte"}
	case path.IsAbs(p):
		return "", &UnsafePathError{Path: p, Reason: "must be relative to the artifact root, e.g. ./" + strings.TrimLeft(p, "/")}
	case hasDotDot(p):
		return "", &UnsafePathError{Path: p, Reason: "must not contain '..'"}
	}
	return filepath.FromSlash(path.Clean("./" + p)), nil
}

// within reports whether target is root or below it; both must be clean
// absolute paths.
func within(root, target string) bool {
	rel, err := filepath.Rel(root, target)
	return err == nil && filepath.IsLocal(rel)
}
