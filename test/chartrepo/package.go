package chartrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// Archive is a packaged chart, as `helm package` writes it.
type Archive struct {
	// Name and Version come from the packaged Chart.yaml.
	Name    string
	Version string
	// Data is the gzipped tar archive.
	Data []byte
	// Digest is the hex SHA-256 of Data, the form index.yaml uses.
	Digest string
}

// FileName is the archive's conventional file name, <name>-<version>.tgz.
func (a *Archive) FileName() string {
	return fmt.Sprintf("%s-%s.tgz", a.Name, a.Version)
}

// ChartDir is the absolute path of a test chart in testdata/charts at the
// repository root, found from this source file so that it works from any
// package's tests.
func ChartDir(name string) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("chartrepo: cannot locate its own source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "charts", name)
}

// Package packages the chart directory dir with Helm's SDK (chartutil.Save).
// A non-empty version replaces the version of Chart.yaml in the archive, which
// is how tests publish several versions of one chart.
func Package(dir, version string) (*Archive, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	if version != "" {
		ch.Metadata.Version = version
	}
	return save(ch)
}

// save writes the chart to a temporary directory, since chartutil.Save only
// writes files, and reads the archive back.
func save(ch *helmchart.Chart) (*Archive, error) {
	tmp, err := os.MkdirTemp("", "chartrepo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path, err := chartutil.Save(ch, tmp)
	if err != nil {
		return nil, fmt.Errorf("packaging chart %s: %w", ch.Name(), err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return &Archive{
		Name:    ch.Name(),
		Version: ch.Metadata.Version,
		Data:    data,
		Digest:  hex.EncodeToString(sum[:]),
	}, nil
}
