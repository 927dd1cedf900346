// Package names checks the names that key a list (subsets, shares, domains):
// the one home of the "non-empty and unique" rule the hub's division, its
// ordinal blocks and the scheduler's placements share.
package names

import "fmt"

// Check returns one error per name that is empty or repeats an earlier one,
// in list order, each naming its element as field[i].name (field is the
// list's path, e.g. "spec.domains"); nil when all are fine.
func Check(field string, names []string) []error {
	var errs []error
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		switch {
		case n == "":
			errs = append(errs, fmt.Errorf("%s[%d].name: must not be empty", field, i))
		case seen[n]:
			errs = append(errs, fmt.Errorf("%s[%d].name: duplicate name %q", field, i, n))
		}
		seen[n] = true
	}
	return errs
}
