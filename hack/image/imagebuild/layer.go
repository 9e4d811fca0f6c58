package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Entry is one file or directory of a layer. Name is the path inside the
// image without a leading slash.
type Entry struct {
	Name string
	// Mode holds the permission bits (and os.ModeDir, os.ModeSticky).
	Mode fs.FileMode
	Data []byte
	// UID and GID own the entry; 0 is root.
	UID, GID int
}

// Dir is a directory entry with the given permissions.
func Dir(name string, perm fs.FileMode, uid, gid int) Entry {
	return Entry{Name: name, Mode: fs.ModeDir | perm, UID: uid, GID: gid}
}

// File is a root-owned regular file.
func File(name string, perm fs.FileMode, data []byte) Entry {
	return Entry{Name: name, Mode: perm, Data: data}
}

// NewLayer writes the entries as a gzip-compressed tar layer. Entries are
// sorted by name, every timestamp is mtime and no user or group name is
// recorded, so the same entries always give the same digest.
func NewLayer(entries []Entry, mtime time.Time) (v1.Layer, error) {
	sorted := append([]Entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range sorted {
		if err := tw.WriteHeader(header(e, mtime)); err != nil {
			return nil, fmt.Errorf("writing layer entry %s: %w", e.Name, err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			return nil, fmt.Errorf("writing layer entry %s: %w", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

func header(e Entry, mtime time.Time) *tar.Header {
	h := &tar.Header{
		Name:    e.Name,
		Mode:    int64(e.Mode.Perm()),
		Uid:     e.UID,
		Gid:     e.GID,
		ModTime: mtime,
		Format:  tar.FormatPAX,
	}
	if e.Mode&fs.ModeSticky != 0 {
		h.Mode |= 0o1000
	}
	if e.Mode.IsDir() {
		h.Typeflag = tar.TypeDir
		h.Name += "/"
	} else {
		h.Typeflag = tar.TypeReg
		h.Size = int64(len(e.Data))
	}
	return h
}

// TreeEntries reads the directory src into entries under the image path dst:
// root-owned, directories 0755, files 0644 (0755 when executable by the
// owner), so the checkout's umask and file times play no part. Symbolic links
// and other special files are refused: none belongs in these images.
func TreeEntries(src, dst string) ([]Entry, error) {
	var entries []Entry
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := path.Join(dst, filepath.ToSlash(rel))
		switch {
		case rel == "." && dst == "":
			// The image root itself.
		case d.IsDir():
			entries = append(entries, Dir(name, 0o755, 0, 0))
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			perm := fs.FileMode(0o644)
			if info.Mode().Perm()&0o100 != 0 {
				perm = 0o755
			}
			entries = append(entries, File(name, perm, data))
		default:
			return fmt.Errorf("%s is not a regular file or directory", p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", src, err)
	}
	return entries, nil
}

// parents adds the directories above each entry that the entries do not
// declare themselves, root-owned 0755: a tar without them still unpacks, but
// some tools (and the OCI spec's examples) expect every directory listed.
func parents(entries []Entry) []Entry {
	have := map[string]bool{}
	for _, e := range entries {
		have[e.Name] = true
	}
	out := append([]Entry(nil), entries...)
	for _, e := range entries {
		for d := path.Dir(e.Name); d != "." && d != "/" && !have[d]; d = path.Dir(d) {
			have[d] = true
			out = append(out, Dir(d, 0o755, 0, 0))
		}
	}
	return out
}
