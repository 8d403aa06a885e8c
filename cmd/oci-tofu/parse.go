package main

import "github.com/oci-tofu/oci-tofu/oci/names"

// parseEach parses every value of a list flag, stopping at the first
// error.
func parseEach[T any](values []string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, v := range values {
		x, err := parse(v)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// parsePlatforms reads a list of os_arch platforms.
func parsePlatforms(args []string) ([]names.Platform, error) {
	return parseEach(args, names.ParsePlatform)
}
