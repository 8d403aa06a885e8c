package names

// tagGrammar is the OCI distribution spec's tag grammar.
var tagGrammar = lazyRegexp(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// ValidTag reports whether tag is a tag the OCI distribution spec allows:
// up to 128 letters, digits, '_', '.' and '-', not starting with '.' or
// '-'. TagForVersion's tags are, for versions of up to 128 bytes.
func ValidTag(tag string) bool { return tagGrammar().MatchString(tag) }
