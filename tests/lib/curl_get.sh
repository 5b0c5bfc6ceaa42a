# shellcheck shell=bash
# curl_get PORT N [CURL ARGS...]: Debian's curl fetches http://127.0.0.1:PORT/ N times in one
# run (keep-alive where the server keeps the connection, a new one where it closes) and
# prints how many responses had status 200: a client count no project fixture makes, what
# the ebee tests compare ebee's count with where the server is one of ours (issue 40).
curl_get() {
	local port=$1 n=$2 i urls=()
	shift 2
	for ((i = 0; i < n; i++)); do urls+=(-o /dev/null "http://127.0.0.1:$port/"); done
	curl -s "$@" -w '%{http_code}\n' "${urls[@]}" | grep -c '^200$'
}
