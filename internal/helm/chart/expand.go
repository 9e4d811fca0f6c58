package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/ignore"
)

// A chart is small to download and may still be large once decompressed: a
// 91 KiB archive of zeros expands to 95 MB, which Helm's loader holds in
// memory, and every Helm action, and every release record, after it. So
// before Helm's loader sees a chart, its expansion is measured against
// expansionLimits by streaming the archive (or walking the directory), with
// nothing kept but the packaged subcharts still to measure. Helm's loader then
// loads a chart already known to fit. Helm's own caps are package variables
// (archive.MaxDecompressedChartSize, 100 MiB); they are left alone, so the
// operator's flags decide and nothing else in the process is changed.

// unitEntries is what a LimitError of --max-chart-files counts.
const unitEntries = "files and directories"

// expansionLimits bound what one chart expands to, packaged subcharts
// included.
type expansionLimits struct {
	// maxBytes bounds both what gzip inflates (the tar streams: files, headers
	// and padding) and the files' sizes summed.
	maxBytes int64
	// maxFileBytes bounds each file.
	maxFileBytes int64
	// maxEntries bounds the files and directories.
	maxEntries int
}

func (o Options) expansionLimits() expansionLimits {
	return expansionLimits{maxBytes: o.MaxDecompressedChartSize, maxFileBytes: o.MaxChartFileSize, maxEntries: o.MaxChartFiles}
}

// expansion measures one chart against its limits.
type expansion struct {
	lim expansionLimits
	// what names the chart in errors: "chart archive <url>", "chart <path>
	// in the source artifact".
	what string
	// inflated counts the bytes gzip produced, nested archives included.
	inflated int64
	// size sums the sizes of the files, nested ones included.
	size    int64
	entries int
	// pending are packaged subcharts still to measure. They are measured
	// one after another, never nested, so one decompressor at a time is held
	// however deep subcharts nest; their bytes count in size, so what waits
	// here is bounded too.
	pending []pendingArchive
}

type pendingArchive struct {
	data []byte
	// prefix names the archive's files in errors: "charts/sub.tgz/".
	prefix string
}

func newExpansion(lim expansionLimits, what string) *expansion {
	return &expansion{lim: lim, what: what}
}

// checkArchive measures a chart archive.
func (x *expansion) checkArchive(data []byte) error {
	x.pending = append(x.pending, pendingArchive{data: data})
	return x.drain()
}

// drain measures the pending archives, and those they contain.
func (x *expansion) drain() error {
	for len(x.pending) > 0 {
		next := x.pending[0]
		x.pending = x.pending[1:]
		if err := x.scanArchive(next); err != nil {
			return err
		}
	}
	return nil
}

// scanArchive streams one gzip-compressed tarball, counting every entry and
// byte, and queues the packaged subcharts it holds.
func (x *expansion) scanArchive(a pendingArchive) error {
	zr, err := gzip.NewReader(bytes.NewReader(a.data))
	if err != nil {
		return x.readError(a, err)
	}
	defer func() { _ = zr.Close() }()
	tr := tar.NewReader(&inflateCounter{r: zr, x: x})
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return x.readError(a, err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue // metadata only, as the loader treats it
		}
		name := archiveEntryName(hdr.Name)
		if err := x.entry(); err != nil {
			return err
		}
		if headerOnly(hdr.Typeflag) {
			continue
		}
		if err := x.file(a.prefix+name, hdr.Size, hdr.Size); err != nil {
			return err
		}
		if err := x.readEntry(a, tr, name); err != nil {
			return err
		}
	}
}

// readEntry reads an entry's data: kept for a packaged subchart, which is
// measured next, discarded otherwise.
func (x *expansion) readEntry(a pendingArchive, tr io.Reader, name string) error {
	if !isSubchartArchive(name) {
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return x.readError(a, err)
		}
		return nil
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		return x.readError(a, err)
	}
	x.pending = append(x.pending, pendingArchive{data: data, prefix: a.prefix + name + "/"})
	return nil
}

// entry counts a file or directory.
func (x *expansion) entry() error {
	x.entries++
	if x.entries > x.lim.maxEntries {
		return &LimitError{What: x.what, Limit: int64(x.lim.maxEntries), Unit: unitEntries, Flag: FlagMaxChartFiles}
	}
	return nil
}

// file counts a file of size bytes before it is read; declared is the size
// its tar header announces, or sizeUnknown for a file on disk.
func (x *expansion) file(name string, size, declared int64) error {
	if size > x.lim.maxFileBytes {
		return &LimitError{What: fmt.Sprintf("file %s of %s", name, x.what), Declared: declared,
			Limit: x.lim.maxFileBytes, Flag: FlagMaxChartFileSize}
	}
	x.size += size
	if x.size > x.lim.maxBytes {
		return x.tooLarge()
	}
	return nil
}

func (x *expansion) tooLarge() error {
	return &LimitError{What: "decompressed " + x.what, Declared: sizeUnknown, Limit: x.lim.maxBytes,
		Flag: FlagMaxDecompressedChartSize}
}

