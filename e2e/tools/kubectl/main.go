// Command kubectl is kubectl, as k8s.io/kubernetes/cmd/kubectl builds it,
// for machines without one: the local fleet scripts drive every cluster with
// it. Built by `make kubectl` only when no kubectl is on PATH.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
