// SPDX-License-Identifier: MIT
/*
 * Which processes hold which sockets (userspace/sys/socket_holders.c):
 * a batch answers from one walk of /proc exactly what a walk per scan
 * answers, in the same order, stop included. A child process holds the
 * sockets (a scan never looks at its caller).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "socket_holders.h"

#define NSOCK	3
#define MAXHITS 16

struct hit {
	size_t idx;
	pid_t pid;
	int fd;
};

struct hits {
	struct hit h[MAXHITS];
	size_t n;
	size_t stop_after; /* 0: never */
};

static pid_t child = -1;
static uint64_t inodes[NSOCK];

static int record(size_t idx, pid_t pid, int fd, void *arg)
{
	struct hits *r = arg;

	if (r->n < MAXHITS)
		r->h[r->n++] = (struct hit){idx, pid, fd};
	return r->stop_after && r->n >= r->stop_after;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The child: NSOCK sockets and a dup of the first, then waits. */
static int setup(void)
{
	int p[2];

	if (pipe(p))
		return -1;
	child = fork();
	if (child < 0)
		return -1;
	if (child == 0) {
		uint64_t ino[NSOCK];
		struct stat st;

		for (int i = 0; i < NSOCK; i++) {
			int fd = socket(AF_INET, SOCK_DGRAM, 0);

			if (fd < 0 || fstat(fd, &st))
				_exit(1);
			ino[i] = st.st_ino;
			if (i == 0 && dup(fd) < 0)
				_exit(1);
		}
		if (write(p[1], ino, sizeof(ino)) != (ssize_t)sizeof(ino))
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], inodes, sizeof(inodes)) != (ssize_t)sizeof(inodes))
		return -1;
	close(p[0]);
	qsort(inodes, NSOCK, sizeof(inodes[0]), cmp_u64);
	return 0;
}

static int teardown(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	return 0;
}

static void same(const struct hits *a, const struct hits *b)
{
	CU_ASSERT_EQUAL_FATAL(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		CU_ASSERT_EQUAL(a->h[i].idx, b->h[i].idx);
		CU_ASSERT_EQUAL(a->h[i].pid, b->h[i].pid);
		CU_ASSERT_EQUAL(a->h[i].fd, b->h[i].fd);
	}
}

static void test_batch_answers_as_a_walk(void)
{
	struct hits walk = {0}, first = {0}, again = {0};

	CU_ASSERT_EQUAL_FATAL(socket_holders_scan(inodes, NSOCK, record, &walk),
			      0);
	/* Three sockets, the first held twice: four, all the child's. */
	CU_ASSERT_EQUAL(walk.n, NSOCK + 1);
	for (size_t i = 0; i < walk.n; i++)
		CU_ASSERT_EQUAL(walk.h[i].pid, child);
	socket_holders_batch_begin();
	CU_ASSERT_EQUAL(socket_holders_scan(inodes, NSOCK, record, &first), 0);
	CU_ASSERT_EQUAL(socket_holders_scan(inodes, NSOCK, record, &again), 0);
	socket_holders_batch_end();
	same(&walk, &first);
	same(&walk, &again);
}

static void test_subsets_and_stop(void)
{
	struct hits walk = {.stop_after = 1}, batch = {.stop_after = 1};
	struct hits one = {0}, one_b = {0};

	CU_ASSERT_EQUAL(socket_holders_scan(inodes, NSOCK, record, &walk), 0);
	CU_ASSERT_EQUAL(socket_holders_scan(&inodes[1], 1, record, &one), 0);
	socket_holders_batch_begin();
	socket_holders_batch_begin(); /* nested: the outer pair owns it */
	CU_ASSERT_EQUAL(socket_holders_scan(inodes, NSOCK, record, &batch), 0);
	socket_holders_batch_end();
	CU_ASSERT_EQUAL(socket_holders_scan(&inodes[1], 1, record, &one_b), 0);
	socket_holders_batch_end();
	CU_ASSERT_EQUAL(walk.n, 1);
	same(&walk, &batch);
	CU_ASSERT_EQUAL(one.n, 1);
	CU_ASSERT_EQUAL(one.h[0].idx, 0);
	same(&one, &one_b);
}

int main(void)
{
	CU_pSuite s;
	unsigned failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("socket holders", setup, teardown);
	CU_add_test(s, "a batch answers as a walk, in its order",
		    test_batch_answers_as_a_walk);
	CU_add_test(s, "subsets, stop, nesting", test_subsets_and_stop);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}
