package main

import (
	_ "embed"
	"fmt"

	"github.com/urfave/cli/v2"
)

// Shell completion. urfave/cli v2 answers --generate-bash-completion, but
// generates only the fish script (App.ToFishCompletion); its bash and zsh
// scripts are files in its repository, not in the Go package.
// completion.bash and completion.zsh are adaptations of them: each asks
// the binary itself for candidates, so they stay current with the
// installed version's commands and flags.
var (
	//go:embed completion.bash
	bashCompletion string
	//go:embed completion.zsh
	zshCompletion string
)

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes oci-tofu's commands and flags:
  bash:  eval "$(oci-tofu completion bash)"           (e.g. in ~/.bashrc)
  zsh:   oci-tofu completion zsh > "${fpath[1]}/_oci-tofu"
  fish:  oci-tofu completion fish > ~/.config/fish/completions/oci-tofu.fish`,
		Action: printCompletion,
	}
}

func printCompletion(c *cli.Context) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	script := map[string]string{"bash": bashCompletion, "zsh": zshCompletion}[c.Args().First()]
	switch shell := c.Args().First(); {
	case shell == "fish":
		fish, err := c.App.ToFishCompletion()
		if err != nil {
			return err
		}
		script = fish
	case script == "":
		return usageError(c, "unknown shell %q: bash, zsh or fish", shell)
	}
	fmt.Fprint(c.App.Writer, script)
	return nil
}
