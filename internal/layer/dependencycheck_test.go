package layer

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// deployed is a dependency layer fully Deployed at 0.1.0, revision main@sha1:aaa.
func deployed(opts ...func(*DependencyState)) *DependencyState {
	s := &DependencyState{
		Exists: true, SpecVersion: "0.1.0", Generation: 3, ObservedGeneration: 3,
		Version: "0.1.0", State: kraanv1.DeployedState, Deployed: metav1.ConditionTrue,
		Revision: "main@sha1:aaa", SourceRevision: "main@sha1:aaa",
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func TestCheckDependency(t *testing.T) {
	base010 := Dependency{Name: "base", Version: "0.1.0"}
	base020 := Dependency{Name: "base", Version: "0.2.0"}
	tests := []struct {
		name     string
		dep      Dependency
		observed *DependencyState
		wantMet  bool
		wantMsg  string
	}{
		{name: "deployed at version and revision", dep: base010, observed: deployed(), wantMet: true,
			wantMsg: "layer base is Deployed at version 0.1.0, revision main@sha1:aaa"},
		{name: "spec version optional", dep: base010, observed: deployed(func(s *DependencyState) { s.SpecVersion = "" }),
			wantMet: true},
		{name: "not found (nil)", dep: base010, observed: nil, wantMsg: "Waiting for layer: base, version: 0.1.0 to be applied. Layer: base, not found"},
		{name: "not found (Exists false)", dep: base010, observed: &DependencyState{}, wantMsg: "not found: create it or correct prereqs.dependsOn"},
		{
			name: "kraan #64: version bumped, status still Deployed at old version, generation not handled",
			dep:  base020,
			observed: deployed(func(s *DependencyState) {
				s.SpecVersion, s.Generation = "0.2.0", 4
			}),
			wantMsg: "Layer: base, observed generation: 3, generation: 4.",
		},
		{
			name: "kraan #64: generation handled, still Deployed at old version",
			dep:  base020,
			observed: deployed(func(s *DependencyState) {
				s.SpecVersion, s.Generation, s.ObservedGeneration = "0.2.0", 4, 4
			}),
			wantMsg: "Layer: base, current version is: 0.1.0, require version: 0.2.0.",
		},
		{
			name: "kraan #64: new version applying",
			dep:  base020,
			observed: deployed(func(s *DependencyState) {
				s.SpecVersion, s.Version, s.State, s.Deployed = "0.2.0", "0.2.0", kraanv1.ApplyingState, metav1.ConditionFalse
			}),
			wantMsg: "Layer: base, current state: Applying.",
		},
		{name: "dependency never asked for that version", dep: base020, observed: deployed(),
			wantMsg: "spec.version is: 0.1.0, require version: 0.2.0: change that layer's version or this layer's prereqs.dependsOn."},
		{name: "older version deployed, spec unknown", dep: base020,
			observed: deployed(func(s *DependencyState) { s.SpecVersion = "" }),
			wantMsg:  "current version is: 0.1.0, require version: 0.2.0."},
		{name: "deployed by Kraan, not taken over", dep: base010, observed: deployed(func(s *DependencyState) { s.AwaitsTakeOver = true }),
			wantMsg: "Layer: base, is still Kraan's: take it over first (kubectl kraan takeover base)."},
		{name: "failed", dep: base010, observed: deployed(func(s *DependencyState) {
			s.State, s.Deployed = kraanv1.FailedState, metav1.ConditionFalse
		}), wantMsg: "current state: Failed."},
		{name: "state Deployed but condition not True", dep: base010,
			observed: deployed(func(s *DependencyState) { s.Deployed = metav1.ConditionUnknown }),
			wantMsg:  "current state: Deployed."},
		{name: "state Deployed but no condition", dep: base010,
			observed: deployed(func(s *DependencyState) { s.Deployed = "" }), wantMsg: "current state: Deployed."},
		{name: "no state yet", dep: base010, observed: deployed(func(s *DependencyState) { s.State = "" }),
			wantMsg: "current state: <none>."},
		{name: "source moved to a new commit", dep: base010,
			observed: deployed(func(s *DependencyState) { s.SourceRevision = "main@sha1:bbb" }),
			wantMsg: "Waiting for layer: base, to apply source revision: main@sha1:bbb. Layer: base, " +
				"current state: Deployed, deployed revision: main@sha1:aaa."},
		{name: "source has no artifact", dep: base010,
			observed: deployed(func(s *DependencyState) { s.SourceRevision = "" }),
			wantMsg:  "its source has no ready artifact."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			met, msg := CheckDependency(tt.dep, tt.observed)
			g.Expect(met).To(Equal(tt.wantMet))
			g.Expect(msg).To(ContainSubstring(tt.wantMsg))
		})
	}
}

func TestCheckDependencies_firstUnmetWins(t *testing.T) {
	g := NewWithT(t)
	layers := map[string]*DependencyState{
		"bootstrap": deployed(),
		"base":      deployed(func(s *DependencyState) { s.State = kraanv1.ApplyingState }),
	}
	lookup := func(name string) *DependencyState { return layers[name] }
	deps := []Dependency{{Name: "bootstrap", Version: "0.1.0"}, {Name: "mgmt", Version: "0.1.0"}, {Name: "base", Version: "0.1.0"}}
	met, msg := CheckDependencies(deps, lookup)
	g.Expect(met).To(BeFalse())
	g.Expect(msg).To(HavePrefix("Waiting for layer: mgmt,"))
}

func TestCheckDependencies_allMet(t *testing.T) {
	g := NewWithT(t)
	lookup := func(string) *DependencyState { return deployed() }
	met, msg := CheckDependencies([]Dependency{{Name: "a", Version: "0.1.0"}, {Name: "b", Version: "0.1.0"}}, lookup)
	g.Expect(met).To(BeTrue())
	g.Expect(msg).To(Equal("all 2 layer dependencies are Deployed"))
}

func TestCheckDependencies_none(t *testing.T) {
	g := NewWithT(t)
	met, msg := CheckDependencies(nil, func(string) *DependencyState { panic("not called") })
	g.Expect(met).To(BeTrue())
	g.Expect(msg).To(Equal("no layer dependencies"))
}
