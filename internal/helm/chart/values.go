package chart

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"helm.sh/helm/v4/pkg/chart/common"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// MergeValuesFiles merges values files of the chart (paths relative to the
// chart's root, e.g. values-prod.yaml), in order: maps merge key by key,
// anything else is replaced, so a later file wins. As in Flux, the files
// replace the chart's values.yaml rather than add to it: list values.yaml
// first to keep its defaults. No files means the chart's values.yaml. It
// returns a new map and leaves the chart unchanged; set it as the chart's
// Values so release values are merged over it. A missing file is a
// MissingValuesFileError, unless ignoreMissing skips it.
func MergeValuesFiles(ch *helmchart.Chart, files []string, ignoreMissing bool) (map[string]any, error) {
	return mergeValuesFiles(ch, files, ignoreMissing, func(name string) ([]byte, error) {
		return chartFile(ch, name)
	})
}

// MergeArtifactValuesFiles is MergeValuesFiles for a chart loaded from an
// artifact directory. A path is looked up relative to the artifact's root
// first, as Flux does for charts in a GitRepository
// (./charts/app/values-prod.yaml, or a file outside the chart), then
// relative to the chart. Paths cannot leave root. A file over the default
// --max-chart-file-size is refused; a Fetcher applies its own cap.
func MergeArtifactValuesFiles(root string, ch *helmchart.Chart, files []string, ignoreMissing bool) (map[string]any, error) {
	return mergeArtifactValuesFiles(root, ch, files, ignoreMissing, DefaultMaxChartFileSize)
}

// mergeArtifactValuesFiles is MergeArtifactValuesFiles refusing files over
// maxFileSize.
func mergeArtifactValuesFiles(root string, ch *helmchart.Chart, files []string, ignoreMissing bool,
	maxFileSize int64) (map[string]any, error) {
	return mergeValuesFiles(ch, files, ignoreMissing, func(name string) ([]byte, error) {
		data, err := rootFile(root, name, maxFileSize)
		if errors.Is(err, fs.ErrNotExist) {
			return chartFile(ch, name)
		}
		return data, err
	})
}

// mergeValuesFiles merges the files read through read.
func mergeValuesFiles(ch *helmchart.Chart, files []string, ignoreMissing bool, read func(string) ([]byte, error)) (map[string]any, error) {
	if len(files) == 0 {
		return mergeMaps(map[string]any{}, ch.Values), nil
	}
	merged := map[string]any{}
	for _, name := range files {
		data, err := read(name)
		if errors.Is(err, fs.ErrNotExist) {
			if ignoreMissing {
				continue
			}
			return nil, &MissingValuesFileError{Chart: ch.Name(), File: name}
		}
		var limit *LimitError
		if errors.As(err, &limit) {
			return nil, err // it names the file already
		}
		if err != nil {
			return nil, fmt.Errorf("values file %s of chart %s: %w", name, ch.Name(), err)
		}
		values, err := common.ReadValues(data)
		if err != nil {
			return nil, fmt.Errorf("values file %s of chart %s: %w", name, ch.Name(), err)
		}
		merged = mergeMaps(merged, values)
	}
	return merged, nil
}

// chartFile finds a file among the chart's own files (not its subcharts').
func chartFile(ch *helmchart.Chart, name string) ([]byte, error) {
	clean := path.Clean(strings.TrimPrefix(name, "./"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, fs.ErrNotExist
	}
	for _, f := range ch.Raw {
		if f.Name == clean {
			return f.Data, nil
		}
	}
	return nil, fs.ErrNotExist
}

// rootFile reads a regular file inside root, of at most limit bytes;
// symlinks cannot lead out of it.
func rootFile(root, name string, limit int64) ([]byte, error) {
	p, err := securejoin.SecureJoin(root, name)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fs.ErrNotExist
	}
	what := fmt.Sprintf("values file %s in %s", name, artifactSource)
	if info.Size() > limit {
		return nil, &LimitError{What: what, Declared: sizeUnknown, Limit: limit, Flag: FlagMaxChartFileSize}
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return readCapped(f, what, limit, FlagMaxChartFileSize)
}

// mergeMaps merges b over a into a new map, as Helm merges -f files: nested
// maps key by key, other values replaced. Neither argument is changed.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
