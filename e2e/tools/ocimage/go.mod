// Module ocimage builds the fleetset image archives (make images) with
// go-containerregistry. It is its own module, as e2e/tools/etcd is, so that
// go-containerregistry's dependencies (otel, x/sys, x/oauth2 newer than OCM
// pins) stay out of fleetset's and the OCM tools' module graphs.
module github.com/fleetset/fleetset/e2e/tools/ocimage

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
)
