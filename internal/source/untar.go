package source

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// limits bounds what one extraction may create.
type limits struct {
	maxBytes     int64 // sum of regular file sizes
	maxFiles     int64 // number of archive entries
	maxFileBytes int64 // size of one regular file
}

// tarOverheadPerEntry is what the tar stream may carry per entry besides
// file data: a 512-byte header, up to 511 bytes of padding, and an extended
// header for a long name. It bounds the decompressed stream with maxBytes.
const tarOverheadPerEntry = 2 << 10

// streamLimit bounds what gzip may inflate for one extraction: the files,
// and each entry's headers and padding. Without it an archive of entries
// with huge extended headers (up to 1 MiB each, which archive/tar reads
// and drops) would be decompressed in full, at the price of CPU.
func (l limits) streamLimit() int64 {
	return l.maxBytes + (l.maxFiles+1)*tarOverheadPerEntry
}

// extractor holds the state of one extraction.
type extractor struct {
	root    *os.Root
	lim     limits
	bytes   int64
	entries int64
	skipped []string // links not created, reported by the caller
}

// errStreamLimit stops the decompressor at limits.streamLimit.
var errStreamLimit = errors.New("decompressed stream limit reached")

// cappedReader fails once more than max bytes have been read through it.
type cappedReader struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if left := c.max - c.n + 1; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.over = true
		return n, errStreamLimit
	}
	return n, err
}

// untar extracts the gzip-compressed tarball r into dir, which must exist.
// It returns the names of the link entries it skipped.
func untar(r io.Reader, dir string, lim limits) ([]string, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("artifact is not a gzip-compressed tarball: %w", err)
	}
	// os.Root confines every write to dir even if a name check below were
	// wrong: the kernel-level lookup refuses to follow ".." or links out.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }()

	if lim.maxFileBytes <= 0 {
		lim.maxFileBytes = lim.maxBytes
	}
	x := &extractor{root: root, lim: lim}
	stream := &cappedReader{r: zr, max: lim.streamLimit()}
	tr := tar.NewReader(stream)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return x.skipped, nil
		}
		if err == nil {
			err = x.entry(hdr, tr)
		}
		switch {
		case stream.over:
			return nil, &TooLargeError{Limit: LimitUntarBytes, Max: lim.maxBytes}
		case err != nil && hdr == nil:
			return nil, fmt.Errorf("reading tarball: %w", err)
		case err != nil:
			return nil, err
		}
	}
}

// entry extracts one archive entry.
func (x *extractor) entry(hdr *tar.Header, r io.Reader) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		// Metadata only: `git archive` puts the commit id here.
		return nil
	}
	x.entries++
	if x.entries > x.lim.maxFiles {
		return &TooLargeError{Limit: LimitFiles, Max: x.lim.maxFiles}
	}
	// Names are checked for every entry, links included: an archive that
	// carries an escaping name is hostile and rejected as a whole.
	name, err := cleanEntryName(hdr.Name)
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.root.MkdirAll(name, dirPerm(hdr))
	case tar.TypeReg:
		return x.file(name, hdr, r)
	case tar.TypeSymlink, tar.TypeLink:
		x.skipped = append(x.skipped, hdr.Name)
		return nil
	default:
		return &UnsafeArchiveError{Entry: hdr.Name, Reason: fmt.Sprintf("unsupported entry type %q", hdr.Typeflag)}
	}
}

// file writes one regular file, counting its size against the limits before
// writing anything, so an oversized entry never reaches the disk.
func (x *extractor) file(name string, hdr *tar.Header, r io.Reader) error {
	if hdr.Size > x.lim.maxFileBytes {
		return &TooLargeError{Limit: LimitFileBytes, Max: x.lim.maxFileBytes, Entry: hdr.Name}
	}
	x.bytes += hdr.Size
	if x.bytes > x.lim.maxBytes {
		return &TooLargeError{Limit: LimitUntarBytes, Max: x.lim.maxBytes}
	}
	// Archives need not list parent directories before their files.
	if parent := filepath.Dir(name); parent != "." {
		if err := x.root.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm(hdr))
	if err != nil {
		return err
	}
	// tar.Reader returns exactly hdr.Size bytes or an error, so the limit
	// checked above holds for what is written.
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", hdr.Name, err)
	}
	return nil
}

// dirPerm keeps the owner able to traverse and clean up what it extracted
// and drops group/other write access.
func dirPerm(hdr *tar.Header) os.FileMode {
	return os.FileMode(hdr.Mode)&0o755 | 0o700
}

// filePerm keeps executable bits (chart scripts) but never setuid, setgid,
// sticky or group/other write.
func filePerm(hdr *tar.Header) os.FileMode {
	return os.FileMode(hdr.Mode)&0o755 | 0o600
}

// cleanEntryName checks a tar entry name and returns it as a clean,
// OS-specific path relative to the extraction directory. Any ".." element is
// refused even when it would clean to a path inside ("a/../b"): archives
// built by Flux never contain one, so its presence is a sign of tampering.
func cleanEntryName(name string) (string, error) {
	reason := ""
	switch {
	case name == "":
		reason = "empty name"
	case strings.ContainsAny(name, "\\\x00"):
		reason = "name contains a backslash or NUL byte"
	case path.IsAbs(name):
		reason = "absolute path"
	case hasDotDot(name):
		reason = "path escapes the target directory"
	}
	if reason != "" {
		return "", &UnsafeArchiveError{Entry: name, Reason: reason}
	}
	clean := filepath.FromSlash(path.Clean(name))
	// Belt and braces: whatever passed the checks above must be local.
	if !filepath.IsLocal(clean) {
		return "", &UnsafeArchiveError{Entry: name, Reason: "path is not local to the target directory"}
	}
	return clean, nil
}

// hasDotDot reports whether a slash-separated path has a ".." element.
func hasDotDot(p string) bool {
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return true
		}
	}
	return false
}
