//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// Adversarial tests of the operator verbs (issue 48): each tries an
// attack, or the mistake an attacker would count on, as the
// least-privileged actor who could, and asserts it is refused or harmless.

// TestAdversaryReportLeaksNoSecret: a tenant's FleetSet reads a Secret
// (env secretKeyRef, dependencies Auto: the hub delivers a copy in its
// ManifestWorks). The platform team's `kubectl fleetset report`, meant to be
// attached to a public bug report, holds the Secret's key but not its
// value, in clear or base64, in any file of the archive; and says so.
func TestAdversaryReportLeaksNoSecret(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "adv-report")
	tenant, _ := f.hubTenant(t, ns, secretsOfNamespace)
	const value = "adversary-s3cr3t-value-48"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-password"}, StringData: map[string]string{"password": value}}
	if err := tenant.Create(t.Context(), secret); err != nil {
		t.Fatalf("tenant creating the Secret: %v", err)
	}
	fs := f.newFleetSet(ns, "db", 2)
	fs.Spec.Template.Spec.Containers[0].Env = append(fs.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "PASSWORD",
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-password"}, Key: "password"}}})
	if err := tenant.Create(t.Context(), fs); err != nil {
		t.Fatalf("tenant creating the FleetSet: %v", err)
	}
	f.waitReady(t, ns, "db", 2)

	file := filepath.Join(t.TempDir(), "report.tar.gz")
	args := []string{"report", "db", "-n", ns, "-f", file}
	for _, m := range f.cfg.Members {
		args = append(args, "--member-kubeconfig", m.Name+"="+m.Path)
	}
	out, err := f.kubectlFleetset(t, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, "Secret values are redacted (", "it holds no Secret value")
	files := readTarGz(t, file)
	var whole bytes.Buffer
	for _, body := range files {
		whole.WriteString(body)
	}
	for _, leak := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))} {
		for name, body := range files {
			if i := strings.Index(body, leak); i >= 0 {
				t.Errorf("%s holds the Secret's value %q: ...%s...", name, leak, body[max(0, i-200):min(len(body), i+50)])
			}
		}
	}
	works := files["fleetset-report-"+ns+"-db/hub/manifestworks.yaml"]
	if !strings.Contains(works, "kind: Secret") || !strings.Contains(works, "password: 'REDACTED: 25 bytes, hmac-sha256 ") {
		t.Errorf("hub/manifestworks.yaml lacks the delivered Secret, redacted (key and size):\n%.3000s", works)
	}
}

