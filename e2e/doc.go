// Package e2e is fleetset's end-to-end suite. It runs against any fleet —
// the local fleet of `make fleet-up`, kind clusters of `make kind-up`, or real
// clusters — given by kubeconfigs in the environment and a provider that
// acts on the fleet's processes (FLEETSET_E2E_PROVIDER: local, kind or none;
// tests that need an operation the provider lacks skip). e2e/framework
// reads the environment and lists it. Test-specific settings:
//
//	FLEETSET_E2E_FENCE_CASES        TestFencedFailover's grace/toleration cases (default 30/20)
//	FLEETSET_E2E_HUB_SILENCE        how long fleetset-hub is stopped (default 45s)
//	FLEETSET_E2E_HUB_OUTAGE         how long the hub's kube-apiserver is stopped (default 45s)
//	FLEETSET_E2E_HEARTBEAT_TIMEOUT  the members' heartbeat timeout (default 15s)
//	FLEETSET_E2E_LATENCY_SCALES     TestScaleLatency's scales (unset: skipped)
//
// The tests carry the build tag e2e: go test -tags e2e ./e2e/
package e2e
