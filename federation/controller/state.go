package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/federation/rollout"
	"github.com/fleetset/fleetset/federation/tenancy"
)

// state is what one reconcile of a FleetSet reads and decides, filled in by
// its steps in order (see reconcile), each into its own fields.
type state struct {
	// fs is the FleetSet being reconciled, as the cache holds it.
	fs *fleetv1.FleetSet
	// now is the reconcile's clock reading.
	now metav1.Time
	// workName is the name of the FleetSet's ManifestWork in every cluster.
	workName string
	// existingWorks are the FleetSet's ManifestWorks, by namespace/name: as
	// the cache held them, then as this reconcile wrote them.
	existingWorks map[types.NamespacedName]*workv1.ManifestWork
	// clusters are the ManagedClusters the FleetSet uses or may use, read
	// once (readClusters), by name; nil: not found.
	clusters map[string]*clusterv1.ManagedCluster
	// podSecurityLevel is the level the FleetSet's pods run at (the
	// platform's for its namespace, or its own when stricter), and
	// clusterSets the sets bound to its namespace: the tenancy step's.
	podSecurityLevel fleetv1.PodSecurityLevel
	clusterSets      *tenancy.ClusterSets
	// holdWrites: a subset is placed on a cluster not bound to the
	// namespace (admitPlaced); no ManifestWork is written or deleted.
	holdWrites bool
	// subsets are the subsets in spec order (empty when the spec cannot be
	// planned).
	subsets []subsetPlan
	// problems are what the Degraded condition reports.
	problems []problem
	// feedbackProblems are the subsets whose fed-back status was ignored,
	// by subset name (observeWorks may run again after writes).
	feedbackProblems map[string]problem
	// rollout is the rollout step's fleet-wide output.
	rollout rolloutPlan
	// failoverEvents are the failover steps of this reconcile, emitted
	// once the status holding them is written.
	failoverEvents []pendingEvent
	// failoverRequeue is when a failover wait ends (0: none).
	failoverRequeue time.Duration
	// switchover is the requested-switchover step's output.
	switchover switchoverPlan
	// contact is why each cluster the subsets run on is out of the hub's
	// contact ("": in contact), read for a new switchover request naming
	// an instance (readContact); nil otherwise.
	contact map[string]string
	// writeRetry is when to try again a ManifestWork write that failed
	// for a reason no event of the hub's caches will announce the end of
	// (writeFailureRetry; 0: none).
	writeRetry time.Duration
	// rebuilt is each planned subset's failover state rebuilt from the
	// ManifestWorks while status.subsets is empty (rebuildStatus), by
	// name; status.subsets overrides it.
	rebuilt map[string]fleetv1.SubsetStatus
	// learned is each planned subset's failover state as the members'
	// epoch records tell it, where a member ran it at a higher epoch than
	// the status (or rebuilt) says (learnEpochs); it overrides both.
	learned map[string]fleetv1.SubsetStatus
}

// subsetPlan is one subset as the reconcile delivers it: each step's output
// for it (preFilterState-like, filled once per step).
type subsetPlan struct {
	// planned is plan.For's division and ordinal block, placed by the
	// failover step (Cluster and Domains where the subset runs now).
	planned plan.Subset
	// rendered is the rendering step's output.
	rendered renderedSubset
	subsetFailover
	// clusterExists and clusterAvailable are the checked cluster's state.
	clusterExists    bool
	clusterAvailable bool
	// rollout is the rollout step's output.
	rollout subsetRollout
	// work is the FleetSet's ManifestWork in the subset's cluster, as the
	// cache held it or as this reconcile wrote it; nil: none.
	work *workv1.ManifestWork
	// feedback is the statusFeedback of the subset's StatefulSet in work;
	// nil: none reported.
	feedback *manifestwork.StatefulSetFeedback
	// roles is its member's role summary (spec.roles); nil: none reported.
	roles *manifestwork.RoleReport
	// actions is its member's lifecycle-action report; nil: none reported.
	actions *manifestwork.ActionsReport
	// lifecycle is the lifecycle-action step's output.
	lifecycle subsetLifecycle
	// claimsLeft is where the claims its instances were created with stay
	// while it runs elsewhere (status.subsets[].claims); nil: on them.
	claimsLeft *fleetv1.SubsetClaims
}

// renderedSubset is a subset's pod and claim templates after its overrides
// (nil: the fleet's) and the dependencies delivered with it.
type renderedSubset struct {
	template         *corev1.PodTemplateSpec
	claims           []corev1.PersistentVolumeClaim
	dependencies     []runtime.Object
	dependenciesHash string
}

// subsetFailover is a subset's failover decision.
type subsetFailover struct {
	// spreadOnly says why a relocated subset runs without its domains.
	spreadOnly string
	// epoch is its fencing epoch; fencing its SubsetPlacement spec.fencing
	// (nil without failover policy Relocate).
	epoch   int64
	fencing *fleetv1.PlacementFencing
	// draining is true while a failing-back or moving subset is delivered
	// to the cluster it leaves with replicas 0, until that cluster reports
	// none of its pods left (manifestwork.Drained).
	draining bool
	// failoverPhase is the subset's failover phase ("" at home).
	failoverPhase fleetv1.SubsetFailoverPhase
}

// subsetRollout is the rollout step's output for one subset.
type subsetRollout struct {
	// revision is the subset revision (rollout.SubsetRevision).
	revision string
	// partition, when partitioned (RollingUpdate), replaces the plan's.
	partition   int32
	partitioned bool
	// update is its member's instruction in a role-ordered rollout.
	update *fleetv1.PlacementUpdate
}

// rolloutPlan is the rollout step's fleet-wide output.
type rolloutPlan struct {
	// ru is spec.updateStrategy.rollingUpdate (nil: Manual).
	ru *fleetv1.RollingUpdateFleetSet
	// fleetRevision is the fleet revision of the subsets' revisions.
	fleetRevision string
	// decision is the rollout planner's (nil: not planned).
	decision *rollout.Decision
	// switchover is what a role-ordered rollout asks of the leader
	// (status.switchover); nil: none.
	switchover *fleetv1.SwitchoverStatus
	// requeue is when a switchover deadline or the progress deadline passes
	// (0: none).
	requeue time.Duration
}

// pendingEvent is an event about status (a condition or rollout step) to emit
// once the status write succeeded; the event about ManifestWork writes is
// emitted once the writes are done, whatever follows.
type pendingEvent struct {
	eventType, reason, message string
}

// newState starts the reconcile of fs at the reconciler's clock reading,
// with the FleetSet's ManifestWorks from the cache. It returns the list's
// error.
func (r *FleetSetReconciler) newState(ctx context.Context, fs *fleetv1.FleetSet) (*state, error) {
	works, err := r.ownedWorks(ctx, client.ObjectKeyFromObject(fs))
	if err != nil {
		return nil, err
	}
	return &state{fs: fs, now: metav1.NewTime(r.now()), workName: manifestwork.WorkName(fs.Namespace, fs.Name), existingWorks: works,
		feedbackProblems: map[string]problem{}}, nil
}

// partition is the subset's StatefulSet partition: the rollout's under
// RollingUpdate, else the plan's (spec.updateStrategy.manualUpdate).
func (sp *subsetPlan) partition() int32 {
	if sp.rollout.partitioned {
		return sp.rollout.partition
	}
	return sp.planned.Partition
}

// workKey returns the key of the FleetSet's ManifestWork in cluster.
func (st *state) workKey(cluster string) types.NamespacedName {
	return types.NamespacedName{Namespace: cluster, Name: st.workName}
}
