//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// The kind-only rows of docs/security.md: attacks that need real pods,
// a real mutating webhook and real node ports.

// sidecarName is the container agnhost's webhook injects
// (test/images/agnhost/webhook, path /mutating-pods-sidecar).
const sidecarName = "webhook-added-sidecar"

// TestKindSidecarIsNeverAnActionTarget: a member runs a mutating webhook
// that injects a sidecar into the tenant's pods (as a service mesh does,
// whose proxy holds the mesh's credentials). A hub-only tenant writes a
// FleetSet whose exec role probe names the injected container. The
// member's runner must refuse it (a Warning RoleProbeFailed saying the
// template does not declare the container) and never exec into the
// sidecar: before the fix it exec'd into whatever container the pod had.
func TestKindSidecarIsNeverAnActionTarget(t *testing.T) {
	f := theFleet
	if _, ok := f.provider.(framework.ImageLoader); !ok {
		t.Skipf("provider %s runs no pods and no webhooks (kind only)", f.provider.Name())
	}
	m := f.members[0]
	ns := f.newNamespace(t, "e2e-sidecar")
	f.memberNamespace(t, m, ns, "baseline")
	f.sidecarInjector(t, m, ns, map[string]string{"app": "db"})

	tenant, _ := f.hubTenant(t, ns)
	fs := f.newFleetSet(ns, "db", 1)
	fs.Spec.Topology.Subsets = []fleetv1.Subset{{Name: m.name, Cluster: m.name}}
	fs.Spec.Roles = []fleetv1.Role{{Name: "leader", IsLeader: true}, {Name: "follower"}}
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{RoleProbe: &fleetv1.LifecycleAction{
		Exec: &fleetv1.ExecAction{Container: sidecarName, Command: []string{"echo", "leader"}}}}
	if err := tenant.Create(t.Context(), fs); err != nil {
		t.Fatalf("the tenant's FleetSet: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.dump(t, ns, "db")
		}
	})

	var pod corev1.Pod
	eventually(t, 5*time.Minute, "the instance Running in "+m.name+" with the injected sidecar", func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		if err := m.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: "db"}); err != nil {
			return false, errString(err), nil
		}
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
		}
		pod = pods.Items[0]
		var names []string
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		return pod.Status.Phase == corev1.PodRunning && len(names) == 2 && names[1] == sidecarName,
			fmt.Sprintf("phase %s, containers %v", pod.Status.Phase, names), nil
	})
	var msg string
	eventually(t, 3*time.Minute, "a RoleProbeFailed event on "+pod.Name+" refusing the sidecar", func(ctx context.Context) (bool, string, error) {
		var evs corev1.EventList
		if err := m.c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, errString(err), nil
		}
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Name != pod.Name || e.Reason != "RoleProbeFailed" {
				continue
			}
			seen = append(seen, e.Message)
			if strings.Contains(e.Message, "refused") && strings.Contains(e.Message, sidecarName) &&
				strings.Contains(e.Message, "never runs in a container the template does not declare") {
				msg = e.Message
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("RoleProbeFailed events: %q", seen), nil
	})
	t.Logf("member %s: %s", m.name, msg)
	if err := m.c.Get(t.Context(), client.ObjectKeyFromObject(&pod), &pod); err != nil {
		t.Fatal(err)
	}
	if r, ok := pod.Labels[fleetv1.LabelRole]; ok {
		t.Errorf("%s has the role label %q: a probe answered from the sidecar", pod.Name, r)
	}
}

