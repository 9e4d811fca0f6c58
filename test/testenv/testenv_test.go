package testenv

import "testing"

func TestMessageProblems(t *testing.T) {
	bad := []string{
		"waiting for HelmRelease a/b: <nil>",
		"value %!s(int=1)",
		".stringData.password: expected string, got &value.valueUnstructured{Value:*****}",
		"object v1.ObjectMeta{Name:x}",
	}
	for _, msg := range bad {
		if MessageProblems(msg) == nil {
			t.Errorf("%q passed", msg)
		}
	}
	good := []string{
		"Release ns/app.v1 with chart small@0.1.0 is deployed",
		`no version of small matches >=9.0.0; available: 0.2.0, 0.1.0`,
		"values do not match the schema of chart small: at '/replicaCount': got string, want integer",
		"map literal {a: b} in YAML",
	}
	for _, msg := range good {
		if err := MessageProblems(msg); err != nil {
			t.Errorf("%q failed: %v", msg, err)
		}
	}
}
