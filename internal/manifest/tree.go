package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// manifestExtensions are the files read from a directory without a
// kustomization. JSON is included because kubectl apply -R, which Kraan ran,
// reads it too.
var manifestExtensions = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// readTree reads every manifest file below dir, in lexical path order. Files
// are opened through an os.Root at the artifact root, so a symlink cannot lead
// outside the artifact.
func readTree(dir, root string) ([]sourced, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening artifact root: %w", err)
	}
	defer r.Close()
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, fmt.Errorf("locating layer directory: %w", err)
	}
	fsys, start := r.FS(), filepath.ToSlash(rel)
	var objs []sourced
	err = fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &ParseError{File: p, Err: err}
		}
		switch {
		case p == start:
			return nil
		case skip(d) && d.IsDir():
			return fs.SkipDir
		case skip(d) || d.IsDir():
			return nil
		}
		found, err := readFile(fsys, p)
		objs = append(objs, found...)
		return err
	})
	return objs, err
}

// skip leaves out hidden files and directories (.git, .github workflows, editor
// files: none are manifests, and one without a kind would fail the layer) and
// files that are not manifests.
func skip(d fs.DirEntry) bool {
	name := d.Name()
	if strings.HasPrefix(name, ".") {
		return true
	}
	if d.IsDir() {
		return false
	}
	return !manifestExtensions[strings.ToLower(path.Ext(name))] && !isKustomizationName(name)
}

// readFile decodes every document of one file.
func readFile(fsys fs.FS, p string) ([]sourced, error) {
	if isKustomizationName(path.Base(p)) {
		return nil, &ParseError{File: p, Err: errors.New("a kustomization below the layer's directory is not built: " +
			"add a kustomization at the top of the layer that lists this directory in its resources")}
	}
	data, err := fs.ReadFile(fsys, p)
	if err != nil {
		return nil, &ParseError{File: p, Err: err}
	}
	docs, err := splitDocuments(p, data)
	if err != nil {
		return nil, err
	}
	var objs []sourced
	for i, doc := range docs {
		found, err := decodeDocument(doc.data)
		if err != nil {
			return nil, newDocError(p, i+1, doc.first, err)
		}
		for _, obj := range found {
			objs = append(objs, sourced{obj: obj, origin: fmt.Sprintf("%s: document %d", p, i+1)})
		}
	}
	return objs, nil
}
