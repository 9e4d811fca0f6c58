package plugin_test

import "testing"

// TestPlugin runs the package's tests in order on the shared environment:
// those that read come first, those that change something restore it, and
// the HelmRelease diff comes last, since its chart 0.2.0 stays published and
// the operator upgrades to it once its index cache expires.
// `go test -run 'TestPlugin/diff'` runs one group.
func TestPlugin(t *testing.T) {
	groups := []struct {
		name  string
		tests []namedTest
	}{
		{"get", []namedTest{{"Get_Layers_PrintsOneLinePerLayer", testGetLayersPrintsOneLinePerLayer}, {"Get_HelmReleases_AllNamespaces", testGetHelmReleasesAllNamespaces},
			{"Get_OutputYAMLAndJSON_AreTheObjects", testGetOutputYAMLAndJSONAreTheObjects}, {"Get_Watch_PrintsChanges", testGetWatchPrintsChanges}}},
		{"tree", []namedTest{{"Tree_Layer_ShowsReleasesAndTheirObjects", testTreeLayerShowsReleasesAndTheirObjects}, {"Tree_HelmRelease_ShowsItsObjects", testTreeHelmReleaseShowsItsObjects}}},
		{"trace", []namedTest{{"Trace_ReleaseObject_NamesReleaseLayerAndSources", testTraceReleaseObjectNamesReleaseLayerAndSources}, {"Trace_LayerObject_NamesLayer", testTraceLayerObjectNamesLayer}}},
		{"graph", []namedTest{{"Graph_SVG_HasOneNodePerLayerColouredByState", testGraphSVGHasOneNodePerLayerColouredByState}, {"Graph_DOT_NamesCycles", testGraphDOTNamesCycles}}},
		{"events", []namedTest{{"Events_Layer_MergesTheLayersAndItsObjectsEvents", testEventsLayerMergesTheLayersAndItsObjectsEvents}}},
		{"badinput", []namedTest{{"BadInput_UnknownLayer", testBadInputUnknownLayer}, {"BadInput_LayerSourceMissing", testBadInputLayerSourceMissing},
			{"BadInput_NoSecretsPermission", testBadInputNoSecretsPermission}, {"BadInput_NoCRDs", testBadInputNoCRDs}}},
		{"operate", []namedTest{{"SuspendResume_Layer_SetsHold", testSuspendResumeLayerSetsHold}, {"Reconcile_Layer_WaitsUntilDeployed", testReconcileLayerWaitsUntilDeployed}}},
		{"binary", []namedTest{{"Binary", testBinary}}},
		{"diff", []namedTest{{"Diff_Layer_InSync_ExitsZero", testDiffLayerInSyncExitsZero}, {"Diff_Layer_ChangedRemovedAndSecret", testDiffLayerChangedRemovedAndSecret},
			{"Diff_HelmRelease_ValueChartVersionAndRemovedObject", testDiffHelmReleaseValueChartVersionAndRemovedObject}}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, test := range g.tests {
				t.Run(test.name, test.run)
			}
		})
	}
}

type namedTest struct {
	name string
	run  func(*testing.T)
}
