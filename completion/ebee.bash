# bash completion for ebee(8)
_ebee()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "trace top --help --version" -- "$cur"))
		return
	fi
	case $prev in
	-p | --pid)
		COMPREPLY=($(compgen -W "$(ps -e -o pid= 2>/dev/null)" -- "$cur"))
		return ;;
	-s | --sort)
		COMPREPLY=($(compgen -W "p99 rps requests pid" -- "$cur"))
		return ;;
	-m | --mode)
		COMPREPLY=($(compgen -W "auto conn io" -- "$cur"))
		return ;;
	--path)
		COMPREPLY=($(compgen -W "auto socket syscall" -- "$cur"))
		return ;;
	--attach)
		COMPREPLY=($(compgen -W "auto tp_btf fentry" -- "$cur"))
		return ;;
	-g | --cgroup)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	-d | --duration | -i | --interval | --ringbuf-size | --window | --window-age | -L | --listen)
		return ;;
	esac
	COMPREPLY=($(compgen -W "--pid --duration --interval --mode --json --ringbuf-size
		--window --window-age --listen --cgroup --hist --sort --path --attach --no-framing --all --verbose --version
		--help" -- "$cur"))
}
complete -F _ebee ebee
