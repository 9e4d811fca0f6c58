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
		{"get", []namedTest{{"Get_Layers_PrintsOneLinePerLayer", testGet_Layers_PrintsOneLinePerLayer}, {"Get_HelmReleases_AllNamespaces", testGet_HelmReleases_AllNamespaces},
			{"Get_OutputYAMLAndJSON_AreTheObjects", testGet_OutputYAMLAndJSON_AreTheObjects}, {"Get_Watch_PrintsChanges", testGet_Watch_PrintsChanges}}},
		{"tree", []namedTest{{"Tree_Layer_ShowsReleasesAndTheirObjects", testTree_Layer_ShowsReleasesAndTheirObjects}, {"Tree_HelmRelease_ShowsItsObjects", testTree_HelmRelease_ShowsItsObjects}}},
		{"trace", []namedTest{{"Trace_ReleaseObject_NamesReleaseLayerAndSources", testTrace_ReleaseObject_NamesReleaseLayerAndSources}, {"Trace_LayerObject_NamesLayer", testTrace_LayerObject_NamesLayer}}},
		{"graph", []namedTest{{"Graph_SVG_HasOneNodePerLayerColouredByState", testGraph_SVG_HasOneNodePerLayerColouredByState}, {"Graph_DOT_NamesCycles", testGraph_DOT_NamesCycles}}},
		{"events", []namedTest{{"Events_Layer_MergesTheLayersAndItsObjectsEvents", testEvents_Layer_MergesTheLayersAndItsObjectsEvents}}},
		{"badinput", []namedTest{{"BadInput_UnknownLayer", testBadInput_UnknownLayer}, {"BadInput_LayerSourceMissing", testBadInput_LayerSourceMissing},
			{"BadInput_NoSecretsPermission", testBadInput_NoSecretsPermission}, {"BadInput_NoCRDs", testBadInput_NoCRDs}}},
		{"operate", []namedTest{{"SuspendResume_Layer_SetsHold", testSuspendResume_Layer_SetsHold}, {"Reconcile_Layer_WaitsUntilDeployed", testReconcile_Layer_WaitsUntilDeployed}}},
		{"binary", []namedTest{{"Binary", testBinary}}},
		{"diff", []namedTest{{"Diff_Layer_InSync_ExitsZero", testDiff_Layer_InSync_ExitsZero}, {"Diff_Layer_ChangedRemovedAndSecret", testDiff_Layer_ChangedRemovedAndSecret},
			{"Diff_HelmRelease_ValueChartVersionAndRemovedObject", testDiff_HelmRelease_ValueChartVersionAndRemovedObject}}},
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
