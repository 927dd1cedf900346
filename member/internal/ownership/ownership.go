// Package ownership says which pods are instances of a delivered
// StatefulSet for the member controllers (roles, lifecycle actions, fleet
// DNS): never by labels alone (see NotInstance).
package ownership

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// NotInstance says why pod p is not an instance of StatefulSet sts, ""
// when it is: p is in sts's namespace, its controller ownerReference is a
// StatefulSet (apps group) with sts's name and UID, its name is
// <sts name>-<ordinal> (a decimal ordinal, no leading zero), and its label
// apps.kubernetes.io/pod-index, when set, is that ordinal. This is what
// the StatefulSet controller writes on the pods it creates; labels, a
// hostname or an ownerReference naming another UID do not make a pod an
// instance.
func NotInstance(sts *appsv1.StatefulSet, p *v1.Pod) string {
	switch {
	case sts == nil:
		return "no StatefulSet"
	case p == nil:
		return "no pod"
	case p.Namespace != sts.Namespace:
		return fmt.Sprintf("pod %s/%s is not in the StatefulSet's namespace %s", p.Namespace, p.Name, sts.Namespace)
	}
	ref := metav1.GetControllerOfNoCopy(p)
	switch {
	case ref == nil:
		return fmt.Sprintf("pod %s/%s has no controller ownerReference (StatefulSet %s uid %s)", p.Namespace, p.Name, sts.Name, sts.UID)
	case ref.Kind != "StatefulSet" || !strings.HasPrefix(ref.APIVersion, appsv1.GroupName+"/") || ref.Name != sts.Name || ref.UID != sts.UID:
		return fmt.Sprintf("pod %s/%s is controlled by %s %s uid %s, not StatefulSet %s uid %s",
			p.Namespace, p.Name, ref.Kind, ref.Name, ref.UID, sts.Name, sts.UID)
	}
	ordinal, ok := OrdinalOfName(sts.Name, p.Name)
	if !ok {
		return fmt.Sprintf("pod %s/%s is not named %s-<ordinal>", p.Namespace, p.Name, sts.Name)
	}
	if s, set := p.Labels[fleetv1.LabelPodIndex]; set && s != strconv.FormatInt(int64(ordinal), 10) {
		return fmt.Sprintf("pod %s/%s has label %s=%q, not its name's ordinal %d", p.Namespace, p.Name, fleetv1.LabelPodIndex, s, ordinal)
	}
	return ""
}

// OrdinalOfName returns the ordinal of pod name when it is
// <set>-<ordinal>, the ordinal a decimal int32 ≥ 0 without a leading zero
// or sign.
func OrdinalOfName(set, name string) (int32, bool) {
	rest, ok := strings.CutPrefix(name, set+"-")
	if !ok || rest == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != rest {
		return 0, false
	}
	return int32(n), true
}

// Instances remembers the pods found to be instances of a delivered
// StatefulSet (by UID, with their name), so that a pod the StatefulSet
// controller made is still known for one while it has no controller: a
// StatefulSet deleted with propagationPolicy Orphan (the claims
// controller's replacement) and not yet re-created, or re-created and not
// yet adopting its pods. A pod's UID and name never change, so what was
// once an instance stays one until it is deleted; a pod never found owned
// is never remembered. The zero value is ready; safe for concurrent use.
type Instances struct {
	mu    sync.Mutex
	known map[types.UID]remembered
}

// remembered is an instance's namespace/name and the IPs it was last
// seen with.
type remembered struct {
	key string
	ips []string
}

// Check returns NotInstance(sts, p), remembering p when it is an instance;
// "" too for a pod remembered with its UID and name, whatever sts is (nil
// when the placement's StatefulSet is not found).
func (in *Instances) Check(sts *appsv1.StatefulSet, p *v1.Pod) string {
	why := NotInstance(sts, p)
	in.mu.Lock()
	defer in.mu.Unlock()
	if why == "" {
		if in.known == nil {
			in.known = map[types.UID]remembered{}
		}
		r := remembered{key: p.Namespace + "/" + p.Name}
		for _, ip := range p.Status.PodIPs {
			r.ips = append(r.ips, ip.IP)
		}
		if p.Status.PodIP != "" && !slices.Contains(r.ips, p.Status.PodIP) {
			r.ips = append(r.ips, p.Status.PodIP)
		}
		in.known[p.UID] = r
		return ""
	}
	if p != nil && p.UID != "" && in.known[p.UID].key == p.Namespace+"/"+p.Name {
		return ""
	}
	return why
}

// Forget drops pod uid (deleted).
func (in *Instances) Forget(uid types.UID) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.known, uid)
}

// Known reports whether the pod uid is remembered as an instance named
// namespace/name, last seen with IP ip.
func (in *Instances) Known(uid types.UID, namespace, name, ip string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	r, ok := in.known[uid]
	return ok && uid != "" && r.key == namespace+"/"+name && slices.Contains(r.ips, ip)
}

// Sweep drops every remembered pod that pods (the pod informer's lister)
// no longer holds with that UID, unless keep(uid) (a pod still listed
// elsewhere, e.g. by an EndpointSlice); Forget is the prompt way.
func (in *Instances) Sweep(pods corelisters.PodLister, keep func(types.UID) bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for uid, r := range in.known {
		ns, name, _ := strings.Cut(r.key, "/")
		if p, err := pods.Pods(ns).Get(name); (err != nil || p.UID != uid) && (keep == nil || !keep(uid)) {
			delete(in.known, uid)
		}
	}
}
