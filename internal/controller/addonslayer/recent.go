package addonslayer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// reapplyAfter is how long a layer waiting for its objects' health is not
// applied again when what it applies has not changed. Every status change of
// a layer's HelmRelease reconciles the layer; re-applying each time was a
// server-side dry run of every object, about 25 requests, for nothing.
// Once Deployed, every reconcile applies, as before: drift is corrected at
// once. While waiting, a deleted object is re-created at once (see
// reconcileReadiness) and other drift within reapplyAfter.
const reapplyAfter = 30 * time.Second

// recentApplies remembers what this process last applied for each layer,
// and when.
type recentApplies struct {
	mu      sync.Mutex
	byLayer map[string]recentApply
}

type recentApply struct {
	digest string
	at     time.Time
}

// fresh says whether digest is what was applied for layer less than
// reapplyAfter before now.
func (r *recentApplies) fresh(layer, digest string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.byLayer[layer]
	return ok && last.digest == digest && now.Sub(last.at) < reapplyAfter
}

func (r *recentApplies) record(layer, digest string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byLayer == nil {
		r.byLayer = map[string]recentApply{}
	}
	r.byLayer[layer] = recentApply{digest: digest, at: now}
}

func (r *recentApplies) forget(layer string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byLayer, layer)
}

// desiredDigest identifies what a reconcile applies: the layer's generation,
// the artifact's revision and the rendered objects, in order.
func desiredDigest(sc *layerScope) string {
	h := sha256.New()
	h.Write([]byte(strconv.FormatInt(sc.layer.Generation, 10) + "\x00" + sc.revision + "\x00"))
	enc := json.NewEncoder(h)
	for _, obj := range sc.objects {
		if err := enc.Encode(obj.Object); err != nil {
			return "" // never fresh: applied every time
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
