// Package e2e is fleetset's end-to-end suite. It runs against any fleet —
// the local fleet of `make fleet-up`, kind clusters of `make kind-up`, or real
// clusters — given only by kubeconfigs in the environment:
//
//	FLEETSET_HUB_KUBECONFIG      the OCM hub running fleetset-hub
//	FLEETSET_MEMBER_KUBECONFIGS  name=path,name=path: the member clusters,
//	                             named as their ManagedClusters
//	FLEETSET_E2E_ZONES           the zones of every member (default zone-a,zone-b,zone-c)
//	FLEETSET_E2E_STOP_AGENT      optional command; "<cmd> <cluster> [proc]" stops the
//	                             member's OCM registration agent (or proc, e.g. work-agent)
//	FLEETSET_E2E_START_AGENT     optional command; "<cmd> <cluster> [proc]" starts it again
//	FLEETSET_E2E_RESTART         optional command; "<cmd> <cluster> <proc> [args...]"
//	                             restarts fleetset-hub or fleetset-scheduler with extra
//	                             args (FLEET_REBUILD_VERSION=v rebuilds it first)
//	FLEETSET_E2E_LOGS            optional hint printed on failure: where the
//	                             fleet's process logs are
//	FLEETSET_E2E_TIMEOUT         the default wait for pods and status (default 3m)
//	FLEETSET_E2E_HOOK_TIMEOUT    the limit of one hook command (default 2m)
//	FLEETSET_E2E_IMAGE           the image of the test workloads' pods (default
//	                             registry.k8s.io/pause:3.10); a kind fleet's nodes
//	                             pull nothing, so it names an image they hold
//
// The tests carry the build tag e2e: go test -tags e2e ./e2e/
package e2e
