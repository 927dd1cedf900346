package controller

import (
	"fmt"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
)

// problem is one thing that keeps a FleetSet from being delivered as
// specified: part of the Degraded condition and a Warning event. Build one
// with fleetProblem, subsetProblem, clusterProblem or planProblem.
type problem struct {
	// Reason is one of the v1alpha1 Reason constants.
	Reason string
	// Subset and Cluster name what is affected; empty when the whole FleetSet is.
	Subset, Cluster string
	// Message says what is wrong, naming the field when the spec is at fault.
	Message string
}

// fleetProblem is a problem of the whole FleetSet.
func fleetProblem(reason, message string) problem {
	return problem{Reason: reason, Message: message}
}

// subsetProblem is a problem of subset in cluster ("" when no cluster is
// concerned).
func subsetProblem(reason, subset, cluster, message string) problem {
	return problem{Reason: reason, Subset: subset, Cluster: cluster, Message: message}
}

// clusterProblem is a problem of cluster, whatever subset it holds.
func clusterProblem(reason, cluster, message string) problem {
	return problem{Reason: reason, Cluster: cluster, Message: message}
}

// planProblem is the problem of one of plan.For's findings.
func planProblem(f plan.Finding) problem {
	return problem{Reason: f.Reason, Subset: f.Subset, Cluster: f.Cluster, Message: f.Message}
}

// String returns "subset <s> on cluster <c>: <message>".
func (p problem) String() string {
	switch {
	case p.Subset != "" && p.Cluster != "":
		return fmt.Sprintf("subset %s on cluster %s: %s", p.Subset, p.Cluster, p.Message)
	case p.Subset != "":
		return fmt.Sprintf("subset %s: %s", p.Subset, p.Message)
	case p.Cluster != "":
		return fmt.Sprintf("cluster %s: %s", p.Cluster, p.Message)
	}
	return p.Message
}

// report records problems for the Degraded condition.
func (st *state) report(problems ...problem) {
	st.problems = append(st.problems, problems...)
}

// invalidSpec records err, naming the spec field it found wrong, as an
// InvalidSpec problem.
func (st *state) invalidSpec(err error) {
	st.report(fleetProblem(fleetv1.ReasonInvalidSpec, err.Error()))
}
