package layer

import (
	"fmt"
	"regexp"

	"github.com/Masterminds/semver/v3"
)

// k8sVersionWaitPrefix is Kraan's K8sVersion message, kept as the start of ours
// so that existing alerts on it keep matching.
const k8sVersionWaitPrefix = "AddonsLayer is waiting for the required K8sVersion"

// requiredVersionPattern is the CRD pattern of prereqs.k8sVersion without its
// empty case. The leading `v` is optional, and `1.16` means what `v1.16` means:
// Kraan's docs and test data write both. (Kraan itself compared with
// golang.org/x/mod/semver, which calls `1.16` invalid and then treats the
// requirement as met on any cluster.)
var requiredVersionPattern = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+){0,2}(-[0-9A-Za-z.-]+)?$`)

// CheckK8sVersion reports whether the API server's version (discovery's
// GitVersion, e.g. "v1.31.0-eks-1a2b3c") is at least required (e.g. "v1.30").
// An empty required is always met.
//
// Only major.minor.patch are compared. Kraan compared whole semver strings, so a
// provider's pre-release suffix made v1.31.0-eks-… older than v1.31 and the
// layer waited forever on EKS, GKE and k3s.
func CheckK8sVersion(serverGitVersion, required string) (bool, string) {
	if required == "" {
		return true, "no minimum Kubernetes version required"
	}
	want, err := parseRequiredVersion(required)
	if err != nil {
		return false, err.Error()
	}
	have, err := semver.NewVersion(serverGitVersion)
	if err != nil {
		return false, fmt.Sprintf("%s: cannot read the API server version %q: %v",
			k8sVersionWaitPrefix, serverGitVersion, err)
	}
	if versionCore(have).LessThan(versionCore(want)) {
		return false, fmt.Sprintf("%s: the API server is %s, prereqs.k8sVersion requires %s or later",
			k8sVersionWaitPrefix, serverGitVersion, required)
	}
	return true, fmt.Sprintf("the API server %s satisfies prereqs.k8sVersion %s", serverGitVersion, required)
}

func parseRequiredVersion(required string) (*semver.Version, error) {
	if !requiredVersionPattern.MatchString(required) {
		return nil, fmt.Errorf("prereqs.k8sVersion %q is not a version: use the form v1.30 or v1.30.2", required)
	}
	v, err := semver.NewVersion(required)
	if err != nil {
		return nil, fmt.Errorf("prereqs.k8sVersion %q is not a version: %w", required, err)
	}
	return v, nil
}

// versionCore drops pre-release and build metadata: v1.31.0-eks-abc → 1.31.0.
func versionCore(v *semver.Version) *semver.Version {
	return semver.New(v.Major(), v.Minor(), v.Patch(), "", "")
}
