package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/oci"
)

// registryFlags are the flags every command that reaches a registry takes.
func registryFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "plain-http", Usage: "talk plain HTTP to the registry (local test registries only)", EnvVars: []string{"OCI_TOFU_PLAIN_HTTP"}},
		&cli.StringFlag{Name: "ca-file", Usage: "PEM file of extra CA certificates to trust (SSL_CERT_FILE is honoured too)", EnvVars: []string{"OCI_TOFU_CA_FILE"}},
		&cli.StringFlag{Name: "username", Usage: "registry user name (default: docker config and credential helpers)", EnvVars: []string{"OCI_TOFU_USERNAME"}},
		&cli.BoolFlag{Name: "password-stdin", Usage: "read the registry password or token from standard input"},
		&cli.StringFlag{Name: "catalog-repository", Usage: "record each push in the held-address index `REPO` (on the same registry), so the catalogue lists it where the registry cannot list (docs/catalogue.md)", EnvVars: []string{"OCI_TOFU_CATALOG_REPOSITORY"}},
	}
}

// registryClient builds the registry client from registryFlags.
func registryClient(c *cli.Context) (*oci.Client, error) {
	opts, err := registryOptions(c)
	if err != nil {
		return nil, err
	}
	return oci.NewClient(opts)
}

// registryOptions reads registryFlags. The password comes from stdin or
// OCI_TOFU_PASSWORD, never from a flag value, so it stays out of process
// listings and shell history.
func registryOptions(c *cli.Context) (oci.Options, error) {
	opts := oci.Options{
		PlainHTTP: c.Bool("plain-http"),
		CAFile:    c.String("ca-file"),
		Username:  c.String("username"),
		UserAgent: "oci-tofu/" + version,
		HeldIndex: c.String("catalog-repository"),
	}
	if c.Bool("password-stdin") {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, 64<<10))
		if err != nil {
			return opts, fmt.Errorf("reading password from stdin: %w", err)
		}
		opts.Password = strings.TrimRight(string(b), "\r\n")
	} else {
		opts.Password = os.Getenv("OCI_TOFU_PASSWORD")
	}
	if opts.Password != "" && opts.Username == "" {
		return opts, fmt.Errorf("a password was given without --username: add --username USER (or OCI_TOFU_USERNAME)")
	}
	if opts.Username != "" && opts.Password == "" {
		return opts, fmt.Errorf("--username %s was given without a password: pipe it to --password-stdin, or set OCI_TOFU_PASSWORD (passwords are never taken from flags)", opts.Username)
	}
	return opts, nil
}
