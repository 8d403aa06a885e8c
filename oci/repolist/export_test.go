package repolist

import "testing"

// LowerRepositoryBounds lowers List's bounds (and how far past
// its prefix an ordered catalog is read) for the test's duration.
func LowerRepositoryBounds(t *testing.T, repos, pages, past int) {
	old := [3]int{maxRepositories, maxRepositoryPages, catalogPastBound}
	maxRepositories, maxRepositoryPages, catalogPastBound = repos, pages, past
	t.Cleanup(func() { maxRepositories, maxRepositoryPages, catalogPastBound = old[0], old[1], old[2] })
}
