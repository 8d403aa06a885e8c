package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// Shell completion scripts. Each asks the binary itself for candidates
// with urfave/cli's --generate-bash-completion, so they stay current with
// the commands and flags of the installed version. urfave/cli v2 generates
// only the fish script (App.ToFishCompletion); its bash and zsh scripts are
// files in its repository, not part of the Go package, so these are
// adaptations of them.
const (
	bashCompletion = `# oci-tofu completion for bash: eval "$(oci-tofu completion bash)"
_oci_tofu_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" opts
  local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  if [[ "$cur" == -* ]]; then
    opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _oci_tofu_complete oci-tofu
`
	zshCompletion = `#compdef oci-tofu
# oci-tofu completion for zsh: oci-tofu completion zsh > "${fpath[1]}/_oci-tofu"
_oci_tofu() {
  local -a opts
  local cur=${words[CURRENT]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[1,CURRENT-1]} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[1,CURRENT-1]} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ -n "${opts[1]}" ]]; then
    compadd -a opts
  else
    _files
  fi
}
compdef _oci_tofu oci-tofu
`
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
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1, 1); err != nil {
				return err
			}
			switch shell := c.Args().First(); shell {
			case "bash":
				fmt.Fprint(c.App.Writer, bashCompletion)
			case "zsh":
				fmt.Fprint(c.App.Writer, zshCompletion)
			case "fish":
				script, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				fmt.Fprint(c.App.Writer, script)
			default:
				return usageError(c, "unknown shell %q: bash, zsh or fish", shell)
			}
			return nil
		},
	}
}
