# shellcheck shell=bash
# Helpers for integration tests that need real servers on 127.0.0.1. Source this file:
#
#   . tests/lib/servers.sh
#   port=$(free_port)
#   pid=$(start_memcached "$port") || exit 1
#   ...
#   stop_pid "$pid"
#
# Every start_* function runs the server in the background, waits (at most
# SERVERS_START_TIMEOUT seconds, default 5) until it accepts TCP connections, and prints the
# pid to stop later. On failure it prints the reason and the server's log to stderr, stops
# what it started and returns 1. The pid printed is the server's own (not a subshell's), so
# stop_pid and ebee --pid can use it directly.

SERVERS_START_TIMEOUT=${SERVERS_START_TIMEOUT:-5}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on now. The kernel picks it
# (bind to port 0), so it is in the ephemeral range; another process could take it before
# the caller binds, which is unlikely enough for tests.
free_port()
{
	local p i
	if command -v python3 >/dev/null; then
		python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
		return
	fi
	# Without python3: random ports below the ephemeral range (32768+) until one is unused.
	for ((i = 0; i < 100; i++)); do
		p=$((20000 + RANDOM % 12000))
		port_accepts "$p" || { echo "$p"; return 0; }
	done
	echo "servers.sh: no free port found" >&2
	return 1
}

