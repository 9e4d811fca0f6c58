package chart

import (
	"fmt"
	"io"
)

// Flags of the operator that set the caps of Options. Errors name them, so a
// user whose chart is refused knows which setting to raise, or to ask for.
const (
	FlagMaxIndexSize = "--max-index-size"
	FlagMaxChartSize = "--max-chart-size"
	// FlagMaxDecompressedChartSize, FlagMaxChartFileSize and
	// FlagMaxChartFiles bound what a chart expands to (expand.go).
	FlagMaxDecompressedChartSize = "--max-chart-decompressed-size"
	FlagMaxChartFileSize         = "--max-chart-file-size"
	FlagMaxChartFiles            = "--max-chart-files"
	FlagMaxManifestSize          = "--max-oci-manifest-size"
	FlagMaxTags                  = "--max-oci-tags"
	FlagMaxTagPages              = "--max-oci-tag-pages"
	FlagChartCacheSize           = "--chart-cache-size"
	FlagIndexCacheSize           = "--index-cache-size"
)

// Units of a LimitError: bytes, or a count of tags or pages.
const (
	unitBytes = ""
	unitTags  = "tags"
	unitPages = "pages"
)

// sizeUnknown is a LimitError's Declared when the server sent too much
// rather than announced it.
const sizeUnknown = -1

const (
	bytesPerKiB = 1 << 10
	bytesPerMiB = 1 << 20
	bytesPerGiB = 1 << 30
)

// LimitError is returned when a repository or registry declares, or sends,
// more than a cap of the operator allows. The cap is checked against the
// declared size before anything is downloaded and enforced again while
// reading, so a server that lies about sizes costs at most the cap.
type LimitError struct {
	// What was refused, e.g. "chart layer of oci://host/charts/app:1.0.0".
	What string
	// Declared is the size the server announced (Content-Length, an OCI
	// descriptor's size); sizeUnknown when it sent more than the limit instead.
	Declared int64
	// Limit is the cap, in bytes, or in Unit when Unit is set.
	Limit int64
	// Unit is "" for bytes, else what Limit counts ("tags", "pages").
	Unit string
	// Flag is the operator flag that sets the cap.
	Flag string
}

func (e *LimitError) Error() string {
	if e.Unit != unitBytes {
		return fmt.Sprintf("%s has more than %d %s, the limit (%s)", e.What, e.Limit, e.Unit, e.Flag)
	}
	if e.Declared >= 0 {
		return fmt.Sprintf("%s declares %s, over the %s limit (%s)", e.What, formatBytes(e.Declared), formatBytes(e.Limit), e.Flag)
	}
	return fmt.Sprintf("%s is larger than the %s limit (%s)", e.What, formatBytes(e.Limit), e.Flag)
}

// formatBytes writes a size as people read it: "2 GiB", "1.5 MiB", "512 B".
func formatBytes(n int64) string {
	switch {
	case n >= bytesPerGiB:
		return trimUnit(float64(n)/bytesPerGiB, "GiB")
	case n >= bytesPerMiB:
		return trimUnit(float64(n)/bytesPerMiB, "MiB")
	case n >= bytesPerKiB:
		return trimUnit(float64(n)/bytesPerKiB, "KiB")
	}
	return fmt.Sprintf("%d B", n)
}

func trimUnit(v float64, unit string) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), unit)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// checkDeclared refuses a download whose announced size is over limit before
// any of it is read. An unknown size (-1) passes: readCapped still bounds it.
func checkDeclared(what string, declared, limit int64, flag string) error {
	if declared > limit {
		return &LimitError{What: what, Declared: declared, Limit: limit, Flag: flag}
	}
	return nil
}

// readCapped reads r to its end, failing as soon as it yields more than
// limit bytes: at most limit+1 bytes are ever held, whatever the server
// declared or sends.
func readCapped(r io.Reader, what string, limit int64, flag string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(data)) > limit {
		return nil, &LimitError{What: what, Declared: sizeUnknown, Limit: limit, Flag: flag}
	}
	return data, err
}
