package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/protocol/mcpserve"
	"github.com/oci-tofu/oci-tofu/protocol/show"
)

func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve the catalogue's tools to an assistant over stdio (Model Context Protocol)",
		Description: `Serves, on standard input and output, the read-only tools an assistant uses to
write module blocks from what the organisation holds (docs/assistants.md): search and
details of modules and providers, latest versions, the policy's verdict, known
vulnerabilities, usage and lock-file blocks, each within the caller's scope.

With --proxy, the tools ask the oci-tofu proxy at URL as a client: the bearer token is
read from --token-file, else OCI_TOFU_TOKEN, else TF_TOKEN_<host> as tofu reads it
(a client token, a CI OIDC token, or USERNAME:PASSWORD under --registry-decides).
Without it, they read the registry with the registry flags' credentials, through
--provider-template and --module-template, judged by --policy and --vuln-db, as
show does.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "proxy", Usage: "ask the oci-tofu proxy at `URL` (https://HOST[:PORT])", EnvVars: []string{"OCI_TOFU_PROXY"}},
			&cli.StringFlag{Name: "token-file", Usage: "read the bearer token for --proxy from `FILE`"},
			&cli.StringFlag{Name: "proxy-ca-file", Usage: "PEM `FILE` of the roots --proxy's certificate is checked against (default: the system's)"},
			&cli.StringFlag{Name: "registry-hostname", Usage: "the proxy's --registry-hostname, when it has one: the `HOST` of its own modules"},
			&cli.StringFlag{Name: "provider-template", Usage: "without --proxy: the repository `TEMPLATE` of providers (${hostname}, ${namespace}, ${type})"},
			&cli.StringFlag{Name: "module-template", Usage: "without --proxy: the repository `TEMPLATE` of modules (${namespace}, ${name}, ${system}, ${hostname})"},
			&cli.StringFlag{Name: "policy", Usage: "without --proxy: judge versions by the policy `FILE`, as serve does"},
			&cli.StringFlag{Name: "vuln-db", Usage: "without --proxy: match stored SBOMs against the vulnerability database `DIR`"},
		}, registryFlags()...),
		Action: runMCP,
	}
}

func runMCP(c *cli.Context) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	opts := mcpserve.Options{Proxy: c.String("proxy"), TokenFile: c.String("token-file"), Token: os.Getenv("OCI_TOFU_TOKEN"),
		CAFile: c.String("proxy-ca-file"), RegistryHostname: c.String("registry-hostname"), Version: version}
	if opts.Proxy == "" {
		client, err := registryClient(c)
		if err != nil {
			return err
		}
		opts.Registry = show.Options{Client: client, ProviderTemplate: c.String("provider-template"), ModuleTemplate: c.String("module-template"),
			Policy: c.String("policy"), VulnDB: c.String("vuln-db")}
	}
	return mcpserve.Run(c.Context, opts, os.Stdin, os.Stdout)
}
