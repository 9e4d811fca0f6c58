package layer

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseDependency_valid(t *testing.T) {
	tests := []struct {
		name string
		item string
		want Dependency
	}{
		{name: "kraan example", item: "base@0.1.01", want: Dependency{Name: "base", Version: "0.1.01"}},
		{name: "semver with v", item: "bootstrap@v1.2.3", want: Dependency{Name: "bootstrap", Version: "v1.2.3"}},
		{name: "dotted name", item: "apps.team-a@2024-01-01", want: Dependency{Name: "apps.team-a", Version: "2024-01-01"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseDependency(tt.item)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(got.String()).To(Equal(tt.item))
		})
	}
}

func TestParseDependency_invalid(t *testing.T) {
	tests := []struct {
		name    string
		item    string
		wantErr string
	}{
		{name: "no at", item: "base", wantErr: "missing '@'"},
		{name: "two ats", item: "base@1@2", wantErr: "more than one '@'"},
		{name: "empty name", item: "@1.0", wantErr: "empty layer name"},
		{name: "empty version", item: "base@", wantErr: "empty version"},
		{name: "empty item", item: "", wantErr: "missing '@'"},
		{name: "space in version", item: "base@1 .0", wantErr: "white space"},
		{name: "upper case name", item: "Base@1.0", wantErr: "not a valid layer name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := ParseDependency(tt.item)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).To(ContainSubstring("%q", tt.item))
		})
	}
}

func TestParseDependencies_reportsEveryBadItem(t *testing.T) {
	g := NewWithT(t)
	_, err := ParseDependencies([]string{"a@1", "b", "c@", "d@4"})
	g.Expect(err).To(MatchError(And(ContainSubstring(`"b"`), ContainSubstring(`"c@"`))))
	g.Expect(err.Error()).NotTo(ContainSubstring(`"a@1"`))
}

func TestParseDependencies_keepsOrder(t *testing.T) {
	g := NewWithT(t)
	deps, err := ParseDependencies([]string{"mgmt@0.1.01", "base@0.1.01"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deps).To(Equal([]Dependency{{Name: "mgmt", Version: "0.1.01"}, {Name: "base", Version: "0.1.01"}}))
}
