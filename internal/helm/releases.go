package helm

import (
	"fmt"

	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
)

// v1Release is r as a version 1 release record, the only kind the engine
// makes and reads: Helm 4's storage and actions pass releases as
// release.Releaser, which a chart of API version v3 would make another type.
func v1Release(r ri.Releaser) (*release.Release, error) {
	switch rel := r.(type) {
	case *release.Release:
		return rel, nil
	case release.Release:
		return &rel, nil
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("unsupported release record type %T", r)
	}
}

// v1Releases is v1Release of each of rs.
func v1Releases(rs []ri.Releaser) ([]*release.Release, error) {
	out := make([]*release.Release, 0, len(rs))
	for _, r := range rs {
		rel, err := v1Release(r)
		if err != nil {
			return nil, err
		}
		if rel != nil {
			out = append(out, rel)
		}
	}
	return out, nil
}
