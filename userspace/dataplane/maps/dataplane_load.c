// SPDX-License-Identifier: MIT
/*
 * The load gauge seen from the daemon: read, and corrected with atomic
 * adds through an mmap() of the two maps. steer_sockops adds to the same
 * words concurrently; a bpf_map_update_elem() would copy a whole value
 * over the kernel's adds, an atomic add in shared memory composes with
 * them.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dataplane_internal.h"
#include "log.h"

static int load_map(struct bpf_map *map, void **mem, size_t *len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t want =
		(size_t)bpf_map__max_entries(map) * sizeof(struct rs_load);
	void *p;

	if (*mem)
		return 0;
	want = (want + page - 1) / page * page;
	p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED,
		 bpf_map__fd(map), 0);
	if (p == MAP_FAILED) {
		int err = -errno;

		rs_err("bpf: cannot mmap %s: %s", bpf_map__name(map),
		       strerror(-err));
		return err;
	}
	*mem = p;
	*len = want;
	return 0;
}

static int load_words(struct rs_dataplane *dp)
{
	int err = load_map(dp->skel->maps.rs_backend_load, &dp->load_mem[0],
			   &dp->load_len[0]);

	if (err)
		return err;
	return load_map(dp->skel->maps.rs_service_load, &dp->load_mem[1],
			&dp->load_len[1]);
}

int dp_load_add(struct rs_dataplane *dp, uint32_t backend, uint32_t service,
		int64_t delta)
{
	struct rs_load *be, *svc;
	int err;

	if ((backend >= RS_MAX_BACKENDS && backend != RS_NONE) ||
	    (service >= RS_MAX_SERVICES && service != RS_NONE))
		return -EINVAL;
	if (!delta)
		return 0;
	err = load_words(dp);
	if (err)
		return err;
	be = (struct rs_load *)dp->load_mem[0] + backend;
	svc = (struct rs_load *)dp->load_mem[1] + service;
	if (backend != RS_NONE)
		__atomic_fetch_add(&be->active, delta, __ATOMIC_SEQ_CST);
	if (service != RS_NONE)
		__atomic_fetch_add(&svc->active, delta, __ATOMIC_SEQ_CST);
	return 0;
}

void dp_load_unmap(struct rs_dataplane *dp)
{
	for (int i = 0; i < 2; i++) {
		if (dp->load_mem[i])
			munmap(dp->load_mem[i], dp->load_len[i]);
		dp->load_mem[i] = NULL;
		dp->load_len[i] = 0;
	}
}

int dp_counted_storage(struct rs_dataplane *dp, int fd[2], uint32_t id[2])
{
	fd[0] = bpf_map__fd(dp->skel->maps.rs_listen);
	fd[1] = bpf_map__fd(dp->skel->maps.rs_conn);
	for (int i = 0; i < 2; i++) {
		id[i] = dp_map_id_of_fd(fd[i]);
		if (!id[i])
			return -ENOENT;
	}
	return 0;
}
