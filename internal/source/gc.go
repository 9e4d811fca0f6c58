package source

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// GC removes the artifact directories whose digest inUse does not report as
// referenced, and returns their digests ("sha256:<hex>"). inUse is called
// with the canonical digest, as found in a Flux artifact's status.
//
// A directory is kept, whatever inUse says, while a Fetch of it is in
// progress and for Options.GCMinAge after a Fetch returned it: a reconcile
// may still be reading a revision its source has already moved past.
// GC holds the Store's lock while it runs, so inUse must not call the Store.
//
// Every consumer of the root must be reflected in inUse: give each consumer
// (layers, charts) its own Store, or build inUse from all of them.
func (s *Store) GC(ctx context.Context, inUse func(digest string) bool) ([]string, error) {
	removed, trash, err := s.sweep(inUse)
	// Deleting a large tree takes a while; it happens outside the lock so
	// Fetch calls are not held up. The trash names are temporaries, which
	// New cleans up if the process dies first.
	for _, dir := range trash {
		err = errors.Join(err, os.RemoveAll(dir))
	}
	if len(removed) > 0 {
		logf.FromContext(ctx).Info("Removed unused artifacts", "digests", removed)
	}
	return removed, err
}

// sweep unpublishes every collectable digest under the lock: its marker is
// removed and its directory renamed to a temporary name, to be deleted by
// the caller.
func (s *Store) sweep(inUse func(string) bool) (removed, trash []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	seen := map[string]bool{} // a directory and its marker are two entries
	for _, e := range entries {
		d, ok := s.collectable(e, inUse)
		if !ok || seen[d.key()] {
			continue
		}
		seen[d.key()] = true
		dir, err := s.unpublish(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, d.String())
		if dir != "" {
			trash = append(trash, dir)
		}
	}
	return removed, trash, errors.Join(errs...)
}

// collectable reports whether the root entry e is an artifact directory (or
// an orphaned marker) that may be removed now. Temporary entries belong to
// fetches in progress, and unknown names to someone else: both are left.
func (s *Store) collectable(e fs.DirEntry, inUse func(string) bool) (digest, bool) {
	name := e.Name()
	if strings.HasPrefix(name, tmpPrefix) {
		return digest{}, false
	}
	d, ok := digestFromKey(strings.TrimSuffix(name, markerSuffix))
	if !ok {
		return digest{}, false
	}
	return d, !s.protected(d) && !inUse(d.String())
}

// protected reports whether a Fetch of d is running or returned recently.
// The caller holds s.mu.
func (s *Store) protected(d digest) bool {
	k := d.key()
	if s.inflight[k] > 0 {
		return true
	}
	last, ok := s.lastUsed[k]
	return ok && s.now().Sub(last) < s.opts.GCMinAge
}

// unpublish removes d's marker before moving its directory out of the way,
// so a crash in between leaves an unmarked directory that the next Fetch
// replaces, never a marked partial one. It returns the directory's new name,
// or "" if there was none. The caller holds s.mu.
func (s *Store) unpublish(d digest) (string, error) {
	if err := os.Remove(s.marker(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	delete(s.lastUsed, d.key())
	if _, err := os.Lstat(s.dir(d)); errors.Is(err, fs.ErrNotExist) {
		return "", nil // an orphaned marker
	}
	// A unique parent, because os.Rename will not replace a directory.
	trash, err := os.MkdirTemp(s.root, tmpPrefix+"gc-")
	if err != nil {
		return "", err
	}
	if err := os.Rename(s.dir(d), filepath.Join(trash, d.key())); err != nil {
		_ = os.Remove(trash)
		return "", err
	}
	return trash, nil
}
