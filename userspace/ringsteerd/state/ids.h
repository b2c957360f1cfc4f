/* SPDX-License-Identifier: MIT */
/*
 * Which data-plane id each configured service or backend gets. Pure: it
 * reads what held each id before (the pinned maps at start-up, the state
 * being replaced on reload) and writes no map, so it is unit-tested.
 */
#ifndef RS_IDS_H
#define RS_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What held each of @max ids before the configuration being applied. */
struct id_table {
	uint32_t max;
	const char *const *held; /* [max]: name that held the id, or NULL */
	const uint32_t *owner;	 /* [max]: its service id, or NULL (services) */
	const bool *avoid; /* [max]: reuse only when nothing else is free */
};

/*
 * @ids[i] for each of @n names (@owners[i]: the service id of a backend,
 * ignored when @t->owner is NULL). A name keeps the id it held (and the
 * same owner): that is what adoption means. The rest take the lowest id
 * neither kept nor to avoid, so that a removed backend's sticky entries
 * are not taken over at once; avoided ids only when nothing else is left.
 * Returns 0, or -ENOSPC when the ids run out.
 */
int ids_assign(const struct id_table *t, const char *const *names,
	       const uint32_t *owners, size_t n, uint32_t *ids);

#endif /* RS_IDS_H */
