# oci-tofu completion for bash: eval "$(oci-tofu completion bash)"
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
