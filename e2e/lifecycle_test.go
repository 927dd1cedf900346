//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

func TestFleetViewAndResyncLease(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-view")
	fs := f.newFleetSet(ns, "db", 5)
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 5)
	want := divide(t, fs)

	for _, m := range f.members {
		var view fleetv1.FleetView
		eventually(t, waitTimeout, m.name+": fleet view ConfigMap db-fleet", func(ctx context.Context) (bool, string, error) {
			cm := &corev1.ConfigMap{}
			if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-fleet"}, cm); err != nil {
				return false, "", err
			}
			if err := json.Unmarshal([]byte(cm.Data[fleetv1.FleetViewKey]), &view); err != nil {
				return false, "", fmt.Errorf("decoding %s: %w", fleetv1.FleetViewKey, err)
			}
			return view.Replicas == 5, fmt.Sprintf("view replicas %d", view.Replicas), nil
		})
		if view.FleetSet != "db" || view.Namespace != ns {
			t.Errorf("%s: fleet view names %s/%s, want %s/db", m.name, view.Namespace, view.FleetSet, ns)
		}
		if len(view.Subsets) != len(fs.Spec.Topology.Subsets) {
			t.Fatalf("%s: fleet view has %d subsets, want %d: %+v", m.name, len(view.Subsets), len(fs.Spec.Topology.Subsets), view.Subsets)
		}
		// The whole membership, with disjoint ordinal blocks, in every member.
		blocks := view.Subsets
		sort.Slice(blocks, func(i, j int) bool { return blocks[i].OrdinalStart < blocks[j].OrdinalStart })
		for i, s := range blocks {
			e := want[s.Name]
			if s.Cluster != e.cluster || s.Replicas != e.count {
				t.Errorf("%s: fleet view subset %s: cluster %s replicas %d, want %s %d", m.name, s.Name, s.Cluster, s.Replicas, e.cluster, e.count)
			}
			if s.OrdinalEnd-s.OrdinalStart < s.Replicas {
				t.Errorf("%s: fleet view subset %s: block [%d,%d) smaller than %d replicas", m.name, s.Name, s.OrdinalStart, s.OrdinalEnd, s.Replicas)
			}
			if i > 0 && s.OrdinalStart < blocks[i-1].OrdinalEnd {
				t.Errorf("%s: ordinal blocks of %s and %s overlap", m.name, blocks[i-1].Name, s.Name)
			}
		}
	}

	// The resync lease exists in each member and the hub renews it.
	for _, m := range f.members {
		var first *metav1.MicroTime
		var duration int32
		eventually(t, waitTimeout, m.name+": resync lease", func(ctx context.Context) (bool, string, error) {
			l, err := m.resyncLease(ctx)
			if err != nil {
				return false, "", err
			}
			if l.Spec.RenewTime == nil || ptr.Deref(l.Spec.HolderIdentity, "") == "" || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) <= 0 {
				return false, fmt.Sprintf("incomplete lease %+v", l.Spec), nil
			}
			first, duration = l.Spec.RenewTime, *l.Spec.LeaseDurationSeconds
			return true, "", nil
		})
		eventually(t, time.Duration(duration)*time.Second+30*time.Second, m.name+": resync lease renewed", func(ctx context.Context) (bool, string, error) {
			l, err := m.resyncLease(ctx)
			if err != nil {
				return false, "", err
			}
			return l.Spec.RenewTime.After(first.Time), fmt.Sprintf("renewTime still %v", l.Spec.RenewTime), nil
		})
	}
}

// leaseExpired says whether a member's resync lease is expired by the
// contract in api/v1alpha1 (fleetv1.LeaseExpired).
func leaseExpired(ctx context.Context, m member) (bool, string, error) {
	l, err := m.resyncLease(ctx)
	if err != nil {
		return false, "", err
	}
	if _, ok := fleetv1.LeaseEnd(&l.Spec); !ok {
		return false, "", fmt.Errorf("lease without renewTime or leaseDurationSeconds")
	}
	d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	return fleetv1.LeaseExpired(l.Spec.RenewTime.Time, d, time.Now()), fmt.Sprintf("renewTime %v, duration %v", l.Spec.RenewTime.Time, d), nil
}

