package depfloors

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// floor is one line of floors.txt.
type floor struct {
	module, version, why string
	line                 int
}

// readFloors parses floors.txt: "module version why…", # comments.
func readFloors(path string) ([]floor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []floor
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || !semver.IsValid(fields[1]) {
			return nil, fmt.Errorf("%s:%d: want `module version why`, with a semantic version: %q", path, n, line)
		}
		out = append(out, floor{module: fields[0], version: fields[1], why: strings.Join(fields[2:], " "), line: n})
	}
	return out, sc.Err()
}

// belowFloors lists the requirements of gomod older than their floor.
func belowFloors(gomod *modfile.File, floors []floor) []string {
	var out []string
	for _, fl := range floors {
		for _, r := range gomod.Require {
			if r.Mod.Path == fl.module && semver.Compare(r.Mod.Version, fl.version) < 0 {
				out = append(out, fmt.Sprintf("%s %s is older than its floor %s (%s): go get %s@%s",
					r.Mod.Path, r.Mod.Version, fl.version, fl.why, fl.module, fl.version))
			}
		}
	}
	return out
}

// TestGoMod_NoModuleBelowItsFloor: the module's go.mod requires no listed
// module older than floors.txt allows.
func TestGoMod_NoModuleBelowItsFloor(t *testing.T) {
	g := NewWithT(t)
	floors, err := readFloors("floors.txt")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(floors).NotTo(BeEmpty())
	path := filepath.Join("..", "..", "go.mod")
	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	gomod, err := modfile.Parse(path, data, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(belowFloors(gomod, floors)).To(BeEmpty())
	// Every floor names a module go.mod requires: a floor of a module
	// dropped from the graph is a stale line.
	required := map[string]bool{}
	for _, r := range gomod.Require {
		required[r.Mod.Path] = true
	}
	for _, fl := range floors {
		g.Expect(required).To(HaveKey(fl.module), "floors.txt:%d names %s, which go.mod does not require", fl.line, fl.module)
	}
}

// TestBelowFloors_NamesTheModuleAndTheFix: the check fails on an older
// version, direct or indirect, and passes on the floor and above.
func TestBelowFloors_NamesTheModuleAndTheFix(t *testing.T) {
	g := NewWithT(t)
	gomod, err := modfile.Parse("go.mod", []byte("module x\n\ngo 1.26\n\nrequire (\n"+
		"\tgithub.com/google/cel-go v0.29.2\n\tgolang.org/x/image v0.30.0 // indirect\n\toras.land/oras-go/v2 v2.7.0\n)\n"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	floors := []floor{
		{module: "github.com/google/cel-go", version: "v0.30.0", why: "GHSA-gcjh-h69q-9w9g"},
		{module: "golang.org/x/image", version: "v0.48.0", why: "advisories"},
		{module: "oras.land/oras-go/v2", version: "v2.7.0", why: "newest"},
	}
	g.Expect(belowFloors(gomod, floors)).To(Equal([]string{
		"github.com/google/cel-go v0.29.2 is older than its floor v0.30.0 (GHSA-gcjh-h69q-9w9g): go get github.com/google/cel-go@v0.30.0",
		"golang.org/x/image v0.30.0 is older than its floor v0.48.0 (advisories): go get golang.org/x/image@v0.48.0",
	}))
}
