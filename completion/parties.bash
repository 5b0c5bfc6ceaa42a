# bash completion for parties(8)
_parties()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	case $prev in
	-c | --config)
		COMPREPLY=($(compgen -f -X '!*.ini' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	-l | --log)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-d | --duration | -m | --metrics)
		return ;;
	esac
	COMPREPLY=($(compgen -W "--config --dry-run --duration --log --cleanup --metrics
		--verbose --version --help --check-config --simulate --seed --show-topology
		--list-policies" -- "$cur"))
}
complete -F _parties parties