func TestMemberCutOffFromHub(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpStop, f.members[len(f.members)-1].name, framework.DefaultAgent)
	ns := f.newNamespace(t, "e2e-cutoff")
	fs := f.newFleetSet(ns, "db", 5)
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 5)
	victim := f.members[len(f.members)-1]
	other := f.members[0]
	eventually(t, waitTimeout, victim.name+": resync lease present", func(ctx context.Context) (bool, string, error) {
		expired, why, err := leaseExpired(ctx, victim)
		return err == nil && !expired, why, err
	})

	t.Logf("stopping the OCM registration agent of %s", victim.name)
	f.do(t, framework.OpStop, victim.name, framework.DefaultAgent)
	t.Cleanup(func() {
		if t.Failed() {
			f.dump(t, ns, "db")
		}
		f.do(t, framework.OpStart, victim.name, framework.DefaultAgent)
		eventually(t, 2*time.Minute, victim.name+" Available again", func(ctx context.Context) (bool, string, error) {
			st, err := f.managedClusterAvailable(ctx, victim.name)
			return st == "True", "Available=" + st, err
		})
		eventually(t, 2*time.Minute, victim.name+": resync lease renewed again", func(ctx context.Context) (bool, string, error) {
			expired, why, err := leaseExpired(ctx, victim)
			return !expired, why, err
		})
	})

	start := time.Now()
	eventually(t, 2*time.Minute, "ManagedCluster "+victim.name+" unavailable", func(ctx context.Context) (bool, string, error) {
		st, err := f.managedClusterAvailable(ctx, victim.name)
		return st != "True" && err == nil, "Available=" + st, err
	})
	t.Logf("%s unavailable after %v", victim.name, time.Since(start).Round(time.Second))

	eventually(t, 2*time.Minute, "FleetSet condition naming "+victim.name, func(ctx context.Context) (bool, string, error) {
		c, why, err := f.degraded(ctx, ns, "db")
		if c == nil || err != nil {
			return false, why, err
		}
		return c.Status == metav1.ConditionTrue && c.Reason == fleetv1.ReasonClusterUnavailable && strings.Contains(c.Message, victim.name), why, nil
	})

	eventually(t, 3*time.Minute, victim.name+": resync lease expired (no longer renewed)", func(ctx context.Context) (bool, string, error) {
		return leaseExpired(ctx, victim)
	})
	t.Logf("%s's resync lease expired %v after the agent stopped", victim.name, time.Since(start).Round(time.Second))
	// The other members are still renewed.
	if expired, why, err := leaseExpired(t.Context(), other); err != nil || expired {
		t.Errorf("%s: resync lease expired too (%s, %v)", other.name, why, err)
	}
}

