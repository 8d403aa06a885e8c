package main

import (
	"github.com/urfave/cli/v2"
)

// What push provider and push mirror share: --no-sbom (convert/publish
// stores the SBOMs and reports them).

func noSBOMFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-sbom", Usage: "store no SBOMs (by default each platform's SPDX SBOM, made from the Go build information of the executables in its zip, is stored as a referrer of its platform manifest before the version is tagged, and attested with --attest-key)"}
}
