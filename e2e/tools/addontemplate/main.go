// Command addontemplate writes manifests/addon/addontemplate.yaml: the Open
// Cluster Management AddOnTemplate of the fleetset add-on, made of exactly
// what a member runs — the SubsetPlacement CRD and the objects of
// `kubectl kustomize manifests/scheduler` (fleetset-scheduler's Namespace,
// ServiceAccount, RBAC, configuration and Deployment) — so the add-on and the
// plain manifests cannot drift apart. `make manifests` runs it and
// `make verify` fails when the committed file differs.
//
// Usage (from e2e/tools):
//
//	go run ./addontemplate -scheduler ../../manifests/scheduler \
//	  -crd ../../manifests/crds/fleetset.io_subsetplacements.yaml \
//	  -o ../../manifests/addon/addontemplate.yaml
package main

import (
	"flag"
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

func main() {
	var schedulerDir, crdFile, out string
	flag.StringVar(&schedulerDir, "scheduler", "../../manifests/scheduler", "kustomization directory of fleetset-scheduler's member objects")
	flag.StringVar(&crdFile, "crd", "../../manifests/crds/fleetset.io_subsetplacements.yaml", "SubsetPlacement CRD file")
	flag.StringVar(&out, "o", "../../manifests/addon/addontemplate.yaml", "output file (\"-\" for stdout)")
	flag.Parse()
	b, err := Render(schedulerDir, crdFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "addontemplate:", err)
		os.Exit(1)
	}
	if out == "-" {
		_, err = os.Stdout.Write(b)
	} else {
		err = os.WriteFile(out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "addontemplate:", err)
		os.Exit(1)
	}
}

// AddonName is the name of the ClusterManagementAddOn, of its AddOnTemplate
// and of every ManagedClusterAddOn that enables it.
const AddonName = "fleetset"

// orphanAnnotation keeps an object on the member when the add-on is disabled
// (the add-on framework turns it into a ManifestWork SelectivelyOrphan rule).
const orphanAnnotation = "addon.open-cluster-management.io/deletion-orphan"

// Render takes the kustomization directory of the member objects and the
// SubsetPlacement CRD file and returns the AddOnTemplate as YAML. The CRD, the
// Namespace and the ClusterRoles aggregated into the built-in view role or
// OCM's work agent role are annotated deletion-orphan: disabling the add-on
// removes fleetset-scheduler but never deletes the users' SubsetPlacements (a
// CRD's deletion deletes all its objects), the namespace the hub's resync
// Lease lives in, nor the right of OCM's work agent to manage (and so remove)
// SubsetPlacements. Errors come from kustomize or from reading/parsing the
// CRD.
func Render(schedulerDir, crdFile string) ([]byte, error) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), schedulerDir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", schedulerDir, err)
	}
	crdYAML, err := os.ReadFile(crdFile)
	if err != nil {
		return nil, err
	}
	crd := map[string]any{}
	if err := yaml.Unmarshal(crdYAML, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", crdFile, err)
	}
	annotate(crd, orphanAnnotation, "")
	manifests := []any{crd}
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, err
		}
		if r.GetKind() == "Namespace" || aggregated(r.GetKind(), r.GetLabels()) {
			annotate(m, orphanAnnotation, "")
		}
		if r.GetKind() == "Deployment" && r.GetName() == "fleetset-scheduler" {
			if err := addMemberArgs(m); err != nil {
				return nil, err
			}
		}
		manifests = append(manifests, m)
	}
	tmpl := map[string]any{
		"apiVersion": "addon.open-cluster-management.io/v1alpha1",
		"kind":       "AddOnTemplate",
		"metadata":   map[string]any{"name": AddonName},
		"spec": map[string]any{
			"addonName": AddonName,
			"agentSpec": map[string]any{
				"workload": map[string]any{"manifests": manifests},
			},
			// The member component's hub credentials (OCM add-on
			// registration): a client certificate for the agent, the
			// ClusterRole HubRoleName bound in the cluster's own
			// namespace on the hub, where its heartbeat Lease lives,
			// and the Role PeerCARoleName in PeerCANamespace, to read
			// the fleet peer CA. Then its peer certificate: a
			// CustomSigner registration, signed by the add-on manager
			// with the CA in the Secret PeerSignerSecret.
			"registration": []any{map[string]any{
				"type": "KubeClient",
				"kubeClient": map[string]any{"hubPermissions": []any{map[string]any{
					"type":           "CurrentCluster",
					"currentCluster": map[string]any{"clusterRoleName": HubRoleName},
				}, map[string]any{
					"type": "SingleNamespace",
					"singleNamespace": map[string]any{"namespace": PeerCANamespace,
						"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": PeerCARoleName}},
				}}},
			}, map[string]any{
				"type": "CustomSigner",
				"customSigner": map[string]any{"signerName": PeerSignerName,
					"signingCA": map[string]any{"name": PeerSignerSecret, "namespace": PeerCANamespace}},
			}},
		},
	}
	b, err := yaml.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	header := "# Generated by `make manifests` (e2e/tools/addontemplate) from manifests/scheduler\n" +
		"# and manifests/crds/fleetset.io_subsetplacements.yaml. DO NOT EDIT.\n"
	return append([]byte(header), b...), nil
}

