package fence

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// EpochsConfigMapName is the member's record of the highest fencing epoch
// it has run each placement at: a ConfigMap in
// v1alpha1.ResyncLeaseNamespace of the member cluster, one key per
// placement (EpochKey) with a decimal epoch. Only the member component
// writes it (its ClusterRole names it; tenants have no rights in that
// namespace), and it outlives the placements, which the hub removes when a
// subset leaves the cluster.
const EpochsConfigMapName = "fleetset-epochs"

// ReasonEpochBelowRecord is the reason of the Warning event on a
// placement delivered below the epoch this member ran it at.
const ReasonEpochBelowRecord = "EpochBelowRecord"

// EpochKey is the record key of placement sp: <namespace>.<name>.<owner
// identity> (label v1alpha1.LabelOwnerUID: the FleetSet's identity, which
// a FleetSet restored from a backup keeps and a new one of the same name
// does not), each part a DNS name or UID, so a valid ConfigMap key.
func EpochKey(sp *fleetv1.SubsetPlacement) string {
	return sp.Namespace + "." + sp.Name + "." + sp.Labels[fleetv1.LabelOwnerUID]
}

// Epochs is the member's record of the highest epoch it has run each
// placement at (EpochsConfigMapName): epochs are fencing tokens, and a
// placement delivered at a lower one than this member has run it at comes
// from a hub whose state is older than what ran (restored from a backup
// taken before a relocation or failback): Below refuses it, and the Guard
// holds its pods, until the hub delivers it at the recorded epoch or
// above. Safe for concurrent use.
type Epochs struct {
	// Client reads and writes the record in the member cluster.
	Client kubernetes.Interface

	mu     sync.Mutex
	loaded bool
	seen   map[string]int64
}

// Load reads the record; a missing one is empty. Until it succeeds, Record
// writes nothing and Below refuses nothing.
func (e *Epochs) Load(ctx context.Context) error {
	cm, err := e.Client.CoreV1().ConfigMaps(fleetv1.ResyncLeaseNamespace).Get(ctx, EpochsConfigMapName, metav1.GetOptions{})
	seen := map[string]int64{}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s/%s: %w", fleetv1.ResyncLeaseNamespace, EpochsConfigMapName, err)
	default:
		for k, v := range cm.Data {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				seen[k] = n
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen, e.loaded = seen, true
	return nil
}

// Below reports whether sp (with spec.fencing) is delivered at an epoch
// below the highest this member has run it at, and that epoch.
func (e *Epochs) Below(sp *fleetv1.SubsetPlacement) (bool, int64) {
	if e == nil || sp.Spec.Fencing == nil {
		return false, 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.seen[EpochKey(sp)]
	return ok && sp.Spec.Fencing.Epoch < h, h
}

// Record raises the record of every placement of sps with spec.fencing,
// not being deleted, to its epoch, and writes the ConfigMap when one rose.
// A placement Below its record is not recorded (it does not run).
func (e *Epochs) Record(ctx context.Context, sps []*fleetv1.SubsetPlacement) error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	if !e.loaded {
		e.mu.Unlock()
		if err := e.Load(ctx); err != nil {
			return err
		}
		e.mu.Lock()
	}
	next := maps.Clone(e.seen)
	changed := false
	for _, sp := range sps {
		if sp.Spec.Fencing == nil || !sp.DeletionTimestamp.IsZero() {
			continue
		}
		k := EpochKey(sp)
		if h, ok := next[k]; !ok || sp.Spec.Fencing.Epoch > h {
			next[k], changed = sp.Spec.Fencing.Epoch, true
		}
	}
	e.mu.Unlock()
	if !changed {
		return nil
	}
	if err := e.write(ctx, next); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range next {
		e.seen[k] = max(v, e.seen[k])
	}
	return nil
}

// write stores seen in the ConfigMap, creating it if absent.
func (e *Epochs) write(ctx context.Context, seen map[string]int64) error {
	data := make(map[string]string, len(seen))
	for k, v := range seen {
		data[k] = strconv.FormatInt(v, 10)
	}
	cms := e.Client.CoreV1().ConfigMaps(fleetv1.ResyncLeaseNamespace)
	cur, err := cms.Get(ctx, EpochsConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: EpochsConfigMapName, Namespace: fleetv1.ResyncLeaseNamespace}, Data: data}, metav1.CreateOptions{})
	} else if err == nil {
		// Never lower an entry another replica raised.
		for k, v := range cur.Data {
			if n, perr := strconv.ParseInt(v, 10, 64); perr == nil && n > seen[k] {
				data[k] = v
			}
		}
		cur.Data = data
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing ConfigMap %s/%s: %w", fleetv1.ResyncLeaseNamespace, EpochsConfigMapName, err)
	}
	return nil
}

// Report returns the record as the heartbeat reports it
// (v1alpha1.AnnotationMemberEpochs): a JSON object of EpochKey to epoch;
// "" before Load.
func (e *Epochs) Report() string {
	if e == nil {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.loaded {
		return ""
	}
	b, err := json.Marshal(e.seen)
	if err != nil {
		return ""
	}
	return string(b)
}
