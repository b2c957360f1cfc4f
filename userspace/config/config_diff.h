/* SPDX-License-Identifier: MIT */
/*
 * What a reload changes, by name: which services and backends come, go or
 * change, and how many rings will change. Pure: ringsteerd logs it on
 * every reload.
 */
#ifndef RS_CONFIG_DIFF_H
#define RS_CONFIG_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

struct rs_config_diff {
	size_t services_added, services_removed, services_changed;
	size_t backends_added, backends_removed;
	size_t weights_lowered, weights_raised;
	size_t addresses_changed, checks_changed, backends_moved;
	/*
	 * Services of the new configuration whose ring changes (a new
	 * service, a member added, removed or raised above its old weight,
	 * or vnodes or seed changed): for the log. Reload does not act on
	 * it: it builds every ring and swaps the ones that differ from the
	 * installed ring, which is exact where this is a forecast.
	 */
	size_t rebuilds;
	char summary[512]; /* one line for the log */
};

int rs_config_diff(const struct rs_config *old, const struct rs_config *cur,
		   struct rs_config_diff *out);

/* Same addresses, in the same order (the sockets to hold are the same). */
bool rs_backend_addrs_equal(const struct rs_backend_conf *a,
			    const struct rs_backend_conf *b);

#endif /* RS_CONFIG_DIFF_H */