// TestAdversaryCordonKeepsRelocated: east is lost and its subset relocated
// to west (the platform team confirmed east out of service); the tenant
// then cordons east, the natural step with a broken cluster. The relocated
// instances keep running on west (same pods), subset west makes no new,
// empty instance, and the subset is not moved.
func TestAdversaryCordonKeepsRelocated(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpCut, f.members[0].name, "")
	east, west := f.members[0], f.members[1]
	ns := f.newNamespace(t, "adv-cordon")
	tenant, _ := f.hubTenant(t, ns, secretsOfNamespace)
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](5), Failback: fleetv1.FailbackAutomatic}
	if err := tenant.Create(t.Context(), fs); err != nil {
		t.Fatalf("tenant creating the FleetSet: %v", err)
	}
	f.waitReady(t, ns, "db", 4)
	subset := fs.Spec.Topology.Subsets[0].Name // east's

	f.do(t, framework.OpCut, east.name, "")
	healed := false
	defer func() {
		if !healed {
			f.do(t, framework.OpHeal, east.name, "")
		}
	}()
	defer func() { _, _ = f.kubectlFleetset(t, "", "out-of-service", east.name, "--remove") }()
	eventually(t, 2*time.Minute, "ManagedCluster "+east.name+" not Available", func(ctx context.Context) (bool, string, error) {
		s, err := f.managedClusterAvailable(ctx, east.name)
		return err == nil && s != string(metav1.ConditionTrue), s, err
	})
	if _, err := f.kubectlFleetset(t, "", "out-of-service", east.name, "--yes"); err != nil {
		t.Fatal(err)
	}
	var before map[string]map[string]string
	eventually(t, 2*time.Minute, "subset "+subset+" relocated to "+west.name+" and Running there", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		run, err := f.runningOrdinals(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		n := 0
		before = map[string]map[string]string{}
		for pod, uid := range run[west.name] {
			if before[west.name] == nil {
				before[west.name] = map[string]string{}
			}
			before[west.name][pod] = string(uid)
			if strings.HasPrefix(pod, "db-"+subset+"-") {
				n++
			}
		}
		ss := got.Status.Subsets[0]
		return ss.Cluster == west.name && ss.Failover == fleetv1.SubsetFailedOver && n == int(ss.Replicas) && len(run[west.name]) == 4,
			fmt.Sprintf("subset %s on %s %q, west runs %v", subset, ss.Cluster, ss.Failover, run[west.name]), nil
	})
	relocated, _ := f.getFleetSet(t.Context(), ns, "db")

	// The tenant cordons east.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &fleetv1.FleetSet{}
		if err := tenant.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "db"}, cur); err != nil {
			return err
		}
		cur.Spec.Topology.CordonedClusters = []string{east.name}
		return tenant.Update(t.Context(), cur)
	}); err != nil {
		t.Fatalf("tenant cordoning %s: %v", east.name, err)
	}
	eventually(t, 30*time.Second, "the hub observed the cordon", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		return err == nil && got.Status.ObservedGeneration == got.Generation, "", err
	})
	// Give a wrong division time to reach west's StatefulSets.
	time.Sleep(10 * time.Second)
	got, err := f.getFleetSet(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	for i, ss := range got.Status.Subsets {
		was := relocated.Status.Subsets[i]
		if ss.Cluster != was.Cluster || ss.Replicas != was.Replicas || ss.Epoch != was.Epoch {
			t.Errorf("cordoning %s changed subset %s: %s×%d epoch %d → %s×%d epoch %d", east.name, ss.Name, was.Cluster, was.Replicas, was.Epoch, ss.Cluster, ss.Replicas, ss.Epoch)
		}
	}
	run, err := f.runningOrdinals(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	for pod, uid := range before[west.name] {
		if string(run[west.name][pod]) != uid {
			t.Errorf("%s on %s was removed or replaced after the cordon (uid %s → %s)", pod, west.name, uid, run[west.name][pod])
		}
	}
	if len(run[west.name]) != len(before[west.name]) {
		t.Errorf("%s runs %d pods after the cordon, %d before: %v", west.name, len(run[west.name]), len(before[west.name]), run[west.name])
	}
}

// TestAdversarySwitchoverToCutOffInstance: a tenant (FleetSet edit rights
// on the hub, no more) asks for a switchover to an instance on a member cut
// off from the hub, writing the annotation itself (no kubectl check): the
// hub refuses it, a SwitchoverRefused event naming the candidate out of
// contact, the annotation removed and nothing recorded. An ordinal past
// 2^32 (which int32 wraps to instance 0) is refused as no instance.
func TestAdversarySwitchoverToCutOffInstance(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpCut, f.members[1].name, "")
	west := f.members[1]
	ns := f.newNamespace(t, "adv-switch")
	tenant, _ := f.hubTenant(t, ns, secretsOfNamespace)
	fs := f.newFleetSet(ns, "db", 2)
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}, {Name: "replica"}}
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{Switchover: &fleetv1.LifecycleAction{
		Exec: &fleetv1.ExecAction{Command: []string{"/bin/switchover"}}}}
	if err := tenant.Create(t.Context(), fs); err != nil {
		t.Fatalf("tenant creating the FleetSet: %v", err)
	}
	f.waitReady(t, ns, "db", 2)
	first := f.getFleetSetOrDie(t, ns, "db").Status.Subsets
	eastSubset, westSubset := first[0], first[1]
	ask := func(to string) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &fleetv1.FleetSet{}
			if err := tenant.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "db"}, cur); err != nil {
				return err
			}
			if cur.Annotations == nil {
				cur.Annotations = map[string]string{}
			}
			cur.Annotations[fleetv1.AnnotationSwitchoverTo] = to
			return tenant.Update(t.Context(), cur)
		}); err != nil {
			t.Fatalf("tenant annotating %s=%s: %v", fleetv1.AnnotationSwitchoverTo, to, err)
		}
		eventually(t, 30*time.Second, "the request for "+to+" ended: annotation removed", func(ctx context.Context) (bool, string, error) {
			got, err := f.getFleetSet(ctx, ns, "db")
			if err != nil {
				return false, "", err
			}
			a, pending := got.Annotations[fleetv1.AnnotationSwitchoverTo]
			return !pending && got.Status.RequestedSwitchover == nil, fmt.Sprintf("annotation %q, status.requestedSwitchover %+v", a, got.Status.RequestedSwitchover), nil
		})
	}

	wrapped := fmt.Sprintf("db-%s-%d", eastSubset.Name, int64(eastSubset.OrdinalStart)+1<<32)
	ask(wrapped)
	refusedEvent(t, f, ns, fmt.Sprintf("%q is not an instance of fleetset \"db\"", wrapped))

	f.do(t, framework.OpCut, west.name, "")
	defer f.do(t, framework.OpHeal, west.name, "")
	// The hub counts a member cut off once its heartbeat is older than
	// the member's timeout (leaseDurationSeconds).
	eventually(t, 2*time.Minute, west.name+"'s heartbeat older than its timeout", func(ctx context.Context) (bool, string, error) {
		l := &coordinationv1.Lease{}
		if err := f.hub.Get(ctx, client.ObjectKey{Namespace: west.name, Name: fleetv1.HeartbeatLeaseName}, l); err != nil {
			return false, "", err
		}
		if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			return false, "no renewTime", nil
		}
		age := time.Since(l.Spec.RenewTime.Time)
		return age > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second+3*time.Second, fmt.Sprintf("renewed %v ago", age.Round(time.Second)), nil
	})
	candidate := fmt.Sprintf("db-%s-%d", westSubset.Name, westSubset.OrdinalStart)
	ask(candidate)
	refusedEvent(t, f, ns, fmt.Sprintf("%s=%q refused: candidate %s is out of contact", fleetv1.AnnotationSwitchoverTo, candidate, candidate))
}

