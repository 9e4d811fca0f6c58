package helm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// signingDriver is Helm's storage driver with the operator's signatures:
// every record it creates is signed; a record it updates is signed again
// only when it was read verified (a status update must not launder an
// unverified or tampered record); every record it reads is classified
// (recordTrust), and the engine replays only verified ones (replayable).
type signingDriver struct {
	driver.Driver
	key     []byte
	binding recordBinding
	// stored holds the JSON of the records as read, for those signed
	// under Helm 3 (see storedRecords), and the Secrets client a record
	// signed with scheme 1 is migrated through; nil verifies re-encoded
	// records only, and migrates in memory.
	stored *storedRecords
	// maxBytes bounds a new record (checkRecordSize).
	maxBytes int64
	// original is the chart a literal chart stands for (the engine's
	// originalChart): a record keeps the chart as it came, not its
	// rendering.
	original func(*chart.Chart) *chart.Chart
}

// keepOriginal puts back in rel the chart its literal one stands for.
func (d *signingDriver) keepOriginal(rel *release.Release) {
	if d.original != nil {
		rel.Chart = d.original(rel.Chart)
	}
}

// Get reads and classifies one record.
func (d *signingDriver) Get(key string) (ri.Releaser, error) {
	rel, err := d.Driver.Get(key)
	if err != nil {
		return nil, err
	}
	if len(d.ofThisRelease([]ri.Releaser{rel})) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return rel, nil
}

// List reads and classifies the records filter keeps.
func (d *signingDriver) List(filter func(ri.Releaser) bool) ([]ri.Releaser, error) {
	rels, err := d.Driver.List(filter)
	return d.ofThisRelease(rels), err
}

// Query reads and classifies the records labels select.
func (d *signingDriver) Query(labels map[string]string) ([]ri.Releaser, error) {
	rels, err := d.Driver.Query(labels)
	rels = d.ofThisRelease(rels)
	if err == nil && len(rels) == 0 {
		// Helm reads "no records" as this error, not as an empty list.
		err = driver.ErrReleaseNotFound
	}
	return rels, err
}

// Create writes a new record, signed: the engine makes a new revision from
// a chart it rendered itself, or rolls back to a verified one. Helm copies
// the previous revision's labels into the new one, the verdict on it too,
// which does not apply.
func (d *signingDriver) Create(key string, r ri.Releaser) error {
	rel, err := v1Release(r)
	if err != nil || rel == nil {
		return fmt.Errorf("signing release record %s: %w", key, errors.Join(err, errNoRecord))
	}
	for _, l := range inMemoryLabels {
		delete(rel.Labels, l)
	}
	d.keepOriginal(rel)
	if err := checkRecordSize(rel, d.maxBytes); err != nil {
		return err
	}
	if err := d.sign(rel); err != nil {
		return err
	}
	return d.Driver.Create(key, rel)
}

// Update rewrites a record: signed again when it was trusted.
func (d *signingDriver) Update(key string, r ri.Releaser) error {
	rel, err := v1Release(r)
	if err != nil || rel == nil {
		return fmt.Errorf("signing release record %s: %w", key, errors.Join(err, errNoRecord))
	}
	d.keepOriginal(rel)
	if err := d.sign(rel); err != nil {
		return err
	}
	return d.Driver.Update(key, rel)
}

// errNoRecord: the driver was handed nothing to write.
var errNoRecord = errors.New("no version 1 release record")

// Delete removes a record; what it returns is classified like any read.
func (d *signingDriver) Delete(key string) (ri.Releaser, error) {
	rel, err := d.Driver.Delete(key)
	if rel != nil {
		d.classify(rel)
	}
	return rel, err
}

// ofThisRelease classifies rels and keeps those that are records of the
// release d reads, stored under the key their content names. A record copied
// under another release's name or another revision's key is not part of this
// release's history at all: were Helm to see it, an uninstall or upgrade
// would write its status back under the key its content names (the other
// release's) and act on its manifest. It stays where it is, ignored.
func (d *signingDriver) ofThisRelease(rels []ri.Releaser) []ri.Releaser {
	kept := rels[:0]
	for _, r := range rels {
		d.classify(r)
		if rel, err := v1Release(r); err == nil && rel != nil && !storedWhereSigned(d.binding, rel) {
			continue
		}
		kept = append(kept, r)
	}
	return kept
}

