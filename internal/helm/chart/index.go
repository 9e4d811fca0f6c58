package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/Masterminds/semver/v3"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// index is what the operator keeps of a repository's index.yaml: for each
// chart, its valid versions newest first, each with the URL Helm downloads
// and the digest to check the archive against. Descriptions, keywords,
// maintainers, annotations and the rest of each entry's metadata are read
// past and never kept, so an index costs what the operator uses of it, not
// what its publisher chose to send: a 9 MiB index of one-letter keywords
// holds a few hundred bytes. An index is never changed once parsed.
type index struct {
	entries map[string][]indexVersion
	// size estimates the memory the index holds: its cost in the cache.
	size int64
}

// indexVersion is one version of a chart in an index.
type indexVersion struct {
	Version string
	// URL is the first of the entry's urls, the one Helm downloads (the
	// others are mirrors); "" when it lists none.
	URL    string
	Digest string
}

// Estimated memory of an index beyond its strings' bytes: a map entry, slice
// and string header per chart; three string headers per version. Slices are
// clipped to their length, so no spare capacity goes uncounted.
const (
	indexChartOverhead   = 96
	indexVersionOverhead = 48
	indexOverhead        = 128
)

// rawVersion is what is read of an index entry, by the JSON and YAML readers
// alike: the fields that resolve and check a version, and nothing else.
type rawVersion struct {
	APIVersion string   `json:"apiVersion"`
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Type       string   `json:"type"`
	URLs       firstURL `json:"urls"`
	Digest     string   `json:"digest"`
}

// firstURL reads a list of URLs keeping only the first: an entry may list
// any number of mirrors, none of which the operator uses.
type firstURL string

// UnmarshalJSON reads the list's first element and skips the rest unread.
func (u *firstURL) UnmarshalJSON(data []byte) error {
	*u = ""
	if isNull(string(data)) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return errors.New("urls is not a list")
	}
	if !dec.More() {
		return nil
	}
	var first string
	if err := dec.Decode(&first); err != nil {
		return fmt.Errorf("urls: %w", err)
	}
	*u = firstURL(first)
	return nil
}

// parseIndex parses index.yaml as Helm's repo.LoadIndexFile does (JSON, or
// strict YAML; entries that fail validation dropped; versions newest first)
// but keeps only what an index entry says about resolving and downloading a
// version (see index). Peak memory is bounded too: JSON is decoded straight
// into those fields; YAML in the layout index generators write is read a
// batch of entries at a time, with the fields that are not kept cut out
// before parsing (indexyaml.go). Only the fields kept are type-checked, and
// an entry's dependencies and maintainers, which Helm checks for null items
// and alias syntax, are not read: the chart's own Chart.yaml is validated
// when its archive is loaded.
func parseIndex(data []byte) (*index, error) {
	if len(data) == 0 {
		return nil, repo.ErrEmptyIndexYaml
	}
	b := newIndexBuilder()
	var err error
	if json.Valid(data) {
		err = parseIndexJSON(data, b)
	} else {
		err = parseIndexYAML(data, b)
	}
	if err != nil {
		return nil, err
	}
	if b.apiVersion == "" {
		return nil, repo.ErrNoAPIVersion
	}
	return b.finish(), nil
}

// parseIndexJSON decodes a JSON index. encoding/json skips the fields
// rawVersion lacks without allocating for them.
func parseIndexJSON(data []byte, b *indexBuilder) error {
	var doc struct {
		APIVersion string                   `json:"apiVersion"`
		Entries    map[string][]*rawVersion `json:"entries"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	b.apiVersion = doc.APIVersion
	for name, versions := range doc.Entries {
		b.chart(name)
		for _, v := range versions {
			b.add(name, v)
		}
	}
	return nil
}

// indexBuilder collects the valid versions of each chart.
type indexBuilder struct {
	apiVersion string
	entries    map[string][]indexVersion
}

func newIndexBuilder() *indexBuilder {
	return &indexBuilder{entries: map[string][]indexVersion{}}
}

// chart records that the index lists name, even if none of its versions is
// valid.
func (b *indexBuilder) chart(name string) {
	if _, ok := b.entries[name]; !ok {
		b.entries[name] = nil
	}
}

// add keeps v if Helm would: Helm drops empty entries and those whose
// metadata does not validate.
func (b *indexBuilder) add(name string, v *rawVersion) {
	if v == nil {
		return
	}
	// Helm 2 indexes had no apiVersion per entry; Helm reads them as v1.
	apiVersion := v.APIVersion
	if apiVersion == "" {
		apiVersion = helmchart.APIVersionV1
	}
	md := &helmchart.Metadata{APIVersion: apiVersion, Name: v.Name, Version: v.Version, Type: v.Type}
	if err := md.Validate(); err != nil {
		return
	}
	b.entries[name] = append(b.entries[name], indexVersion{Version: v.Version, URL: string(v.URLs), Digest: v.Digest})
}

// finish sorts each chart's versions newest first, as Helm's SortEntries
// does (Validate has checked they are semver), and sizes the index.
func (b *indexBuilder) finish() *index {
	size := int64(indexOverhead)
	for name, versions := range b.entries {
		versions = sortNewestFirst(versions)
		b.entries[name] = versions
		size += indexChartOverhead + int64(len(name))
		for _, v := range versions {
			size += indexVersionOverhead + int64(len(v.Version)+len(v.URL)+len(v.Digest))
		}
	}
	return &index{entries: b.entries, size: size}
}

// sortNewestFirst returns versions sorted newest first in a slice of their
// exact length; equal versions keep the index's order.
func sortNewestFirst(versions []indexVersion) []indexVersion {
	if len(versions) == 0 {
		return nil
	}
	parsed := make([]*semver.Version, len(versions))
	order := make([]int, len(versions))
	for i, v := range versions {
		parsed[i], _ = semver.NewVersion(v.Version) // Validate parsed it already
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return parsed[order[j]].LessThan(parsed[order[i]]) })
	sorted := make([]indexVersion, len(versions))
	for i, o := range order {
		sorted[i] = versions[o]
	}
	return sorted
}

// pickVersion finds the index entry of the highest version of name that
// satisfies constraint.
func pickVersion(idx *index, indexURL, name, constraint string) (indexVersion, error) {
	entries := idx.entries[name]
	if len(entries) == 0 {
		return indexVersion{}, &ChartNotFoundError{Chart: name, Source: indexURL}
	}
	versions := make([]string, len(entries))
	for i, cv := range entries {
		versions[i] = cv.Version
	}
	version, err := resolveVersion(name, constraint, versions)
	if err != nil {
		return indexVersion{}, err
	}
	for _, cv := range entries {
		if cv.Version == version {
			if cv.URL == "" {
				return indexVersion{}, &InvalidIndexError{URL: indexURL, Err: fmt.Errorf("%s %s lists no URL", name, version)}
			}
			return cv, nil
		}
	}
	return indexVersion{}, fmt.Errorf("internal error: resolved version %s of %s is not in the index", version, name)
}