// TestKindHostNetworkIsNeverProbed: on every node of a member a service
// listens on the node's network (agnhost netexec, which runs commands at
// /shell: a node-local admin endpoint). A hub-only tenant in a namespace
// the platform allows privileged pods writes a FleetSet whose pods use the
// node's network (spec.hostNetwork) with an HTTP role probe at that port:
// the probe to the pod's IP would be a request to the node's service. The
// hub must refuse it (Degraded InvalidSpec naming hostNetwork and the
// probe), deliver nothing, and no request may reach the node's service.
func TestKindHostNetworkIsNeverProbed(t *testing.T) {
	f := theFleet
	if _, ok := f.provider.(framework.ImageLoader); !ok {
		t.Skipf("provider %s runs no pods on node networks (kind only)", f.provider.Name())
	}
	m := f.members[0]
	const port = 18080
	listener := f.nodeListener(t, m, port)

	ns := f.newNamespace(t, "e2e-hostnet")
	var hubNS corev1.Namespace
	if err := f.hub.Get(t.Context(), client.ObjectKey{Name: ns}, &hubNS); err != nil {
		t.Fatal(err)
	}
	hubNS.Labels[fleetv1.LabelPodSecurityLevel] = string(fleetv1.PodSecurityPrivileged) // the platform's ceiling
	if err := f.hub.Update(t.Context(), &hubNS); err != nil {
		t.Fatal(err)
	}
	tenant, _ := f.hubTenant(t, ns)
	fs := f.newFleetSet(ns, "db", 1)
	fs.Spec.Topology.Subsets = []fleetv1.Subset{{Name: m.name, Cluster: m.name}}
	fs.Spec.PodSecurityLevel = fleetv1.PodSecurityPrivileged
	fs.Spec.Template.Spec.HostNetwork = true
	fs.Spec.Roles = []fleetv1.Role{{Name: "leader", IsLeader: true}, {Name: "follower"}}
	fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: port, Path: "/hostname"}}
	if err := tenant.Create(t.Context(), fs); err != nil {
		t.Fatalf("the tenant's FleetSet: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.dump(t, ns, "db")
		}
	})
	eventually(t, 2*time.Minute, "the FleetSet Degraded InvalidSpec naming hostNetwork and the probe", func(ctx context.Context) (bool, string, error) {
		c, why, err := f.degraded(ctx, ns, "db")
		if c == nil || err != nil {
			return false, why, err
		}
		return c.Status == metav1.ConditionTrue && c.Reason == fleetv1.ReasonInvalidSpec &&
			strings.Contains(c.Message, "hostNetwork") && strings.Contains(c.Message, "spec.roleProbe"), c.Reason + ": " + c.Message, nil
	})
	// The hub decided; give a wrong delivery the time to show.
	time.Sleep(30 * time.Second)
	var stss appsv1.StatefulSetList
	if err := m.c.List(t.Context(), &stss, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(stss.Items) != 0 {
		t.Errorf("%s got %d StatefulSets for the refused FleetSet", m.name, len(stss.Items))
	}
	if hits := listener(); hits != 0 {
		t.Errorf("the node's service on port %d got %d requests for /hostname", port, hits)
	}
}

// memberNamespace creates namespace ns in member m as its administrators
// would before the tenant work does, at Pod Security level level.
func (f *fleet) memberNamespace(t *testing.T, m member, ns, level string) {
	t.Helper()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": level}}}
	if err := m.c.Create(t.Context(), n); err != nil {
		t.Fatalf("%s: namespace %s: %v", m.name, ns, err)
	}
}

