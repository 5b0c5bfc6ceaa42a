/* SPDX-License-Identifier: MIT */
/* gRPC fixtures for tests: build/fixtures/grpc_server and grpc_client. */
#ifndef GRPCUTIL_H
#define GRPCUTIL_H

#include <sys/types.h>

/* grpc_server with --delay-us delay_us and extra args on a free port; waits
 * until it serves; its pid, port in *port (registered with tu_spawn). */
pid_t tu_start_grpc_server(int *port, long delay_us, const char *const extra[]);

/* Run grpc_client against port: n calls, k in flight, extra args; the
 * counts it printed ("ok", "deadline"; either may be NULL). Its exit status,
 * or -1 if it could not run. */
/* Wall time (s) of the last tu_grpc_client() run. */
extern double tu_grpc_client_wall_s;
/* Its slowest call that completed in time (us; its "max_us" line). */
extern long long tu_grpc_client_max_us;
int tu_grpc_client(int port, int n, int k, const char *const extra[], long long *ok,
		   long long *deadline);

/* Debian's h2load making n unary calls of /ebeetest.Work/Do (an empty
 * WorkRequest: the server's --delay-us) on one connection, k in flight: a
 * client count no fixture makes (issue 40). The calls it says succeeded, if
 * none failed and each took at least min_us by its own log (a call the server
 * refused at once is an HTTP 200 too); else -1. Sets tu_grpc_client_wall_s. */
long long tu_h2load_grpc(int port, int n, int k, long long min_us);
/* Its parts, for a caller that runs h2load itself: the argv (static storage,
 * until the next call; NULL on failure) and the path of its latency log in
 * *lat_log; the check of its output (out) and log, as above. */
char *const *tu_h2load_grpc_argv(int port, int n, int k, const char **lat_log);
long long tu_h2load_grpc_check(const char *out, const char *lat_log, int n, long long min_us);

#endif
