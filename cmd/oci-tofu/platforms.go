package main

import "github.com/oci-tofu/oci-tofu/oci/names"

// parsePlatforms reads a list of os_arch platforms.
func parsePlatforms(args []string) ([]names.Platform, error) {
	var out []names.Platform
	for _, p := range args {
		pl, err := names.ParsePlatform(p)
		if err != nil {
			return nil, err
		}
		out = append(out, pl)
	}
	return out, nil
}
