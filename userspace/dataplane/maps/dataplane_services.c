// SPDX-License-Identifier: MIT
/*
 * rs_services and rs_backends, one row per id: a service's parameters, and
 * the backend state word the program reads at every step of its walk.
 */
#include <errno.h>

#include "dataplane_internal.h"

int dp_set_service(struct rs_dataplane *dp, uint32_t id,
		   const struct rs_service *svc)
{
	return dp_map_update(dp->skel->maps.rs_services, &id, svc,
			     "rs_services");
}

int dp_set_backend(struct rs_dataplane *dp, uint32_t id,
		   const struct rs_backend *be)
{
	return dp_map_update(dp->skel->maps.rs_backends, &id, be,
			     "rs_backends");
}

int dp_get_service(struct rs_dataplane *dp, uint32_t id, struct rs_service *svc)
{
	if (bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_services), &id,
				svc))
		return -errno;
	return 0;
}

int dp_get_backend(struct rs_dataplane *dp, uint32_t id, struct rs_backend *be)
{
	if (bpf_map_lookup_elem(bpf_map__fd(dp->skel->maps.rs_backends), &id,
				be))
		return -errno;
	return 0;
}
