package chart

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

// parseIndex parses index.yaml as Helm's repo.LoadIndexFile does (which
// only reads files): JSON or strict YAML, entries that fail validation
// dropped, versions sorted newest first.
func parseIndex(data []byte) (*repo.IndexFile, error) {
	if len(data) == 0 {
		return nil, repo.ErrEmptyIndexYaml
	}
	index := &repo.IndexFile{}
	var err error
	if json.Valid(data) {
		err = json.Unmarshal(data, index)
	} else {
		err = yaml.UnmarshalStrict(data, index)
	}
	if err != nil {
		return nil, err
	}
	if index.APIVersion == "" {
		return nil, repo.ErrNoAPIVersion
	}
	for name, versions := range index.Entries {
		index.Entries[name] = validVersions(versions)
	}
	index.SortEntries()
	return index, nil
}

// validVersions drops entries Helm would skip: empty ones and those whose
// metadata does not validate.
func validVersions(versions repo.ChartVersions) repo.ChartVersions {
	valid := versions[:0]
	for _, cv := range versions {
		if cv == nil || cv.Metadata == nil {
			continue
		}
		// Helm 2 indexes had no apiVersion per entry; Helm reads them as v1.
		if cv.APIVersion == "" {
			cv.APIVersion = helmchart.APIVersionV1
		}
		if err := cv.Validate(); err != nil && !skippable(err) {
			continue
		}
		valid = append(valid, cv)
	}
	return valid
}

// skippable is the validation error Helm tolerates in indexes: some
// repositories (JFrog) strip dependency aliases, leaving duplicate names.
func skippable(err error) bool {
	var verr helmchart.ValidationError
	return errors.As(err, &verr) &&
		strings.HasPrefix(verr.Error(), "validation: more than one dependency with name or alias")
}

// pickVersion finds the index entry of the highest version of name that
// satisfies constraint.
func pickVersion(index *repo.IndexFile, indexURL, name, constraint string) (*repo.ChartVersion, error) {
	entries := index.Entries[name]
	if len(entries) == 0 {
		return nil, &ChartNotFoundError{Chart: name, Source: indexURL}
	}
	versions := make([]string, len(entries))
	for i, cv := range entries {
		versions[i] = cv.Version
	}
	version, err := resolveVersion(name, constraint, versions)
	if err != nil {
		return nil, err
	}
	for _, cv := range entries {
		if cv.Version == version {
			if len(cv.URLs) == 0 {
				return nil, &InvalidIndexError{URL: indexURL, Err: fmt.Errorf("%s %s lists no URL", name, version)}
			}
			return cv, nil
		}
	}
	return nil, fmt.Errorf("internal error: resolved version %s of %s is not in the index", version, name)
}
