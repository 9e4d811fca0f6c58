package layer

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Dependency is one item of an AddonsLayer's spec.prereqs.dependsOn: the layer
// Name must be Deployed at Version.
type Dependency struct {
	// Name of the AddonsLayer depended on.
	Name string
	// Version that layer must be Deployed at (its status.version).
	Version string
}

// String returns the dependency in its spec form, `<name>@<version>`.
func (d Dependency) String() string { return d.Name + "@" + d.Version }

// ParseDependency parses a dependsOn item `<name>@<version>`. It is strict:
// Kraan accepted an item without `@` and then waited forever for a layer at
// version "", so here exactly one `@`, a valid layer name and a non-empty
// version without spaces are required.
func ParseDependency(item string) (Dependency, error) {
	name, version, found := strings.Cut(item, "@")
	switch {
	case !found:
		return Dependency{}, fmt.Errorf("dependsOn item %q: missing '@': use <layer>@<version>", item)
	case strings.Contains(version, "@"):
		return Dependency{}, fmt.Errorf("dependsOn item %q: more than one '@': use <layer>@<version>", item)
	case name == "":
		return Dependency{}, fmt.Errorf("dependsOn item %q: empty layer name: use <layer>@<version>", item)
	case version == "":
		return Dependency{}, fmt.Errorf("dependsOn item %q: empty version: use <layer>@<version>", item)
	case strings.ContainsFunc(version, isSpace):
		return Dependency{}, fmt.Errorf("dependsOn item %q: version contains white space", item)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return Dependency{}, fmt.Errorf("dependsOn item %q: %q is not a valid layer name: %s",
			item, name, strings.Join(errs, "; "))
	}
	return Dependency{Name: name, Version: version}, nil
}

// ParseDependencies parses every dependsOn item. It reports all bad items at
// once, so that a user fixes a spec in one edit rather than one per reconcile.
func ParseDependencies(items []string) ([]Dependency, error) {
	deps := make([]Dependency, 0, len(items))
	var errs []error
	for _, item := range items {
		dep, err := ParseDependency(item)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		deps = append(deps, dep)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return deps, nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
