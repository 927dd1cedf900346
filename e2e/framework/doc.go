// Package framework is what the e2e suite (e2e/) and the chaos run
// (e2e/chaos) share: the fleet under test, read once from the environment
// (FromEnv), its clients (Fleet), and a Provider that stops, starts, kills,
// pauses, cuts and restarts the fleet's processes, as kube's
// test/e2e/framework ProviderInterface does for a cloud.
//
// Environment:
//
//	FLEETSET_HUB_KUBECONFIG      the OCM hub running fleetset-hub
//	FLEETSET_MEMBER_KUBECONFIGS  name=path,...: the members, named as their ManagedClusters
//	FLEETSET_E2E_SPARE_MEMBERS   name=path,...: members only some tests use
//	FLEETSET_E2E_ZONES           the zones of every member (default zone-a,zone-b,zone-c)
//	FLEETSET_E2E_PROVIDER        local (FLEET_DIR, the fleet of fleet-up.sh), kind
//	                             (KIND_FLEET_DIR, the fleet of kind-up.sh) or none (default:
//	                             tests that need to act on a process skip)
//	FLEETSET_E2E_TIMEOUT         the default wait for pods and status (default 3m)
//	FLEETSET_E2E_HOOK_TIMEOUT    the limit of one provider action (default 2m)
//	FLEETSET_E2E_IMAGE           the test workloads' image (default registry.k8s.io/pause:3.10)
//
// Files: env.go (Config), fleet.go (clients), provider.go (Provider, Action),
// local.go and kind.go (the providers); kindagent/ acts on a kind fleet.
package framework