# port_accepts PORT: true if a TCP connection to 127.0.0.1:PORT succeeds.
port_accepts()
{
	# bash's /dev/tcp: no dependency on nc.
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# _wait_accepting PID PORT NAME LOG: wait until PORT accepts while PID lives.
_wait_accepting()
{
	local pid=$1 port=$2 name=$3 log=$4 i
	local tries=$((SERVERS_START_TIMEOUT * 20))

	for ((i = 0; i < tries; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "servers.sh: $name (pid $pid) exited during start-up; its log ($log):" >&2
			[ -f "$log" ] && tail -n 20 "$log" >&2
			return 1
		fi
		port_accepts "$port" && return 0
		sleep 0.05
	done
	echo "servers.sh: $name (pid $pid) does not accept on 127.0.0.1:$port after" \
		"${SERVERS_START_TIMEOUT}s; its log ($log):" >&2
	[ -f "$log" ] && tail -n 20 "$log" >&2
	stop_pid "$pid"
	return 1
}

# start_memcached PORT [EXTRA ARGS...]: memcached with 2 threads and 64 MB, TCP only.
# Its output goes to ${SERVERS_LOG_DIR:-/tmp}/memcached-PORT.log.
start_memcached()
{
	local port=$1 log pid
	shift
	if [ -z "$port" ]; then
		echo "servers.sh: usage: start_memcached PORT [memcached args]" >&2
		return 1
	fi
	if ! command -v memcached >/dev/null; then
		echo "servers.sh: memcached is not installed (apt-get install memcached)" >&2
		return 1
	fi
	if port_accepts "$port"; then
		echo "servers.sh: 127.0.0.1:$port is already in use" >&2
		return 1
	fi
	log=${SERVERS_LOG_DIR:-/tmp}/memcached-$port.log
	memcached -u root -l 127.0.0.1 -p "$port" -t 2 -m 64 -U 0 "$@" </dev/null >"$log" 2>&1 &
	pid=$!
	_wait_accepting "$pid" "$port" memcached "$log" || return 1
	echo "$pid"
}

# memcached_requests PORT: the requests memcached on 127.0.0.1:PORT has served so far by its
# own count (cmd_get + cmd_set from "stats"), what ebee's counts are checked against.
memcached_requests()
{
	python3 - "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"stats\r\n"); b = b""
while not b.endswith(b"END\r\n"): b += s.recv(65536)
st = dict(l.split()[1:3] for l in b.decode().splitlines() if l.startswith("STAT"))
print(int(st["cmd_get"]) + int(st["cmd_set"]))
PY
}

# start_nginx DIR PORT KEEPALIVE(on|off) WORKERS: nginx with a master and WORKERS worker
# processes in the foreground (daemon off), serving "ok\n" for every path. The config, logs
# and pid file live in DIR (created if missing). keepalive off sets keepalive_timeout 0, so
# nginx closes after every response (the `conn` pattern); on keeps connections (the `io`
# pattern). Prints the master's pid; workers are its children.
start_nginx()
{
	local dir=$1 port=$2 ka=$3 workers=$4 kt pid
	if [ $# -ne 4 ] || { [ "$ka" != on ] && [ "$ka" != off ]; }; then
		echo "servers.sh: usage: start_nginx DIR PORT on|off WORKERS" >&2
		return 1
	fi
	if ! command -v nginx >/dev/null; then
		echo "servers.sh: nginx is not installed (apt-get install nginx-light)" >&2
		return 1
	fi
	if port_accepts "$port"; then
		echo "servers.sh: 127.0.0.1:$port is already in use" >&2
		return 1
	fi
	mkdir -p "$dir" || return 1
	dir=$(cd "$dir" && pwd) || return 1
	if [ "$ka" = on ]; then kt=65; else kt=0; fi
	nginx_conf "$dir" "	server {
		listen 127.0.0.1:$port;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}" "$dir/access.log" "$workers" "$kt" || return 1
	run_nginx "$dir" "$port"
}

# run_nginx DIR PORT...: nginx in the foreground from DIR/nginx.conf (nginx_conf), once
# it accepts on every PORT of 127.0.0.1; prints the master's pid (its log: DIR/error.log).
run_nginx()
{
	local dir=$1 pid port
	shift
	mkdir -p "$dir/tmp" "$dir/logs" || return 1
	nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" </dev/null >"$dir/stderr.log" 2>&1 &
	pid=$!
	for port in "$@"; do
		_wait_accepting "$pid" "$port" nginx "$dir/error.log" || return 1
	done
	echo "$pid"
}

# nginx_conf DIR SERVER_BLOCKS [ACCESS_LOG [WORKERS [KEEPALIVE_TIMEOUT]]]: DIR/nginx.conf for
# an nginx run in the foreground from DIR (logs, pid and temporary files there) serving
# SERVER_BLOCKS (nginx "server { }" text); ACCESS_LOG a path or off (default DIR/access.log),
# WORKERS 1, KEEPALIVE_TIMEOUT 65 s, and keep-alive connections never closed for their count.
nginx_conf()
{
	local dir=$1 servers=$2 log=${3:-$1/access.log} workers=${4:-1} kt=${5:-65}

	mkdir -p "$dir/tmp" || return 1
	cat >"$dir/nginx.conf" <<EOF
master_process on;
worker_processes $workers;
daemon off;
error_log $dir/error.log;
pid $dir/nginx.pid;
events { worker_connections 1024; }
http {
	access_log $log;
	keepalive_timeout $kt;
	keepalive_requests 100000000;
	client_body_temp_path $dir/tmp;
	proxy_temp_path $dir/tmp;
	fastcgi_temp_path $dir/tmp;
	uwsgi_temp_path $dir/tmp;
	scgi_temp_path $dir/tmp;
$servers
}
EOF
}

# nginx_workers MASTER_PID: print the worker pids (children of the master), one a line.
nginx_workers()
{
	pgrep -P "$1"
}

# stop_pid PID [NAME]: SIGTERM, wait up to 5 s, then SIGKILL. Reaps it if it is our child.
# Returns 0 once the process is gone (or was never there).
stop_pid()
{
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		_pid_gone "$pid" && break
		sleep 0.05
	done
	if ! _pid_gone "$pid"; then
		echo "servers.sh: pid $pid ignored SIGTERM for 5 s, sending SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null
		for ((i = 0; i < 40; i++)); do
			_pid_gone "$pid" && break
			sleep 0.05
		done
	fi
	wait "$pid" 2>/dev/null
	return 0
}

# A zombie (exited, not yet reaped) counts as gone.
_pid_gone()
{
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$state" ] || [ "$state" = Z ]
}
