package chart

import "context"

// ResolveVersion says which version of chart name the repository resolves
// constraint to: from the cached index or tag list while it is fresh, or
// asking the repository again with revalidate. No chart is downloaded, so a
// watcher can tell which releases a changed index concerns at the cost of
// one index request per repository.
func (f *Fetcher) ResolveVersion(ctx context.Context, r *Repository, name, constraint string, revalidate bool) (string, error) {
	if err := r.validate(); err != nil {
		return "", err
	}
	scope := r.cacheScope()
	if r.isOCI() {
		base := ociBase(r, name)
		repo, err := f.ociRepository(r, base)
		if err != nil {
			return "", err
		}
		tags, err := f.ociTags(ctx, repo, r, scope, base, name, revalidate)
		if err != nil {
			return "", err
		}
		return resolveVersion(name, constraint, tags)
	}
	entry, err := f.index(ctx, r, scope, revalidate)
	if err != nil {
		return "", err
	}
	cv, err := pickVersion(entry.index, r.indexURL(), name, constraint)
	if err != nil {
		return "", err
	}
	return cv.Version, nil
}
