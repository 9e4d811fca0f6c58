package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// confinedFS is kustomize's on-disk file system restricted to the artifact
// root. Kustomize's root-only load restriction covers files only: a base
// directory may still be `../../anything` on the operator's disk, including
// other layers' artifacts. Flux's kustomize-controller confines builds the same
// way. Writes are refused: a build has nothing to write.
type confinedFS struct {
	filesys.FileSystem
	root string // absolute, symlinks resolved
}

var _ filesys.FileSystem = (*confinedFS)(nil)

// errReadOnly is returned by every write of a confinedFS.
var errReadOnly = errors.New("the layer's source is read-only during a build")

func newConfinedFS(root string) (*confinedFS, error) {
	real, err := realPath(root)
	if err != nil {
		return nil, fmt.Errorf("resolving artifact root: %w", err)
	}
	return &confinedFS{FileSystem: filesys.MakeFsOnDisk(), root: real}, nil
}

// allow fails for a path that is, or resolves through symlinks to, a place
// outside the root. A path that does not exist yet is judged by its name.
func (c *confinedFS) allow(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		real = abs
	} else if err != nil {
		return err
	}
	if !within(c.root, real) {
		rel, _ := filepath.Rel(c.root, real)
		return fmt.Errorf("security: %s is outside the layer's source artifact", filepath.ToSlash(rel))
	}
	return nil
}

// Open opens a file inside the root.
func (c *confinedFS) Open(path string) (filesys.File, error) {
	if err := c.allow(path); err != nil {
		return nil, err
	}
	return c.FileSystem.Open(path)
}

// IsDir reports whether path is a directory inside the root.
func (c *confinedFS) IsDir(path string) bool { return c.allow(path) == nil && c.FileSystem.IsDir(path) }

// Exists reports whether path exists inside the root.
func (c *confinedFS) Exists(path string) bool {
	return c.allow(path) == nil && c.FileSystem.Exists(path)
}

// ReadDir lists a directory inside the root.
func (c *confinedFS) ReadDir(path string) ([]string, error) {
	if err := c.allow(path); err != nil {
		return nil, err
	}
	return c.FileSystem.ReadDir(path)
}

// CleanedAbs resolves a path inside the root; kustomize's load restrictor and
// its base loader both go through it.
func (c *confinedFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	if err := c.allow(path); err != nil {
		return "", "", err
	}
	return c.FileSystem.CleanedAbs(path)
}

// Glob returns the matches inside the root.
func (c *confinedFS) Glob(pattern string) ([]string, error) {
	matches, err := c.FileSystem.Glob(pattern)
	if err != nil {
		return nil, err
	}
	allowed := matches[:0]
	for _, m := range matches {
		if c.allow(m) == nil {
			allowed = append(allowed, m)
		}
	}
	return allowed, nil
}

// ReadFile reads a file inside the root.
func (c *confinedFS) ReadFile(path string) ([]byte, error) {
	if err := c.allow(path); err != nil {
		return nil, err
	}
	return c.FileSystem.ReadFile(path)
}

// Walk walks a directory inside the root; symlinks met on the way are not
// followed, and reading one is checked by ReadFile.
func (c *confinedFS) Walk(path string, walkFn filepath.WalkFunc) error {
	if err := c.allow(path); err != nil {
		return err
	}
	return c.FileSystem.Walk(path, walkFn)
}

// Create is refused.
func (c *confinedFS) Create(string) (filesys.File, error) { return nil, errReadOnly }

// Mkdir is refused.
func (c *confinedFS) Mkdir(string) error { return errReadOnly }

// MkdirAll is refused.
func (c *confinedFS) MkdirAll(string) error { return errReadOnly }

// RemoveAll is refused.
func (c *confinedFS) RemoveAll(string) error { return errReadOnly }

// WriteFile is refused.
func (c *confinedFS) WriteFile(string, []byte) error { return errReadOnly }