func TestDeleteRemovesEverythingFromMembers(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-delete")
	fs := f.newFleetSet(ns, "db", 4)
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 4)

	if err := f.hub.Delete(t.Context(), fs); err != nil {
		t.Fatalf("deleting FleetSet: %v", err)
	}
	eventually(t, waitTimeout, "FleetSet gone from the hub", func(ctx context.Context) (bool, string, error) {
		_, err := f.getFleetSet(ctx, ns, "db")
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
	eventually(t, waitTimeout, "the FleetSet's ManifestWorks gone from the hub", func(ctx context.Context) (bool, string, error) {
		works := &unstructured.UnstructuredList{}
		works.SetGroupVersionKind(manifestWorkGVK)
		if err := f.hub.List(ctx, works, client.MatchingLabels{fleetv1.LabelOwnerNamespace: ns, fleetv1.LabelOwnerName: "db"}); err != nil {
			return false, "", err
		}
		return len(works.Items) == 0, fmt.Sprintf("%d works left", len(works.Items)), nil
	})
	sel := client.MatchingLabels{fleetv1.LabelSet: "db"}
	for _, m := range f.members {
		eventually(t, waitTimeout, m.name+": nothing of the FleetSet left", func(ctx context.Context) (bool, string, error) {
			var left []string
			lists := map[string]client.ObjectList{
				"StatefulSet": &appsv1.StatefulSetList{}, "SubsetPlacement": &fleetv1.SubsetPlacementList{},
				"Pod": &corev1.PodList{}, "ConfigMap": &corev1.ConfigMapList{}, "Service": &corev1.ServiceList{},
			}
			for kind, l := range lists {
				if err := m.c.List(ctx, l, client.InNamespace(ns), sel); err != nil {
					return false, "", err
				}
				if n := metaLen(l); n > 0 {
					left = append(left, fmt.Sprintf("%d %s", n, kind))
				}
			}
			sort.Strings(left)
			return len(left) == 0, strings.Join(left, ", ") + " left", nil
		})
	}
}

func metaLen(l client.ObjectList) int {
	switch l := l.(type) {
	case *appsv1.StatefulSetList:
		return len(l.Items)
	case *fleetv1.SubsetPlacementList:
		return len(l.Items)
	case *corev1.PodList:
		return len(l.Items)
	case *corev1.ConfigMapList:
		return len(l.Items)
	case *corev1.ServiceList:
		return len(l.Items)
	}
	panic(fmt.Sprintf("metaLen: %T", l))
}

func TestBadFleetSetIsRefused(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-invalid")
	valid := func() *fleetv1.FleetSet { return f.newFleetSet(ns, "db", 9) }

	// The valid FleetSet passes admission, so the refusals below are about
	// the one field each case breaks.
	if err := f.hub.Create(t.Context(), valid(), client.DryRunAll); err != nil {
		t.Fatalf("the valid FleetSet is refused: %v", err)
	}
	cases := map[string]func(*fleetv1.FleetSet){
		"subset percents over 100%": func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].Replicas = intOrPercent("70%")
			fs.Spec.Topology.Subsets[1].Replicas = intOrPercent("40%")
		},
		"subset ints over replicas": func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].Replicas = intOrPercent("7")
			fs.Spec.Topology.Subsets[1].Replicas = intOrPercent("7")
		},
		"percent above 100%":          func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Replicas = intOrPercent("150%") },
		"subset name not a DNS label": func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Name = "East_1" },
		"minReplicas above maxReplicas": func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].MinReplicas = ptr.To[int32](5)
			fs.Spec.Topology.Subsets[0].MaxReplicas = ptr.To[int32](2)
		},
		"partition naming no subset": func(fs *fleetv1.FleetSet) {
			fs.Spec.UpdateStrategy.ManualUpdate = &fleetv1.ManualUpdate{Partitions: map[string]int32{"nowhere": 1}}
		},
		"negative partition": func(fs *fleetv1.FleetSet) {
			fs.Spec.UpdateStrategy.ManualUpdate = &fleetv1.ManualUpdate{Partitions: map[string]int32{fs.Spec.Topology.Subsets[0].Name: -1}}
		},
		"no subsets":        func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets = nil },
		"negative replicas": func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = -1 },
		"bad topology key":  func(fs *fleetv1.FleetSet) { fs.Spec.Topology.TopologyKey = "not a key!" },
		"name too long":     func(fs *fleetv1.FleetSet) { fs.Name = strings.Repeat("a", 45) },
		"domain percents over 100%": func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].Domains[0].Replicas = intOrPercent("60%")
			fs.Spec.Topology.Subsets[0].Domains[1].Replicas = intOrPercent("60%")
		},
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			fs := valid()
			breakIt(fs)
			err := f.hub.Create(t.Context(), fs, client.DryRunAll)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want the FleetSet refused as Invalid, got %v", err)
			}
			t.Logf("refused: %v", err)
		})
	}

	t.Run("ordinalBlockSize changed", func(t *testing.T) {
		fs := valid()
		fs.Spec.Replicas = 0
		if err := f.hub.Create(t.Context(), fs); err != nil {
			t.Fatalf("creating: %v", err)
		}
		// The hub may write the FleetSet (finalizer) meanwhile: retry conflicts.
		eventually(t, 30*time.Second, "the ordinalBlockSize change refused", func(ctx context.Context) (bool, string, error) {
			fs, err := f.getFleetSet(ctx, ns, "db")
			if err != nil {
				return false, "", err
			}
			fs.Spec.Topology.OrdinalBlockSize++
			err = f.hub.Update(ctx, fs)
			if apierrors.IsConflict(err) {
				return false, "conflict", nil
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want the update refused as Invalid, got %v", err)
			}
			return true, "", nil
		})
	})
}
