package layer

import "testing"

// FuzzParseDependency feeds arbitrary dependsOn items to ParseDependency. It
// proves that parsing never panics and that an accepted item round-trips: its
// String form is the item itself and parses back to the same Dependency.
func FuzzParseDependency(f *testing.F) {
	for _, seed := range []string{
		"base@0.1.0", "apps@v1.2.3-rc.1+build", "a.b-c@x", "base", "base@", "@1.0", "a@b@c", "base@1 0", "Base@1", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, item string) {
		dep, err := ParseDependency(item)
		if err != nil {
			return
		}
		if dep.String() != item {
			t.Fatalf("%q parsed to %#v, which formats as %q", item, dep, dep.String())
		}
		again, err := ParseDependency(dep.String())
		if err != nil || again != dep {
			t.Fatalf("%q parsed to %#v; its String %q parses to %#v, %v", item, dep, dep.String(), again, err)
		}
	})
}