// HubRoleName is the hub ClusterRole of the add-on's agent
// (manifests/addon/hub-rbac.yaml), bound in each cluster's namespace.
const HubRoleName = "fleetset-member-agent"

// The fleet peer CA (member/peers): the CustomSigner's name, the hub
// namespace of its signing Secret (type kubernetes.io/tls, read by the
// add-on manager only) and of the ConfigMap with its certificate
// (member/peers.CAConfigMapName, key ca.crt), and the hub Role that lets
// the agents read that ConfigMap (manifests/addon/hub-rbac.yaml).
const (
	PeerSignerName   = "fleetset.io/peer"
	PeerCANamespace  = "open-cluster-management-hub"
	PeerSignerSecret = "fleetset-peer-signer"
	PeerCARoleName   = "fleetset-peer-ca-reader"
)

// PeerCertDir is where OCM's add-on framework mounts the signed peer
// certificate of PeerSignerName (ocm templateagent
// customSignedSecretMountPath: /managed/<signer with / as ->).
const PeerCertDir = "/managed/fleetset.io-peer"

// PeerPort is the peer endpoint's container port, on the pod's IP.
const PeerPort = 9443

// MemberArgs are the flags the add-on gives fleetset-scheduler for its
// member component: OCM's template variables CLUSTER_NAME and HUB_KUBECONFIG
// (the registration's kubeconfig, mounted by the add-on framework), the
// peer endpoint on the pod's own IP ($(POD_IP), expanded by the kubelet
// from the downward API env var addMemberArgs adds), advertised in the
// heartbeat, and the signed peer certificate. No per-cluster variable.
var MemberArgs = []string{
	"--member-cluster-name={{CLUSTER_NAME}}",
	"--member-hub-kubeconfig={{HUB_KUBECONFIG}}",
	fmt.Sprintf("--member-peer-bind-address=$(POD_IP):%d", PeerPort),
	fmt.Sprintf("--member-peer-url=https://$(POD_IP):%d", PeerPort),
	"--member-peer-cert-dir=" + PeerCertDir,
}

// addMemberArgs appends MemberArgs to the args of the Deployment's
// container "scheduler", with the env var POD_IP (downward API
// status.podIP) and the container port "peer" (PeerPort).
func addMemberArgs(deploy map[string]any) error {
	spec, _ := deploy["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	podSpec, _ := tmpl["spec"].(map[string]any)
	containers, _ := podSpec["containers"].([]any)
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		if cm["name"] != "scheduler" {
			continue
		}
		args, _ := cm["args"].([]any)
		for _, a := range MemberArgs {
			args = append(args, a)
		}
		cm["args"] = args
		env, _ := cm["env"].([]any)
		cm["env"] = append(env, map[string]any{"name": "POD_IP",
			"valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "status.podIP"}}})
		ports, _ := cm["ports"].([]any)
		cm["ports"] = append(ports, map[string]any{"name": "peer", "containerPort": PeerPort})
		return nil
	}
	return fmt.Errorf("Deployment fleetset-scheduler has no container named scheduler")
}

// annotate sets metadata.annotations[key] = value on an unstructured object.
func annotate(obj map[string]any, key, value string) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[key] = value
}

// aggregated reports whether an object of kind with labels is a ClusterRole
// aggregated into one of the built-in user-facing roles (admin, edit, view)
// or into OCM's work agent role (open-cluster-management.io/aggregate-to-work).
func aggregated(kind string, labels map[string]string) bool {
	if kind != "ClusterRole" {
		return false
	}
	if labels["open-cluster-management.io/aggregate-to-work"] == "true" {
		return true
	}
	for _, r := range []string{"admin", "edit", "view"} {
		if labels["rbac.authorization.k8s.io/aggregate-to-"+r] == "true" {
			return true
		}
	}
	return false
}