// refusedEvent waits for the hub's SwitchoverRefused event about FleetSet
// ns/db whose message holds substr (the hub emits it once the status write
// that follows the annotation's removal is done).
func refusedEvent(t *testing.T, f *fleet, ns, substr string) {
	t.Helper()
	eventually(t, 15*time.Second, "a SwitchoverRefused event saying "+substr, func(ctx context.Context) (bool, string, error) {
		return f.hubEvent(t, ns, "db", "SwitchoverRefused", substr), "", nil
	})
}

// TestAdversaryPlacementRefLongShare: a tenant's placementRef FleetSet
// whose shares name a cluster too long for the FleetSet's name (pods of
// db-<cluster> could never be created) is refused at admission, naming
// the field. (The hub's hold of a decided cluster with such a name, which
// admission cannot see, is TestPlacementRefLongClusterName.)
func TestAdversaryPlacementRefLongShare(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "adv-placement")
	tenant, _ := f.hubTenant(t, ns, secretsOfNamespace)
	fs := f.newFleetSet(ns, "db", 2)
	fs.Spec.Topology.Subsets = nil
	fs.Spec.Topology.PlacementRef = &fleetv1.PlacementRef{Name: "db-clusters",
		Shares: []fleetv1.ClusterShare{{Cluster: "c-" + strings.Repeat("x", 48), Replicas: intstr.FromInt32(1)}}}
	err := tenant.Create(t.Context(), fs)
	if err == nil || !strings.Contains(err.Error(), "spec.topology.placementRef.shares[].cluster: <fleetset>-<cluster> must be at most 52 characters") {
		t.Fatalf("creating a placementRef FleetSet with a share on a 50-character cluster: %v, want refused at admission", err)
	}
}

// getFleetSetOrDie is getFleetSet that fails the test on an error.
func (f *fleet) getFleetSetOrDie(t *testing.T, ns, name string) *fleetv1.FleetSet {
	t.Helper()
	fs, err := f.getFleetSet(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// secretsOfNamespace is what the built-in edit role grants on Secrets: the
// verbs tests' tenant writes her own Secrets, as a tenant with edit does.
var secretsOfNamespace = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
	Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}}
