/* SPDX-License-Identifier: MIT */
/*
 * A /metrics endpoint on libmicrohttpd: one internal epoll thread, GET only,
 * a 5 s deadline per request however active the client (slowloris). The
 * page is rendered on each scrape by a callback, so it is never staler than
 * the data behind it.
 */
#ifndef PROMHTTP_H
#define PROMHTTP_H

#include <stddef.h>

#include "prom.h"

/* Fill b; return 0 or a negative errno (the scrape then gets a 500). Called
 * on the server's thread, one scrape at a time. */
typedef int (*promhttp_render_fn)(struct prom_buf *b, void *ctx);

struct promhttp;

/*
 * Listen on addr: "HOST:PORT", ":PORT" (every interface, as node_exporter's
 * ":9100"), or "[V6ADDR]:PORT"; PORT 0 picks a free one. Signals stay
 * with the caller's threads. NULL with errno set and a one-line reason in msg.
 */
struct promhttp *promhttp_start(const char *addr, promhttp_render_fn fn, void *ctx, char *msg,
				size_t msg_len);
/* The port actually bound (useful with PORT 0). */
int promhttp_port(const struct promhttp *h);
/* Stop serving and free. NULL is fine. */
void promhttp_stop(struct promhttp *h);

#endif /* PROMHTTP_H */
