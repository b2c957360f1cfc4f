// SPDX-License-Identifier: MIT
#include "socket_generations.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "socket_holders.h"

/* Field 22 of /proc/PID/stat; 0 when the process is gone. */
static uint64_t process_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The name may hold spaces and parentheses: count after the last. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return 0;
	return start;
}

static int by_inode(const void *a, const void *b)
{
	const struct rs_sock_gen *x = a, *y = b;

	return x->found.inode < y->found.inode	 ? -1
	       : x->found.inode > y->found.inode ? 1
						 : 0;
}

static int by_generation(const void *a, const void *b)
{
	const struct rs_sock_gen *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return by_inode(a, b);
}

struct holders {
	struct rs_sock_gen *g;
};

/* Keeps each socket's oldest holder. */
static int on_holder(size_t idx, pid_t pid, int fd, void *arg)
{
	struct rs_sock_gen *g = &((struct holders *)arg)->g[idx];
	uint64_t start = process_start(pid);

	if (!start || (g->pid && start >= g->start))
		return 0;
	g->pid = pid;
	g->fd = fd;
	g->start = start;
	return 0;
}

int sock_generations(const struct rs_sock_addr *addr, struct rs_sock_gen *out,
		     size_t max)
{
	struct rs_sock_found found[RS_GEN_PER_ADDR];
	uint64_t inodes[RS_GEN_PER_ADDR];
	struct holders h = {.g = out};
	size_t n, kept = 0;
	int got, err;

	if (max > RS_GEN_PER_ADDR)
		max = RS_GEN_PER_ADDR;
	got = sock_diag_find_all(addr, found, max);
	if (got <= 0)
		return got;
	n = (size_t)got;
	for (size_t i = 0; i < n; i++)
		out[i] = (struct rs_sock_gen){.found = found[i]};
	qsort(out, n, sizeof(*out), by_inode);
	for (size_t i = 0; i < n; i++)
		inodes[i] = out[i].found.inode;
	err = socket_holders_scan(inodes, n, on_holder, &h);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		if (out[i].pid)
			out[kept++] = out[i];
	qsort(out, kept, sizeof(*out), by_generation);
	return (int)kept;
}