// readError reports a failure to read an archive: the decompressed limit if
// that is what stopped it, else what the reader said.
func (x *expansion) readError(a pendingArchive, err error) error {
	if x.inflated > x.lim.maxBytes {
		return x.tooLarge()
	}
	if a.prefix == "" {
		return fmt.Errorf("reading %s: %w", x.what, err)
	}
	return fmt.Errorf("reading %s of %s: %w", strings.TrimSuffix(a.prefix, "/"), x.what, err)
}

// errInflateLimit stops a decompression at the limit; readError reports it.
var errInflateLimit = errors.New("decompressed size limit reached")

// inflateCounter counts what a decompressor yields against the expansion's
// limit and stops it one byte past it: no more is ever decompressed.
type inflateCounter struct {
	r io.Reader
	x *expansion
}

func (c *inflateCounter) Read(p []byte) (int, error) {
	left := c.x.lim.maxBytes - c.x.inflated + 1
	if left <= 0 {
		return 0, errInflateLimit
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.x.inflated += int64(n)
	if c.x.inflated > c.x.lim.maxBytes {
		return n, errInflateLimit
	}
	return n, err
}

// headerOnly reports whether entries of this type carry no data (as
// archive/tar treats them).
func headerOnly(flag byte) bool {
	switch flag {
	case tar.TypeLink, tar.TypeSymlink, tar.TypeChar, tar.TypeBlock, tar.TypeDir, tar.TypeFifo:
		return true
	}
	return false
}

// archiveEntryName is an entry's name inside the chart, as Helm's loader
// reads it: without the first path element (the chart's directory), with
// slashes.
func archiveEntryName(name string) string {
	delimiter := "/"
	if strings.ContainsRune(name, '\\') {
		delimiter = "\\"
	}
	_, rest, _ := strings.Cut(name, delimiter)
	return path.Clean(strings.ReplaceAll(rest, delimiter, "/"))
}

// isSubchartArchive reports whether Helm's loader loads the file of that
// name (relative to a chart) as a packaged subchart: charts/<name>.tgz, also
// inside subcharts' directories, unless the name starts with "_" or ".".
func isSubchartArchive(name string) bool {
	for {
		rest, ok := strings.CutPrefix(name, "charts/")
		if !ok {
			return false
		}
		sub, after, nested := strings.Cut(rest, "/")
		if strings.IndexAny(sub, "_.") == 0 {
			return false
		}
		if !nested {
			return path.Ext(sub) == ".tgz"
		}
		name = after
	}
}

// checkDir measures the chart directory dir as Helm's loader will read it:
// files .helmignore leaves out are not counted, symlinks are followed, and
// packaged subcharts are measured decompressed. Files are not read, but for
// packaged subcharts.
func (x *expansion) checkDir(dir string) error {
	rules, err := helmIgnoreRules(dir)
	if err != nil {
		return err
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if err := x.walk(rules, dir, "", info); err != nil {
		return err
	}
	return x.drain()
}

// helmIgnoreRules are the rules Helm's directory loader applies.
func helmIgnoreRules(dir string) (*ignore.Rules, error) {
	rules := ignore.Empty()
	if _, err := os.Stat(filepath.Join(dir, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.ParseFile(filepath.Join(dir, ignore.HelmIgnore)); err != nil {
			return nil, err
		}
	}
	rules.AddDefaults()
	return rules, nil
}

// walk counts p, whose name in the chart is name ("" for the chart's
// directory), and what it holds, as helm's internal sympath.Walk visits them:
// a symlink is followed wherever it leads (checkLinks keeps that inside the
// artifact), and counted again each time it is met, so a link loop ends at
// the entry limit rather than running on.
func (x *expansion) walk(rules *ignore.Rules, p, name string, info os.FileInfo) error {
	if info.Mode()&os.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			return err
		}
		if info, err = os.Lstat(resolved); err != nil {
			return err
		}
	}
	if name != "" {
		if rules.Ignore(name, info) {
			return nil
		}
		if err := x.entry(); err != nil {
			return err
		}
	}
	if !info.IsDir() {
		return x.dirFile(p, name, info)
	}
	names, err := readDirNames(p)
	if err != nil {
		return err
	}
	for _, child := range names {
		childInfo, err := os.Lstat(filepath.Join(p, child))
		if err != nil {
			return err
		}
		if err := x.walk(rules, filepath.Join(p, child), path.Join(name, child), childInfo); err != nil {
			return err
		}
	}
	return nil
}

// dirFile counts a file of a chart directory, and queues it if it is a
// packaged subchart. Irregular files are left to the loader, which refuses
// them.
func (x *expansion) dirFile(p, name string, info os.FileInfo) error {
	if !info.Mode().IsRegular() {
		return nil
	}
	if err := x.file(name, info.Size(), sizeUnknown); err != nil {
		return err
	}
	if !isSubchartArchive(name) {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	// The file may have grown since it was measured: read no more than that.
	data, err := io.ReadAll(io.LimitReader(f, info.Size()))
	if err != nil {
		return err
	}
	x.pending = append(x.pending, pendingArchive{data: data, prefix: name + "/"})
	return nil
}

// readDirNames lists a directory's names sorted, as sympath.Walk does.
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}
