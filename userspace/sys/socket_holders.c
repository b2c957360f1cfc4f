// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socket_holders.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Called for every socket the walk meets when it looks for all of them
 * (inodes NULL): the inode instead of an index.
 */
typedef int (*any_socket_fn)(uint64_t inode, pid_t pid, int fd, void *arg);

struct wanted {
	const uint64_t *inodes; /* NULL: every socket, to @any */
	size_t n;
	socket_holder_fn fn;
	any_socket_fn any;
	void *arg;
};

/* Returns non-zero when a callback ended the walk. */
static int scan_pid(int proc_fd, pid_t pid, const struct wanted *w)
{
	char path[64], target[64];
	struct dirent *de;
	int dfd, stop = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "%d/fd", (int)pid);

	dfd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return 0;
	}
	while (!stop && (de = readdir(dir))) {
		unsigned long long ino;
		const uint64_t *hit;
		uint64_t key;
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		len = readlinkat(dfd, de->d_name, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "socket:[%llu]", &ino) != 1)
			continue;
		key = ino;
		if (!w->inodes) {
			stop = w->any(key, pid, atoi(de->d_name), w->arg);
			continue;
		}
		hit = bsearch(&key, w->inodes, w->n, sizeof(*w->inodes),
			      cmp_u64);
		if (hit)
			stop = w->fn((size_t)(hit - w->inodes), pid,
				     atoi(de->d_name), w->arg);
	}
	closedir(dir);
	return stop;
}

static int walk(const struct wanted *w)
{
	pid_t self = getpid();
	struct dirent *de;
	int proc_fd, err;
	DIR *proc;

	proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return -errno;
	proc = fdopendir(dup(proc_fd));
	if (!proc) {
		err = -errno;
		close(proc_fd);
		return err;
	}
	while ((de = readdir(proc))) {
		char *end;
		long p = strtol(de->d_name, &end, 10);

		if (*end || p <= 0 || p == self)
			continue;
		if (scan_pid(proc_fd, (pid_t)p, w))
			break;
	}
	closedir(proc);
	close(proc_fd);
	return 0;
}

/*
 * A batch's index (socket_holders.h): every socket any process held when
 * the batch's first scan made it, one entry per (inode, pid, fd), sorted
 * by inode and, within one, in the walk's order (seq), so that callers
 * see holders in the order a walk of their own would have met them.
 */
struct holder {
	uint64_t inode;
	uint64_t seq;
	size_t idx; /* in a scan's answer: the inode's index in its set */
	pid_t pid;
	int fd;
};

static struct {
	int depth;
	bool built;
	struct holder *h;
	size_t n, cap;
} batch;

static int index_add(uint64_t inode, pid_t pid, int fd, void *arg)
{
	bool *oom = arg;

	if (batch.n == batch.cap) {
		size_t cap = batch.cap ? 2 * batch.cap : 1024;
		struct holder *h = realloc(batch.h, cap * sizeof(*h));

		if (!h) {
			*oom = true;
			return 1;
		}
		batch.h = h;
		batch.cap = cap;
	}
	batch.h[batch.n] = (struct holder){
		.inode = inode, .seq = batch.n, .pid = pid, .fd = fd};
	batch.n++;
	return 0;
}

static int cmp_holder(const void *a, const void *b)
{
	const struct holder *x = a, *y = b;

	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_inode(const void *key, const void *b)
{
	uint64_t k = *(const uint64_t *)key,
		 i = ((const struct holder *)b)->inode;

	return k < i ? -1 : k > i;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct holder *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int index_build(void)
{
	bool oom = false;
	struct wanted w = {.any = index_add, .arg = &oom};
	int err;

	batch.n = 0;
	err = walk(&w);
	if (!err && oom)
		err = -ENOMEM;
	if (err)
		return err;
	qsort(batch.h, batch.n, sizeof(*batch.h), cmp_holder);
	batch.built = true;
	return 0;
}

/* Appends the index's holders of @inode (index @k of the set) to @hits. */
static int index_hits(uint64_t inode, size_t k, struct holder **hits, size_t *n,
		      size_t *cap)
{
	const struct holder *h =
		bsearch(&inode, batch.h, batch.n, sizeof(*batch.h), cmp_inode);
	size_t i;

	if (!h)
		return 0;
	i = (size_t)(h - batch.h);
	while (i > 0 && batch.h[i - 1].inode == inode)
		i--;
	for (; i < batch.n && batch.h[i].inode == inode; i++) {
		if (*n == *cap) {
			size_t c = *cap ? 2 * *cap : 16;
			struct holder *p = realloc(*hits, c * sizeof(*p));

			if (!p)
				return -ENOMEM;
			*hits = p;
			*cap = c;
		}
		(*hits)[*n] = batch.h[i];
		(*hits)[(*n)++].idx = k;
	}
	return 0;
}

static int index_scan(const uint64_t *inodes, size_t n, socket_holder_fn fn,
		      void *arg)
{
	struct holder *hits = NULL;
	size_t nhits = 0, cap = 0;
	int err = 0;

	for (size_t k = 0; k < n && !err; k++)
		err = index_hits(inodes[k], k, &hits, &nhits, &cap);
	if (!err) {
		qsort(hits, nhits, sizeof(*hits), cmp_seq);
		for (size_t i = 0; i < nhits; i++)
			if (fn(hits[i].idx, hits[i].pid, hits[i].fd, arg))
				break;
	}
	free(hits);
	return err;
}

void socket_holders_batch_begin(void)
{
	batch.depth++;
}

void socket_holders_batch_end(void)
{
	if (batch.depth <= 0 || --batch.depth > 0)
		return;
	free(batch.h);
	batch.h = NULL;
	batch.n = batch.cap = 0;
	batch.built = false;
}

int socket_holders_scan(const uint64_t *inodes, size_t n, socket_holder_fn fn,
			void *arg)
{
	struct wanted w = {.inodes = inodes, .n = n, .fn = fn, .arg = arg};

	if (!n)
		return 0;
	/* Without a batch, or when its index cannot be made: a walk. */
	if (batch.depth > 0 && (batch.built || !index_build()))
		return index_scan(inodes, n, fn, arg);
	return walk(&w);
}