// sidecarInjector runs agnhost's mutating webhook in namespace ns of member
// m (a Pod, a Service, a serving certificate made here) and registers it
// for the pods of ns with labels sel: each such pod gets the container
// webhook-added-sidecar (the pause image) appended. The
// MutatingWebhookConfiguration is removed when the test ends.
func (f *fleet) sidecarInjector(t *testing.T, m member, ns string, sel map[string]string) {
	t.Helper()
	host := "sidecar-injector." + ns + ".svc"
	certPEM, keyPEM := servingCert(t, host)
	labels := map[string]string{"app": "sidecar-injector"}
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sidecar-injector"},
			Data: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sidecar-injector", Labels: labels},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "webhook", Image: agnhostImage(t), ImagePullPolicy: corev1.PullNever,
					Args: []string{"webhook", "--tls-cert-file=/certs/tls.crt", "--tls-private-key-file=/certs/tls.key",
						"--port=8443", "--sidecar-image=registry.k8s.io/pause:3.10.1"},
					Ports:          []corev1.ContainerPort{{ContainerPort: 8443}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8443), Scheme: corev1.URISchemeHTTPS}}},
					VolumeMounts:   []corev1.VolumeMount{{Name: "certs", MountPath: "/certs", ReadOnly: true}},
				}},
				Volumes: []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sidecar-injector"}}}},
			}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sidecar-injector"},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}}},
	}
	for _, o := range objs {
		if err := m.c.Create(t.Context(), o); err != nil {
			t.Fatalf("%s: %T %s: %v", m.name, o, o.GetName(), err)
		}
	}
	eventually(t, 3*time.Minute, "the sidecar injector Ready in "+m.name, func(ctx context.Context) (bool, string, error) {
		var p corev1.Pod
		if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sidecar-injector"}, &p); err != nil {
			return false, errString(err), nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue, string(p.Status.Phase), nil
			}
		}
		return false, string(p.Status.Phase), nil
	})
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-sidecar-" + ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "sidecar.e2e.fleetset.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "sidecar-injector", Path: ptr.To("/mutating-pods-sidecar")},
				CABundle: certPEM,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: sel},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	if err := m.c.Create(t.Context(), mwc); err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = m.c.Delete(ctx, mwc)
	})
}

// nodeListener runs agnhost netexec on the network of every node of member
// m, on port, in a privileged namespace of its own, and returns a function
// counting the GET /hostname requests they logged.
func (f *fleet) nodeListener(t *testing.T, m member, port int) func() int {
	t.Helper()
	ns := "e2e-node-listener-" + randSuffix()
	f.memberNamespace(t, m, ns, "privileged")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = m.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	labels := map[string]string{"app": "node-listener"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "node-listener"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				HostNetwork: true,
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: "netexec", Image: agnhostImage(t), ImagePullPolicy: corev1.PullNever,
					Args: []string{"netexec", fmt.Sprintf("--http-port=%d", port), "--udp-port=-1"}}},
			}},
		}}
	if err := m.c.Create(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "a node listener on every node of "+m.name, func(ctx context.Context) (bool, string, error) {
		if err := m.c.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
			return false, errString(err), nil
		}
		st := ds.Status
		return st.DesiredNumberScheduled > 0 && st.NumberReady == st.DesiredNumberScheduled,
			fmt.Sprintf("%d of %d ready", st.NumberReady, st.DesiredNumberScheduled), nil
	})
	cs, err := kubernetes.NewForConfig(f.memberRESTConfig(t, m.name))
	if err != nil {
		t.Fatal(err)
	}
	return func() int {
		var pods corev1.PodList
		if err := m.c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		hits := 0
		for _, p := range pods.Items {
			b, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
			if err != nil {
				t.Fatalf("logs of %s: %v", p.Name, err)
			}
			hits += strings.Count(string(b), "GET /hostname")
		}
		return hits
	}
}

// agnhostImage is Kubernetes' e2e test image that the kind node image
// holds (e2e/kind/node-image.sh): registry.k8s.io/e2e-test-images/agnhost
// at the version of the pinned Kubernetes module, or
// FLEETSET_E2E_AGNHOST_IMAGE.
func agnhostImage(t *testing.T) string {
	t.Helper()
	if img := os.Getenv("FLEETSET_E2E_AGNHOST_IMAGE"); img != "" {
		return img
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	cmd.Dir = filepath.Join(framework.RepoRoot(), "e2e", "kind", "k8s")
	dir, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Kubernetes module of e2e/kind/k8s: %v", err)
	}
	v, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "test", "images", "agnhost", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return "registry.k8s.io/e2e-test-images/agnhost:" + strings.TrimSpace(string(v))
}

// servingCert is a self-signed ECDSA certificate for host (its own CA), and
// its key, PEM-encoded, valid for a day.
func servingCert(t *testing.T, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: host},
		DNSNames:              []string{host},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}
