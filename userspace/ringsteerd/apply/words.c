// SPDX-License-Identifier: MIT
/*
 * The backend words: what rs_backends should hold for a backend now (from
 * the state and the loop's clock), written only where it differs from
 * the word last written. Every word of the state in force is written
 * here, its last one at stop too (restart_grace released); apply.c alone
 * writes the in-between words of a reload (make before break) and the
 * retired ones, upgrade.c those it carries from another ABI.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "view.h"

void daemon_backend_word(const struct daemon *d, const struct be_rt *be,
			 struct rs_backend *out)
{
	view_backend_word(&d->st, be, ev_now(d->loop), out);
}

/*
 * Every word of service @svc (the bound's total may have changed); the
 * first error. The others are still written: each word that was is
 * recorded as pushed, so pushing the undone state puts every one back.
 */
int service_push(struct daemon *d, size_t svc)
{
	int err = 0, e;

	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		if (d->st.cfg.backends[i].service != svc)
			continue;
		e = backend_push(d, &d->st.bes[i]);
		if (e && !err)
			err = e;
	}
	return err;
}

/* Write the backend's word if it changed. */
int backend_push(struct daemon *d, struct be_rt *be)
{
	struct rs_backend word;
	int err;

	daemon_backend_word(d, be, &word);
	if (be->pushed_valid && !memcmp(&word, &be->pushed, sizeof(word)))
		return 0;
	err = dp_set_backend(&d->dp, be->id, &word);
	if (err)
		return err;
	be->pushed = word;
	be->pushed_valid = true;
	return 0;
}

int daemon_ring_view(const struct daemon *d, struct rs_backend **backends,
		     bool **has_socket, uint32_t *n)
{
	*backends = calloc(RS_MAX_BACKENDS, sizeof(**backends));
	*has_socket = calloc(RS_MAX_BACKENDS, sizeof(**has_socket));
	if (!*backends || !*has_socket) {
		free(*backends);
		free(*has_socket);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		const struct be_rt *be = &d->st.bes[i];

		daemon_backend_word(d, be, &(*backends)[be->id]);
		/* Its flows wait for it: the ring keeps its points. */
		(*has_socket)[be->id] =
			be->has_socket ||
			view_restarting(&d->st, be, ev_now(d->loop));
	}
	*n = RS_MAX_BACKENDS;
	return 0;
}
