package tfconfig

import (
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Client is the CLI whose rules a configuration is read by. OpenTofu and
// Terraform read the same language but differ in a few decisions that
// matter to a lock file: the registry a short provider address
// ("acme/widgets") lives on, whether .tofu files exist, and the names of
// their commands in messages.
type Client string

// The clients oci-tofu writes lock files for.
const (
	Tofu      Client = "tofu"
	Terraform Client = "terraform"
)

// ParseClient reads "tofu" or "terraform" (and "opentofu").
func ParseClient(s string) (Client, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "tofu", "opentofu":
		return Tofu, nil
	case "terraform":
		return Terraform, nil
	}
	return "", fmt.Errorf("unknown client %q: want tofu or terraform", s)
}

// orDefault is c, or Tofu when c is unset.
func (c Client) orDefault() Client {
	if c == "" {
		return Tofu
	}
	return c
}

// RegistryHost is where the client looks for short provider addresses:
// registry.opentofu.org for tofu, registry.terraform.io for Terraform.
func (c Client) RegistryHost() string {
	if c.orDefault() == Terraform {
		return names.TerraformRegistryHost
	}
	return names.OpenTofuRegistryHost
}

// product is the client's name as its messages write it.
func (c Client) product() string {
	if c.orDefault() == Terraform {
		return "Terraform"
	}
	return "OpenTofu"
}

// Command is the client's executable name, for messages ("tofu init").
func (c Client) Command() string { return string(c.orDefault()) }

// readsTofuFiles reports whether the client reads .tofu and .tofu.json
// files (and lets them hide the .tf file of the same name).
func (c Client) readsTofuFiles() bool { return c.orDefault() == Tofu }

// builtinProvider is the address of the provider built into both clients
// (terraform_data, terraform_remote_state): never installed, never locked.
var builtinProvider = names.Provider{Hostname: "terraform.io", Namespace: "builtin", Type: "terraform"}

// IsBuiltin reports whether p is built into the client rather than
// installed (terraform.io/builtin/…).
func IsBuiltin(p names.Provider) bool {
	return p.Hostname == builtinProvider.Hostname && p.Namespace == builtinProvider.Namespace
}
