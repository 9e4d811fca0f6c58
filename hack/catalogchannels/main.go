// Command catalogchannels writes the olm.channel documents (and the
// olm.deprecations document) of the file-based catalog `make catalog`
// builds, from the bundles the catalog holds: each entry is a bundle's CSV
// name with the `replaces` and the `olm.skipRange` annotation its CSV
// declares, so the channel says what the bundles say. Bundles are given
// oldest first; each after the first must replace the one before it, with
// a higher version, or the command fails: a release that forgot to set
// `replaces` would leave the channel without an upgrade path.
//
//	catalogchannels --package kraan-operator --channel alpha --channel stable \
//	    --deprecated-channel 'stable=use alpha' bundle-history/0.1.0 bundle
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// skipRangeAnnotation names the versions a bundle upgrades from directly.
const skipRangeAnnotation = "olm.skipRange"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "catalogchannels:", err)
		os.Exit(1)
	}
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("catalogchannels", flag.ContinueOnError)
	pkg := fs.String("package", "", "the package name")
	var channels, deprecated listFlag
	fs.Var(&channels, "channel", "a channel holding every bundle (repeat for more)")
	fs.Var(&deprecated, "deprecated-channel", "NAME=MESSAGE: mark the channel NAME deprecated with MESSAGE (repeat for more)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pkg == "" || len(channels) == 0 || fs.NArg() == 0 {
		return errors.New("want --package, at least one --channel and the bundle directories, oldest first")
	}
	bundles := make([]bundle, 0, fs.NArg())
	for _, dir := range fs.Args() {
		b, err := readBundle(dir)
		if err != nil {
			return err
		}
		bundles = append(bundles, b)
	}
	if err := checkChain(bundles); err != nil {
		return err
	}
	docs := make([]any, 0, len(channels)+1)
	for _, ch := range channels {
		docs = append(docs, newChannel(*pkg, ch, bundles))
	}
	if len(deprecated) > 0 {
		doc, err := newDeprecations(*pkg, channels, deprecated)
		if err != nil {
			return err
		}
		docs = append(docs, doc)
	}
	for _, d := range docs {
		y, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(out, "---\n%s", y); err != nil {
			return err
		}
	}
	return nil
}

// bundle is what a channel entry needs from a bundle's CSV.
type bundle struct {
	dir, name, replaces, skipRange string
	version                        *semver.Version
}

func readBundle(dir string) (bundle, error) {
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(files) != 1 {
		return bundle{}, fmt.Errorf("%s/manifests must hold exactly one *.clusterserviceversion.yaml (found %d)", dir, len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return bundle{}, err
	}
	var csv struct {
		Metadata struct {
			Name        string
			Annotations map[string]string
		}
		Spec struct{ Version, Replaces string }
	}
	if err := yaml.Unmarshal(data, &csv); err != nil {
		return bundle{}, fmt.Errorf("%s: %w", files[0], err)
	}
	v, err := semver.StrictNewVersion(csv.Spec.Version)
	if err != nil {
		return bundle{}, fmt.Errorf("%s: spec.version %q: %w", files[0], csv.Spec.Version, err)
	}
	return bundle{dir: dir, name: csv.Metadata.Name, replaces: csv.Spec.Replaces,
		skipRange: csv.Metadata.Annotations[skipRangeAnnotation], version: v}, nil
}

// checkChain fails unless every bundle after the first replaces the one
// before it with a higher version, and skips (when it has a skipRange) the
// versions below its own only.
func checkChain(bundles []bundle) error {
	var errs []error
	for i, b := range bundles {
		if b.skipRange != "" {
			c, err := semver.NewConstraint(b.skipRange)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %s %q: %w", b.dir, skipRangeAnnotation, b.skipRange, err))
			case c.Check(b.version):
				errs = append(errs, fmt.Errorf("%s: %s %q includes its own version %s", b.dir, skipRangeAnnotation, b.skipRange, b.version))
			}
		}
		if i == 0 {
			continue
		}
		prev := bundles[i-1]
		if b.replaces != prev.name {
			errs = append(errs, fmt.Errorf("%s: %s replaces %q, want %s (the bundle before it in the channel): set spec.replaces in the CSV base",
				b.dir, b.name, b.replaces, prev.name))
		}
		if !b.version.GreaterThan(prev.version) {
			errs = append(errs, fmt.Errorf("%s: version %s is not above %s's %s", b.dir, b.version, prev.name, prev.version))
		}
	}
	return errors.Join(errs...)
}

// The documents written: an olm.channel and olm.deprecations, as opm reads them.
type (
	channelDoc struct {
		Schema  string         `json:"schema"`
		Package string         `json:"package"`
		Name    string         `json:"name"`
		Entries []channelEntry `json:"entries"`
	}
	channelEntry struct {
		Name      string `json:"name"`
		Replaces  string `json:"replaces,omitempty"`
		SkipRange string `json:"skipRange,omitempty"`
	}
	deprecationsDoc struct {
		Schema  string             `json:"schema"`
		Package string             `json:"package"`
		Entries []deprecationEntry `json:"entries"`
	}
	deprecationEntry struct {
		Reference reference `json:"reference"`
		Message   string    `json:"message"`
	}
	reference struct {
		Schema string `json:"schema"`
		Name   string `json:"name"`
	}
)

const schemaChannel = "olm.channel"

// newChannel is an olm.channel holding every bundle.
func newChannel(pkg, name string, bundles []bundle) channelDoc {
	entries := make([]channelEntry, 0, len(bundles))
	for _, b := range bundles {
		entries = append(entries, channelEntry{Name: b.name, Replaces: b.replaces, SkipRange: b.skipRange})
	}
	return channelDoc{Schema: schemaChannel, Package: pkg, Name: name, Entries: entries}
}

// newDeprecations is the olm.deprecations document listing the channels
// given as deprecated, each with its message: OLM shows it on the
// Subscriptions that follow the channel.
func newDeprecations(pkg string, channels, deprecated []string) (deprecationsDoc, error) {
	doc := deprecationsDoc{Schema: "olm.deprecations", Package: pkg}
	for _, d := range deprecated {
		name, message, ok := strings.Cut(d, "=")
		if !ok || message == "" {
			return doc, fmt.Errorf("--deprecated-channel %q: want NAME=MESSAGE", d)
		}
		if !slices.Contains(channels, name) {
			return doc, fmt.Errorf("--deprecated-channel %s: not a --channel", name)
		}
		doc.Entries = append(doc.Entries, deprecationEntry{Reference: reference{Schema: schemaChannel, Name: name}, Message: message})
	}
	return doc, nil
}
