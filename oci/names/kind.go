package names

import "strconv"

// Kind is what a release is of: a provider, a module or OpenTofu itself.
// Its value is the word the policy file's blocks, explanations and metrics
// use ("provider", "module", "tofu"); Noun is how messages name one.
type Kind string

// The kinds of release.
const (
	KindProvider Kind = "provider"
	KindModule   Kind = "module"
	KindTofu     Kind = "tofu"
)

// Noun names a release of the kind in messages: "provider", "module",
// "OpenTofu release"; an unknown kind is named by its value.
func (k Kind) Noun() string {
	if k == KindTofu {
		return "OpenTofu release"
	}
	return string(k)
}

// Plural is n of noun as messages say it: "1 version", "3 versions".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
