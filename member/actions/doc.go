// Package actions runs a FleetSet's lifecycle actions
// (v1alpha1.LifecycleActions) for fleetset-scheduler's member component: an
// exec action through the member apiserver's pods/exec, as
// `env NAME=VALUE ... <command...>` (the websocket protocol, falling back to
// SPDY as kubectl does), an HTTP action as GET http://<pod IP>:<port><path>
// with the environment as query parameters. Each run has a timeout per
// attempt and a number of retries; stdout and stderr are kept up to
// v1alpha1.MaxActionOutput bytes each. Every run is counted in
// fleetset_member_lifecycle_actions_total{action,result} and timed in
// fleetset_member_lifecycle_action_duration_seconds{action}.
//
// The Runner refuses to run anywhere but in a running instance of the
// SubsetPlacement the action belongs to — labelled fleetset.io/placement and
// controlled by its delivered StatefulSet (owner UID, <statefulset>-<ordinal>;
// labels alone never suffice) — in a container the StatefulSet's pod
// template declares (never an injected sidecar), and never sends an HTTP
// action to a hostNetwork pod (Admit): the tenant who writes the FleetSet
// already chooses that pod's image and command, so an action gives it
// nothing it could not already run in its own pod (docs/lifecycle-actions.md).
//
// The controllers that decide when to run which action live with the step
// they belong to: member/roles (roleProbe), member/updater (switchover) and
// this package's Controller (memberJoin, memberLeave, rolloutComplete).
package actions
