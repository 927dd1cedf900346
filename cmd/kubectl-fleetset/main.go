// Command kubectl-fleetset is the kubectl plugin of fleetset: copied onto
// $PATH it runs as `kubectl fleetset`. `kubectl fleetset status NAME` shows
// a FleetSet's subsets from the hub and, given member clusters, its pods
// sorted by ordinal (--watch: redrawn as they move); pause, resume,
// failback and out-of-service change state on the hub. See package cmd.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/fleetset/fleetset/cmd/kubectl-fleetset/cmd"
)

func main() {
	root := cmd.NewCmdFleetSet(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
