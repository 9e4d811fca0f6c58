package helmrelease

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

func step(action helm.Action, failed bool) helm.ActionTaken {
	s := helm.ActionTaken{Action: action}
	if failed {
		s.Err = errors.New(string(action) + " failed")
	}
	return s
}

func TestReleaseActionOf_TheActionThatMadeTheRevision(t *testing.T) {
	deployed2 := []kraanv1.Snapshot{{Name: "app", Version: 2, Status: "deployed", Action: kraanv1.ReleaseActionUpgrade}}
	pending3 := []kraanv1.Snapshot{{Name: "app", Version: 3, Status: "pending-upgrade", Action: kraanv1.ReleaseActionUpgrade}}
	tests := []struct {
		name    string
		latest  *helm.Revision
		steps   []helm.ActionTaken
		history []kraanv1.Snapshot
		want    kraanv1.ReleaseAction
	}{
		{"first install", &helm.Revision{Name: "app", Version: 1, Status: "deployed"},
			[]helm.ActionTaken{step(helm.ActionInstall, false)}, nil, kraanv1.ReleaseActionInstall},
		{"install then test", &helm.Revision{Name: "app", Version: 1, Status: "deployed"},
			[]helm.ActionTaken{step(helm.ActionInstall, false), step(helm.ActionTest, false)}, nil, kraanv1.ReleaseActionInstall},
		{"upgrade", &helm.Revision{Name: "app", Version: 3, Status: "deployed"},
			[]helm.ActionTaken{step(helm.ActionUpgrade, false)}, deployed2, kraanv1.ReleaseActionUpgrade},
		{"failed upgrade rolled back", &helm.Revision{Name: "app", Version: 4, Status: "deployed"},
			[]helm.ActionTaken{step(helm.ActionUpgrade, true), step(helm.ActionRollback, false)}, deployed2, kraanv1.ReleaseActionRollback},
		{"failed install uninstalled, history kept", &helm.Revision{Name: "app", Version: 1, Status: "uninstalled"},
			[]helm.ActionTaken{step(helm.ActionInstall, true), step(helm.ActionUninstall, false)}, nil,
			kraanv1.ReleaseActionUninstallRemediation},
		{"a resync keeps what was reported", &helm.Revision{Name: "app", Version: 2, Status: "deployed"},
			nil, deployed2, kraanv1.ReleaseActionUpgrade},
		{"a test keeps what was reported", &helm.Revision{Name: "app", Version: 2, Status: "deployed"},
			[]helm.ActionTaken{step(helm.ActionTest, false)}, deployed2, kraanv1.ReleaseActionUpgrade},
		{"an unlock keeps the action of the revision it marks failed", &helm.Revision{Name: "app", Version: 3, Status: "failed"},
			[]helm.ActionTaken{step(helm.ActionUnlock, false)}, pending3, kraanv1.ReleaseActionUpgrade},
		{"a revision no step explains says nothing", &helm.Revision{Name: "app", Version: 7, Status: "deployed"}, nil, deployed2, ""},
		// A run that took its maximum of steps reports storage as it was
		// before the last one: the next run finds the rollback's revision.
		{"a revision an earlier run made, by Helm's description", &helm.Revision{Name: "app", Version: 5, Status: "deployed",
			Description: "Rollback to 3"}, nil, []kraanv1.Snapshot{{Name: "app", Version: 4, Status: "failed",
			Action: kraanv1.ReleaseActionUpgrade}}, kraanv1.ReleaseActionRollback},
		{"an unlocked revision status had not seen", &helm.Revision{Name: "app", Version: 3, Status: "failed",
			Description: "Release was pending-upgrade when the operation running it was interrupted"},
			[]helm.ActionTaken{step(helm.ActionUnlock, false)}, deployed2, ""},
		{"no release", nil, []helm.ActionTaken{step(helm.ActionUninstall, false)}, deployed2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(releaseActionOf(tt.latest, tt.steps, tt.history)).To(Equal(tt.want))
		})
	}
}

func TestActionFromDescription_HelmsWords(t *testing.T) {
	tests := map[string]kraanv1.ReleaseAction{
		"Install complete":                     kraanv1.ReleaseActionInstall,
		"Upgrade complete":                     kraanv1.ReleaseActionUpgrade,
		`Upgrade "app" failed: timed out`:      kraanv1.ReleaseActionUpgrade,
		"Rollback to 2":                        kraanv1.ReleaseActionRollback,
		`Rollback "app" failed: hook failed`:   kraanv1.ReleaseActionRollback,
		"Uninstallation complete":              kraanv1.ReleaseActionUninstall,
		`Release "app" failed: bad manifest`:   kraanv1.ReleaseActionInstall,
		"superseded by new release":            "",
		"Release was pending-install when ...": "",
	}
	for description, want := range tests {
		rev := &helm.Revision{Version: 1, Description: description}
		NewWithT(t).Expect(actionFromDescription(rev)).To(Equal(want), description)
	}
}

func TestStorageChangingSteps_DropsTheFailedStepThatEndedTheRun(t *testing.T) {
	g := NewWithT(t)
	steps := []helm.ActionTaken{step(helm.ActionUpgrade, true), step(helm.ActionRollback, true)}
	// The engine stops at a failed step with its error only when storage is
	// as the step found it: that rollback wrote nothing.
	g.Expect(storageChangingActions(steps, steps[1].Err)).To(Equal(steps[:1]))
	// RetryOnFailure stops after a failed release was written.
	g.Expect(storageChangingActions(steps[:1], &helm.RetryLater{Err: steps[0].Err})).To(Equal(steps[:1]))
	g.Expect(storageChangingActions(steps[:1], nil)).To(Equal(steps[:1]))
	ok := []helm.ActionTaken{step(helm.ActionInstall, false)}
	g.Expect(storageChangingActions(ok, errors.New("reading storage"))).To(Equal(ok))
}

func TestInventoryOf_FluxIDsWithoutHooks(t *testing.T) {
	g := NewWithT(t)
	docs := []string{
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: app, namespace: team}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: app, namespace: team}}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: "system:app"}}`,
		`{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: team, annotations: {helm.sh/hook: pre-upgrade}}}`,
		`{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: widgets.example.com}}`,
	}
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, doc := range docs {
		obj := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		objs = append(objs, obj)
	}
	g.Expect(inventoryOf(objs)).To(Equal(&kraanv1.ResourceInventory{Entries: []kraanv1.ResourceRef{
		{ID: "team_app_apps_Deployment", Version: "v1"},
		{ID: "team_app__ConfigMap", Version: "v1"},
		{ID: "_system__app_rbac.authorization.k8s.io_ClusterRole", Version: "v1"}, // cli-utils' escape of ':'
		{ID: "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"},
	}}))
	g.Expect(inventoryOf(nil).Entries).NotTo(BeNil(), "an empty inventory is written as entries: [], as Flux does")
}
