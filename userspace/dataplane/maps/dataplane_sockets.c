// SPDX-License-Identifier: MIT
/*
 * The backends' listening sockets in rs_sockets, two slots per backend (one
 * per client family). The SOCKMAP holds its own reference, so the caller's
 * fd can be closed at once and a backend that exits empties its slot by
 * itself, daemon or no daemon. A TCP listener also carries its backend
 * and service in rs_listen storage (include/ringsteer/abi.h).
 */
#include <errno.h>
#include <string.h>

#include "dataplane_internal.h"
#include "log.h"

int dp_set_socket(struct rs_dataplane *dp, uint32_t slot, int sock_fd)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_sockets);
	__u64 value = (__u64)sock_fd;

	if (bpf_map_update_elem(fd, &slot, &value, BPF_ANY))
		return -errno;
	return 0;
}

int dp_clear_socket(struct rs_dataplane *dp, uint32_t slot)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_sockets);

	/* SOCKMAP reports an already empty slot as EINVAL, not ENOENT. */
	if (bpf_map_delete_elem(fd, &slot) && errno != ENOENT &&
	    errno != EINVAL) {
		int err = -errno;

		rs_err("bpf: clearing SOCKMAP slot %u failed: %s", slot,
		       strerror(-err));
		return err;
	}
	return 0;
}

int dp_socket_cookie(struct rs_dataplane *dp, uint32_t slot, uint64_t *cookie)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_sockets);
	__u64 value;

	if (bpf_map_lookup_elem(fd, &slot, &value))
		return -errno;
	*cookie = value;
	return 0;
}

int dp_set_listener(struct rs_dataplane *dp, int sock_fd, uint32_t backend,
		    uint32_t service)
{
	int fd = bpf_map__fd(dp->skel->maps.rs_listen);
	struct rs_conn value = {.backend = backend, .service = service};

	if (bpf_map_update_elem(fd, &sock_fd, &value, BPF_ANY))
		return -errno;
	return 0;
}
