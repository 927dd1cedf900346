package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	schedulerDir = "../../../manifests/scheduler"
	crdFile      = "../../../manifests/crds/fleetset.io_subsetplacements.yaml"
	committed    = "../../../manifests/addon/addontemplate.yaml"
)

// TestCommittedTemplateIsCurrent fails when manifests/addon/addontemplate.yaml
// differs from what manifests/scheduler and the CRD give today.
func TestCommittedTemplateIsCurrent(t *testing.T) {
	want, err := Render(schedulerDir, crdFile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run make manifests", committed)
	}
}

// TestTemplateCarriesTheMemberSide checks the template's objects: every kind
// the member needs, the CRD, the Namespace and the aggregated SubsetPlacement
// roles deletion-orphan and nothing else,
// the member flags with their add-on variables and the KubeClient
// registration, and no other "{{" that OCM's template renderer would take
// for a variable.
func TestTemplateCarriesTheMemberSide(t *testing.T) {
	b, err := Render(schedulerDir, crdFile)
	if err != nil {
		t.Fatal(err)
	}
	// The only {{ }} are the add-on variables of MemberArgs.
	rest := b
	for _, a := range MemberArgs {
		if !bytes.Contains(rest, []byte(a)) {
			t.Errorf("the template lacks the member flag %s", a)
		}
		rest = bytes.ReplaceAll(rest, []byte(a), nil)
	}
	if bytes.Contains(rest, []byte("{{")) {
		t.Errorf("the template contains {{ outside the member flags, which the add-on manager would render as a variable")
	}
	if !bytes.Contains(b, []byte("clusterRoleName: "+HubRoleName)) || !bytes.Contains(b, []byte("type: KubeClient")) {
		t.Errorf("the template lacks the KubeClient registration with ClusterRole %s", HubRoleName)
	}
	var tmpl struct {
		Kind string
		Spec struct {
			AddonName string `json:"addonName"`
			AgentSpec struct {
				Workload struct {
					Manifests []struct {
						Kind     string
						Metadata struct {
							Name        string
							Namespace   string
							Labels      map[string]string
							Annotations map[string]string
						}
					}
				}
			} `json:"agentSpec"`
		}
	}
	if err := yaml.Unmarshal(b, &tmpl); err != nil {
		t.Fatal(err)
	}
	if tmpl.Kind != "AddOnTemplate" || tmpl.Spec.AddonName != AddonName {
		t.Fatalf("kind %q addonName %q, want AddOnTemplate %q", tmpl.Kind, tmpl.Spec.AddonName, AddonName)
	}
	kinds := map[string]int{}
	for _, m := range tmpl.Spec.AgentSpec.Workload.Manifests {
		kinds[m.Kind]++
		_, orphan := m.Metadata.Annotations[orphanAnnotation]
		wantOrphan := m.Kind == "CustomResourceDefinition" || m.Kind == "Namespace" ||
			m.Kind == "ClusterRole" && (m.Metadata.Labels["open-cluster-management.io/aggregate-to-work"] == "true" || m.Metadata.Labels["rbac.authorization.k8s.io/aggregate-to-view"] == "true")
		if orphan != wantOrphan {
			t.Errorf("%s %s: deletion-orphan %v, want %v", m.Kind, m.Metadata.Name, orphan, wantOrphan)
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service"} {
		if kinds[k] == 0 {
			t.Errorf("the template has no %s; kinds: %v", k, kinds)
		}
	}
}

// TestTemplateWiresPeers: the scheduler container serves its peer endpoint
// on its pod IP (downward API env POD_IP, container port peer) with the
// certificate of the CustomSigner registration, mounted where OCM's add-on
// framework mounts it (/managed/<signer, / as ->), and the KubeClient
// registration may read the fleet peer CA; no per-cluster variable.
func TestTemplateWiresPeers(t *testing.T) {
	b, err := Render(schedulerDir, crdFile)
	if err != nil {
		t.Fatal(err)
	}
	if PeerCertDir != "/managed/"+strings.ReplaceAll(PeerSignerName, "/", "-") {
		t.Errorf("PeerCertDir %s is not where OCM mounts the %s certificate", PeerCertDir, PeerSignerName)
	}
	for _, want := range []string{
		"fieldPath: status.podIP", "name: POD_IP", fmt.Sprintf("containerPort: %d", PeerPort),
		"--member-peer-url=https://$(POD_IP):", "--member-peer-cert-dir=" + PeerCertDir,
		"type: CustomSigner", "signerName: " + PeerSignerName, "name: " + PeerSignerSecret,
		"type: SingleNamespace", "name: " + PeerCARoleName,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the template lacks %q", want)
		}
	}
	if bytes.Contains(b, []byte("PEER_URL")) || bytes.Contains(b, []byte("PEER_BIND_ADDRESS")) {
		t.Error("the template still takes a per-cluster peer variable")
	}
}

// TestTemplateSurvivesOneNodeLoss: the add-on runs two fleetset-scheduler
// replicas spread over nodes (preferred pod anti-affinity by hostname) and
// a PodDisruptionBudget keeping one of them (minAvailable 1): losing or
// draining one node never leaves the member without its member component
// (heartbeat, peer answers, fencing).
func TestTemplateSurvivesOneNodeLoss(t *testing.T) {
	b, err := Render(schedulerDir, crdFile)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Spec struct {
			AgentSpec struct {
				Workload struct {
					Manifests []map[string]any `json:"manifests"`
				} `json:"workload"`
			} `json:"agentSpec"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &tmpl); err != nil {
		t.Fatal(err)
	}
	var deploy, pdb map[string]any
	for _, m := range tmpl.Spec.AgentSpec.Workload.Manifests {
		switch m["kind"] {
		case "Deployment":
			deploy = m
		case "PodDisruptionBudget":
			pdb = m
		}
	}
	if deploy == nil || pdb == nil {
		t.Fatalf("the template lacks the Deployment (%v) or the PodDisruptionBudget (%v)", deploy != nil, pdb != nil)
	}
	get := func(o map[string]any, path ...string) any {
		var cur any = o
		for _, p := range path {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[p]
		}
		return cur
	}
	if r := get(deploy, "spec", "replicas"); r != float64(2) {
		t.Errorf("Deployment replicas %v, want 2", r)
	}
	labels := get(deploy, "spec", "template", "metadata", "labels")
	terms, _ := get(deploy, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution").([]any)
	spread := false
	for _, term := range terms {
		tm, _ := term.(map[string]any)
		if get(tm, "podAffinityTerm", "topologyKey") == "kubernetes.io/hostname" &&
			fmt.Sprint(get(tm, "podAffinityTerm", "labelSelector", "matchLabels")) == fmt.Sprint(labels) {
			spread = true
		}
	}
	if !spread {
		t.Errorf("Deployment has no preferred pod anti-affinity by kubernetes.io/hostname on its own pods' labels %v: %v", labels, terms)
	}
	if m := get(pdb, "spec", "minAvailable"); m != float64(1) {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 1", m)
	}
	if get(pdb, "spec", "maxUnavailable") != nil {
		t.Error("PodDisruptionBudget sets maxUnavailable besides minAvailable")
	}
	if sel := get(pdb, "spec", "selector", "matchLabels"); fmt.Sprint(sel) != fmt.Sprint(labels) {
		t.Errorf("PodDisruptionBudget selects %v, not the Deployment's pods %v", sel, labels)
	}
}
