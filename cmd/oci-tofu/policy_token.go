package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
)

// policyTokenCommand makes a client's bearer token and the hash its
// client block holds (docs/policy.md, "Clients").
func policyTokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "make a client's bearer token, and the hash a client block's tokens hold",
		Description: "Prints a new random token (give it to the client: it is not stored\n" +
			"anywhere) and its hash (put it in the client block's tokens list). With\n" +
			"--stdin, hashes the token read from standard input instead.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "stdin", Usage: "hash the token on standard input (its first line) instead of making one"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		},
		Action: policyToken,
	}
}

func policyToken(c *cli.Context) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	token, err := clientToken(c)
	if err != nil {
		return err
	}
	out := map[string]string{"hash": policy.TokenHash(token)}
	if !c.Bool("stdin") {
		out["token"] = token
	}
	w := c.App.Writer
	if c.Bool("json") {
		return json.NewEncoder(w).Encode(out)
	}
	if t, ok := out["token"]; ok {
		fmt.Fprintf(w, "token  %s\n", t)
	}
	fmt.Fprintf(w, "hash   %s\n", out["hash"])
	return nil
}

// clientToken is a new token (policy.NewToken), or with
// --stdin the first line of standard input.
func clientToken(c *cli.Context) (string, error) {
	if !c.Bool("stdin") {
		return policy.NewToken()
	}
	sc := bufio.NewScanner(c.App.Reader)
	sc.Buffer(make([]byte, 4096), 4096)
	if !sc.Scan() {
		if sc.Err() != nil {
			return "", fmt.Errorf("--stdin: %w (a token is one line of at most 4 KiB)", sc.Err())
		}
		return "", errors.New("--stdin: no token on standard input")
	}
	token := strings.TrimSpace(sc.Text())
	if token == "" {
		return "", errors.New("--stdin: the token is empty")
	}
	return token, nil
}
