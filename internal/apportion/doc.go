// Package apportion divides replicas over shares — the subsets of a
// FleetSet, or the domains of a subset — and maps ordinals to domains. Both
// come from one seat sequence, which fleetset-hub (the division it delivers)
// and fleetset-scheduler (the domain of each ordinal) compute with the same
// code from the same shares.
//
// Files: divide.go (Divide), sequence.go (the seat sequence), quota.go (its
// quota method), seats.go (concurrent seat lookups), domains.go (the API's
// subsets and domains as shares; DomainSeats, the ordinal → domain map).
//
// # What it takes and returns
//
// A spec is a list of [Share]s. Each has a non-empty, unique Name and a
// claim, Replicas: an int (exact replicas), a percentage "0%" to "100%" of
// the flexible pool (what the ints leave), or nil (an even part of what the
// percentages leave); and optionally MinReplicas and MaxReplicas. The unit
// of every count is one replica: one StatefulSet instance, one seat.
// Percentages are whole percent and may sum to at most 100%. The order of
// the list does not matter: shares are handled by name.
//
//   - [Divide] returns the division of a total: one [Assignment] per share,
//     in input order, summing to the total, and in [Result].Unmet what the
//     spec asked that this total cannot give (an int, minReplicas or
//     maxReplicas that does not fit).
//   - [NewSequence] returns the [Sequence] itself: [Sequence.Next] names,
//     seat after seat, the share (by index in name order) that receives it.
//   - [NewSeats] answers for one spec, concurrently, which share holds seat
//     k ([Seats.Of], [Seats.NameOf]) and the division of n ([Seats.Counts]).
//     Seat k is the domain of ordinal offset k, pod-index − ordinalStart.
//   - [DomainSeats] is the Seats of a SubsetPlacement's spec.domains: the one
//     ordinal → domain map, used by fleetset-scheduler and the hub's fleet view.
//
// Totals and seats stay below [MaxTotal]. Invalid specs are refused with an
// error naming the share and field.
//
// # The seat sequence
//
// The division of n replicas is the first n seats of the sequence. So
// raising the total never lowers a count (house monotonicity: moving a
// stateful instance is expensive), an ordinal never changes domain as the set
// scales, and the hub's counts and the scheduler's ordinal map agree at every
// size. A Sequence deals its seats in three stages:
//
//  1. Demand: the ints and minReplicas, dealt by the quota sequence over
//     those demands. If they add up to more than the total, the first total
//     seats cut them proportionally.
//  2. Flexible: the quota sequence over the flexible weights. A percentage p
//     weighs p × (the number of unset shares, at least 1) and each unset
//     share 100 − Σp; ints weigh 0. So the percentages are shares of the
//     flexible pool, apportioned jointly; the unset shares split evenly what
//     the percentages leave; with no unset share the percentages are
//     normalised to their sum. A pick of a share still within its
//     minReplicas uses up a seat it already holds; a share reaching its
//     maxReplicas drops out, and the others start a fresh quota sequence by
//     their weights.
//  3. Overflow: once every share of positive weight is at its maxReplicas
//     (or none has a positive weight), the rest goes above maxReplicas by the
//     flexible weights, or evenly when all are zero, and Unmet names it.
//
// Each stage's seats come from a house-monotone quota method (quota.go):
// every prefix of h seats gives share i between ⌊h·wᵢ/W⌋ and ⌈h·wᵢ/W⌉ seats
// (W = Σw, its lower and upper quota). Among the shares whose extra seat keeps
// every present and future quota reachable, the seat goes to the one
// Webster's divisor method would pick, the largest wᵢ/(xᵢ + ½) for xᵢ seats
// held, ties to the name first in order. The sequence is Webster's wherever
// Webster stays within quota, and departs from it only where quota forces it.
//
// # Sources
//
//   - M. L. Balinski and H. P. Young, "The quota method of apportionment",
//     Amer. Math. Monthly 82(7), 1975: house-monotone methods within quota.
//   - W. R. Still, "A class of new methods for congressional apportionment",
//     SIAM J. Appl. Math. 37(2), 1979: the eligibility test that keeps every
//     later house within quota.
//   - Webster's (Sainte-Laguë's) divisor method picks among the eligible
//     shares. By Balinski and Young's impossibility theorem no method within
//     quota is also population monotone; this one keeps house monotonicity,
//     and quota whenever no minReplicas or maxReplicas binds.
//   - karmada-io/karmada#6735: why a division must never move an instance
//     when the total rises.
//
// The rules as a FleetSet's user sees them are in docs/hub.md (division
// rules) and docs/scheduler.md (the ordinal → domain map).
package apportion
