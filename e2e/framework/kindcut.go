package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// CutChain is the iptables chain (filter table) that Kind.Cut fills on
// every node of the cut member and jumps to first from INPUT, OUTPUT and
// FORWARD.
const CutChain = "FLEETSET-CUT"

// Cut isolates a member cluster of the kind fleet the way a network
// partition would: on every node (kind container) of the member, a chain
// CutChain drops every packet to or from the nodes of every other cluster
// of the fleet (the hub's apiserver included; IPv4 and IPv6) and to or from the other
// members' pod subnets (their pods and their fleetset peer endpoints).
// Connections already open stop too (the chain comes before any
// established-connection rule). What stays: traffic inside the member, and
// this host's own traffic to the member's nodes (the test's kubectl, on
// Docker's bridge gateway). Heal removes the chain. Idempotent.
func (k *Kind) Cut(ctx context.Context, cluster string) error {
	if cluster == "hub" {
		return fmt.Errorf("cut: the hub is not a member (cut a member instead): %w", ErrUnsupported)
	}
	nodes, err := kindNodes(ctx, cluster)
	if err != nil {
		return err
	}
	peers, err := kindCutPeers(ctx, cluster)
	if err != nil {
		return err
	}
	script := cutScript(peers)
	for _, n := range nodes {
		if out, err := run(ctx, "docker", "exec", n, "sh", "-c", script); err != nil {
			return fmt.Errorf("cut %s: node %s: %w (%s)", cluster, n, err, strings.TrimSpace(out))
		}
	}
	Log(ctx, "kind: %s cut off: its %d nodes drop traffic to and from %s", cluster, len(nodes), strings.Join(peers, " "))
	return nil
}

// Heal undoes Cut on every node of the member.
func (k *Kind) Heal(ctx context.Context, cluster string) error {
	nodes, err := kindNodes(ctx, cluster)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if out, err := run(ctx, "docker", "exec", n, "sh", "-c", healScript); err != nil {
			return fmt.Errorf("heal %s: node %s: %w (%s)", cluster, n, err, strings.TrimSpace(out))
		}
	}
	Log(ctx, "kind: %s healed (%d nodes)", cluster, len(nodes))
	return nil
}

// cutScript fills CutChain with a drop of each address or subnet, both
// ways (iptables for IPv4, ip6tables for IPv6), and jumps to it first from
// INPUT, OUTPUT and FORWARD.
func cutScript(peers []string) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, tool := range []string{"iptables", "ip6tables"} {
		fmt.Fprintf(&b, "%[1]s -N %[2]s 2>/dev/null || %[1]s -F %[2]s\n", tool, CutChain)
		for _, p := range peers {
			if strings.Contains(p, ":") != (tool == "ip6tables") {
				continue
			}
			fmt.Fprintf(&b, "%s -A %s -d %s -j DROP\n", tool, CutChain, p)
			fmt.Fprintf(&b, "%s -A %s -s %s -j DROP\n", tool, CutChain, p)
		}
		for _, c := range []string{"INPUT", "OUTPUT", "FORWARD"} {
			fmt.Fprintf(&b, "%[1]s -C %[2]s -j %[3]s 2>/dev/null || %[1]s -I %[2]s 1 -j %[3]s\n", tool, c, CutChain)
		}
	}
	// Open connections through the member's Services (kube-proxy's DNAT)
	// are tracked; dropping every packet of them is enough, nothing to flush.
	return b.String()
}

const healScript = `for t in iptables ip6tables; do
  for c in INPUT OUTPUT FORWARD; do
    while $t -D $c -j ` + CutChain + ` 2>/dev/null; do :; done
  done
  $t -F ` + CutChain + ` 2>/dev/null || true
  $t -X ` + CutChain + ` 2>/dev/null || true
done
`

// kindNodes lists the node containers of cluster (kind cluster
// fleetset-<cluster>).
func kindNodes(ctx context.Context, cluster string) ([]string, error) {
	out, err := run(ctx, "docker", "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster=fleetset-"+cluster, "--format", "{{.Names}}")
	if err != nil {
		return nil, err
	}
	nodes := strings.Fields(out)
	if len(nodes) == 0 {
		return nil, fmt.Errorf("kind cluster fleetset-%s has no nodes", cluster)
	}
	slices.Sort(nodes)
	return nodes, nil
}

// kindCutPeers is what a cut of cluster drops: the kind-network address of
// every node of every other fleetset-* cluster and the pod subnet of every
// other member (kind-configs/member-<name>.yaml).
func kindCutPeers(ctx context.Context, cluster string) ([]string, error) {
	out, err := run(ctx, "docker", "ps", "--filter", "label=io.x-k8s.kind.cluster", "--format", `{{.Names}} {{.Label "io.x-k8s.kind.cluster"}}`)
	if err != nil {
		return nil, err
	}
	var peers []string
	others := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[1], "fleetset-") || f[1] == "fleetset-"+cluster {
			continue
		}
		others[strings.TrimPrefix(f[1], "fleetset-")] = true
		// Both addresses: Docker's DNS answers a node's name with its IPv6
		// address first, and Go clients fall back from one to the other.
		ips, err := run(ctx, "docker", "inspect", "-f", `{{with index .NetworkSettings.Networks "kind"}}{{.IPAddress}} {{.GlobalIPv6Address}}{{end}}`, f[0])
		if err != nil {
			return nil, err
		}
		for _, ip := range strings.Fields(ips) {
			if strings.Contains(ip, ":") {
				peers = append(peers, ip+"/128")
			} else {
				peers = append(peers, ip+"/32")
			}
		}
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("cut %s: no other cluster of the kind fleet runs", cluster)
	}
	slices.Sort(peers)
	names := make([]string, 0, len(others))
	for o := range others {
		names = append(names, o)
	}
	slices.Sort(names)
	for _, o := range names {
		if o == "hub" {
			continue
		}
		s, err := podSubnet(filepath.Join(RepoRoot(), "kind-configs", "member-"+o+".yaml"))
		if err != nil {
			return nil, err
		}
		peers = append(peers, s)
	}
	return peers, nil
}

var podSubnetRE = regexp.MustCompile(`(?m)^\s*podSubnet:\s*"?([0-9.]+/[0-9]+)"?`)

// podSubnet reads networking.podSubnet from a kind cluster config.
func podSubnet(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("pod subnet of a member: %w", err)
	}
	m := podSubnetRE.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s: no networking.podSubnet", path)
	}
	return string(m[1]), nil
}
