package helm

import (
	"encoding/json"
	"fmt"

	release "helm.sh/helm/v4/pkg/release/v1"
)

// DefaultMaxRecordBytes bounds what one release record holds before Helm
// encodes it (the chart's files, the manifest, the hooks, the values). A
// Secret holds at most 1 MiB, and Helm stores the record gzipped; YAML
// compresses about tenfold, so a record over this could not be stored in any
// case, and encoding it first costs the operator several times its size.
const DefaultMaxRecordBytes int64 = 16 << 20

// FlagMaxRecordSize is the operator flag that sets the bound.
const FlagMaxRecordSize = "--max-release-record-size"

// RecordTooLargeError says a release record would hold more than the bound.
// It is found before the record is encoded or written, so nothing of the
// revision was applied.
type RecordTooLargeError struct {
	Release string
	Size    int64
	Max     int64
}

func (e *RecordTooLargeError) Error() string {
	return fmt.Sprintf("the release record of %s would hold %d bytes (chart files, manifest, hooks and values), over the "+
		"limit of %d (%s): make the chart or its values smaller, or raise the limit", e.Release, e.Size, e.Max, FlagMaxRecordSize)
}

// LimitRecordSize bounds the records the engine writes to max bytes (see
// recordSize); 0 keeps DefaultMaxRecordBytes.
func (e *Engine) LimitRecordSize(max int64) {
	e.maxRecordBytes = max
}

// recordLimit is the engine's bound on a record.
func (e *Engine) recordLimit() int64 {
	if e.maxRecordBytes > 0 {
		return e.maxRecordBytes
	}
	return DefaultMaxRecordBytes
}

// recordSize is what rel holds that Helm encodes into its record, counted
// without encoding it: the chart's templates, files, raw files and schema,
// its values and the user's, the manifest and the hooks' manifests.
func recordSize(rel *release.Release) int64 {
	var n int64
	if ch := rel.Chart; ch != nil {
		for _, f := range ch.Templates {
			n += int64(len(f.Data))
		}
		for _, f := range ch.Files {
			n += int64(len(f.Data))
		}
		for _, f := range ch.Raw {
			n += int64(len(f.Data))
		}
		n += int64(len(ch.Schema)) + jsonSize(ch.Values)
	}
	n += int64(len(rel.Manifest)) + jsonSize(rel.Config)
	for _, h := range rel.Hooks {
		n += int64(len(h.Manifest))
	}
	return n
}

// jsonSize is the size of v encoded as JSON (values are bounded by what the
// API server stores, so encoding them to count is cheap).
func jsonSize(v map[string]any) int64 {
	if len(v) == 0 {
		return 0
	}
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

// checkRecordSize refuses a record over max.
func checkRecordSize(rel *release.Release, max int64) error {
	if max <= 0 {
		return nil
	}
	if size := recordSize(rel); size > max {
		return &RecordTooLargeError{Release: rel.Namespace + "/" + rel.Name, Size: size, Max: max}
	}
	return nil
}
