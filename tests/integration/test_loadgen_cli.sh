#!/bin/bash
# build/loadgen's command line: every kind of bad input exits 2 with a one-line reason that
# names the option, before any traffic; --help exits 0 with the usage on stdout. (Runs with
# the integration tests; needs no root and no server: nothing here gets as far as a connect.)
set -u
cd "$(dirname "$0")/../.."
LG=build/loadgen
[ -x $LG ] || { echo "FAIL: build first (make all)"; exit 1; }
tmp=$(mktemp -d /tmp/loadgen-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

# refused WANT ARGS...: exit 2 within 5 s, WANT on stderr, nothing on stdout
refused() {
	local want=$1 rc
	shift
	timeout 5 $LG "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -ne 2 ] || ! grep -qF -- "$want" "$tmp/err" || [ -s "$tmp/out" ]; then
		echo "FAIL: loadgen $*: exit $rc, want 2 and '$want'; stderr: $(head -c 300 "$tmp/err")"
		fails=$((fails + 1))
	else
		echo "ok: loadgen $*: $(head -1 "$tmp/err")"
	fi
}

ok_args=(--port 9 --rate 10 --duration 1)
refused "--port is required" --rate 10 --duration 1
refused "bad value '0' for --port (expected 1..65535)" --port 0 --rate 10 --duration 1
refused "bad value 'x' for --rate" --port 9 --rate x --duration 1
refused "bad value '-1' for --duration" --port 9 --rate 10 --duration -1
refused "need --schedule, or --rate and --duration" --port 9 --rate 10
refused "not both" --port 9 --schedule 0:1,1:1 --rate 5
refused "--schedule 'nonsense'" --port 9 --schedule nonsense
refused "--proto is http or memcached, not 'ftp'" "${ok_args[@]}" --proto ftp
refused "--host must be an IPv4 address, not 'example.org'" "${ok_args[@]}" --host example.org
refused "bad value '2' for --get-ratio (expected 0..1)" "${ok_args[@]}" --get-ratio 2
refused "bad value '0' for --conns" "${ok_args[@]}" --conns 0
refused "bad value '0' for --value-size" "${ok_args[@]}" --value-size 0
refused "bad value '11' for --zipf-alpha" "${ok_args[@]}" --zipf-alpha 11
refused "bad value '1.5x' for --feed-ms" "${ok_args[@]}" --feed-ms 1.5x
refused "--path must start with /" "${ok_args[@]}" --path index.html
refused "cannot open feed file $tmp/no/such/dir" "${ok_args[@]}" --feed "$tmp/no/such/dir"
refused "unexpected argument 'extra'" "${ok_args[@]}" extra
refused "usage: loadgen" "${ok_args[@]}" --no-such-option

timeout 5 $LG --help >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "^usage: loadgen" "$tmp/out" && [ ! -s "$tmp/err" ]; then
	echo "ok: --help exits 0 with the usage on stdout"
else
	echo "FAIL: --help: exit $rc, stdout $(head -c 100 "$tmp/out")"
	fails=$((fails + 1))
fi
# every option the usage lists is accepted by the parser (refused for its value, if at all,
# never as unknown)
for o in $(grep -o -- '--[a-z][a-z-]*' "$tmp/out" | sort -u); do
	timeout 5 $LG "$o" 1 >/dev/null 2>"$tmp/err"
	if grep -q "unrecognized option\|invalid option" "$tmp/err"; then
		echo "FAIL: --help lists $o, which the parser does not know"
		fails=$((fails + 1))
	fi
done
[ $fails -eq 0 ] && echo PASS
exit $((fails > 0))