// classify records the verdict on r in its in-memory labels. A record of
// another kind than version 1 gets none, and is never replayed. A record an
// earlier operator signed with scheme 1 that verifies for this release is
// signed again with scheme 2 in place.
func (d *signingDriver) classify(r ri.Releaser) {
	rel, err := v1Release(r)
	if err != nil || rel == nil {
		return
	}
	if rel.Labels == nil {
		rel.Labels = map[string]string{}
	}
	storageKey := rel.Labels[recordKeyLabel]
	if storageKey == "" {
		storageKey = claimedKey(rel)
	}
	v := verifyRecord(d.key, d.binding, rel, d.stored.stored(storageKey))
	rel.Labels[recordTrustLabel] = string(v.trust)
	if v.migrate != "" {
		d.migrate(rel, storageKey, v.migrate)
	}
}

// migrateTimeout bounds the write of one migrated signature: a read that
// cannot write it goes on, verified, and the next read tries again.
const migrateTimeout = 10 * time.Second

// migrate replaces the scheme 1 signature of rel, stored under storageKey,
// with sig, in storage and in memory: only the Secret's two labels change,
// the record's stored bytes (and Helm's encoding of them) stay.
func (d *signingDriver) migrate(rel *release.Release, storageKey, sig string) {
	setSignature(rel, sig, d.binding.owner)
	if d.stored == nil {
		return
	}
	owner := any(string(d.binding.owner))
	if d.binding.owner == "" {
		owner = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{
		RecordSignatureLabel: sig, RecordOwnerLabel: owner}}})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout)
	defer cancel()
	_, _ = d.stored.Patch(ctx, storageKey, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
}

// sign labels rel with its signature when it is trusted. An unverified
// record is written without one, a tampered one with the signature it had,
// which still does not verify. The in-memory labels (the verdict, the key it
// was read from) never reach the Secret; the verdict stays with the release
// for the rest of the action.
func (d *signingDriver) sign(rel *release.Release) error {
	trust := recordTrust(rel)
	for _, l := range inMemoryLabels {
		delete(rel.Labels, l)
	}
	if trust == RecordVerified {
		return SignRecord(d.key, d.binding.storageNamespace, d.binding.owner, rel)
	}
	defer func() { rel.Labels[recordTrustLabel] = string(trust) }()
	if trust == RecordUnverified {
		delete(rel.Labels, RecordSignatureLabel)
		delete(rel.Labels, RecordOwnerLabel)
	}
	return nil
}

// WrittenOutside is rel when it is a revision written outside the operator:
// it carries the operator's signature label, which does not verify — an
// admin's helm upgrade or rollback, or Flux helm-controller, copied it from
// the revision before, or someone edited the record. nil otherwise: a record
// with no signature at all is an earlier operator version's or a first
// migration's, handled as unverified without a report.
func WrittenOutside(rel *release.Release) *release.Release {
	if rel != nil && recordTrust(rel) == RecordTampered {
		return rel
	}
	return nil
}

// errUnverifiedRecord: the record an action would replay is not signed by
// the operator.
var errUnverifiedRecord = errors.New("the release record is not signed by this operator (written by an earlier version, " +
	"Flux or the helm CLI), so it is not replayed")

// refuseUnverified fails an action that replays rel (a rollback to it, its
// test hooks) when rel is not the operator's verified record.
func refuseUnverified(rel *release.Release, what string) error {
	if rel == nil || replayable(rel) {
		return nil
	}
	return fmt.Errorf("%s revision %d (Secret %s): %w", what, rel.Version, claimedKey(rel), errUnverifiedRecord)
}

// SignRecordsWith makes the engine sign every release record it writes with
// key and verify every record it reads. Without a key (tests of the engine
// alone) records are neither signed nor verified; the operator always sets
// one (see internal/operator).
func (e *Engine) SignRecordsWith(key []byte) {
	e.recordKey = key
}

// recordStorage is release storage in secrets of storageNamespace, through
// the signing driver of the engine's key when it has one.
func (e *Engine) recordStorage(secrets corev1client.SecretInterface, target Target, log slog.Handler) *storage.Storage {
	if len(e.recordKey) == 0 {
		d := driver.NewSecrets(secrets)
		d.SetLogger(log)
		return storage.Init(d)
	}
	stored := newStoredRecords(secrets)
	d := driver.NewSecrets(stored)
	d.SetLogger(log)
	binding := recordBinding{storageNamespace: target.StorageNamespace, release: target.ReleaseName, owner: target.Owner}
	return storage.Init(&signingDriver{Driver: d, key: e.recordKey, binding: binding, stored: stored, maxBytes: e.recordLimit(),
		original: e.originalChart})
}

// hooksOfLatestReplayable says whether the hooks of the newest record of a
// release may run, e.g. on uninstall: only when the operator wrote it.
func hooksOfLatestReplayable(cfg *action.Configuration, name string) bool {
	last, err := cfg.Releases.Last(name)
	if err != nil {
		// Nothing readable to replay; Helm's own read reports the error.
		return true
	}
	rel, err := v1Release(last)
	if err != nil || rel == nil {
		return false
	}
	return replayable(rel)
}
