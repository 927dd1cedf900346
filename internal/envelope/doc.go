// Package envelope is what a fleetset ManifestWork carries, as both sides
// read it: fleetset-hub renders into it (package federation/manifestwork) and
// the member reads its own work through it (package member/fence).
//
// Files: names.go (the names of delivered objects, the owner labels of a
// work), encode.go (objects to manifests), decode.go (a manifest back to an
// object).
package envelope
