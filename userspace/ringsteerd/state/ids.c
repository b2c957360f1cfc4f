// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"

/* Lowest id not in @used; ids in @avoid only if nothing else is left. */
static int free_id(const bool *used, const bool *avoid, uint32_t max)
{
	for (uint32_t i = 0; i < max; i++)
		if (!used[i] && !avoid[i])
			return (int)i;
	for (uint32_t i = 0; i < max; i++)
		if (!used[i])
			return (int)i;
	return -ENOSPC;
}

static uint32_t held_id(const struct id_table *t, const char *name,
			uint32_t owner)
{
	for (uint32_t k = 0; k < t->max; k++)
		if (t->held[k] && t->held[k][0] && !strcmp(t->held[k], name) &&
		    (!t->owner || t->owner[k] == owner))
			return k;
	return UINT32_MAX;
}

int ids_assign(const struct id_table *t, const char *const *names,
	       const uint32_t *owners, size_t n, uint32_t *ids)
{
	bool *used = calloc(t->max ? t->max : 1, sizeof(*used));
	int err = 0;

	if (!used)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		ids[i] = held_id(t, names[i], owners ? owners[i] : 0);
		if (ids[i] != UINT32_MAX)
			used[ids[i]] = true;
	}
	for (size_t i = 0; i < n; i++) {
		int got;

		if (ids[i] != UINT32_MAX)
			continue;
		got = free_id(used, t->avoid, t->max);
		if (got < 0) {
			err = got;
			break;
		}
		used[got] = true;
		ids[i] = (uint32_t)got;
	}
	free(used);
	return err;
}
