// SPDX-License-Identifier: MIT
#include "bpf_fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

int fixture_main(const char *suite, int (*setup)(void), void (*teardown)(void),
		 const struct fixture_test *tests, size_t ntests)
{
	CU_pSuite s;
	int failed;

	/* The verifier log of a failed load is not what a test reports. */
	libbpf_set_print(NULL);
	if (setup()) {
		fprintf(stderr,
			"%s: setup failed: %s (root and a BPF-capable kernel "
			"needed)\n",
			program_invocation_short_name, strerror(errno));
		return 1;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite(suite, NULL, NULL);
	for (size_t i = 0; i < ntests; i++)
		CU_add_test(s, tests[i].name, tests[i].fn);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	teardown();
	return failed != 0 || CU_get_error();
}

void fixture_private_maps(struct bpf_object *obj)
{
	struct bpf_map *map;

	for (map = bpf_object__next_map(obj, NULL); map;
	     map = bpf_object__next_map(obj, map))
		bpf_map__set_pin_path(map, NULL);
}

socklen_t fixture_sockaddr(int family, const char *addr, uint16_t port,
			   struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
			return 0;
		return sizeof(*sin);
	}
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) != 1)
		return 0;
	return sizeof(*sin6);
}

int fixture_socket(int family, int type, const char *addr, uint16_t port,
		   bool reuseport)
{
	struct sockaddr_storage ss;
	socklen_t len = fixture_sockaddr(family, addr, port, &ss);
	int one = 1, fd;

	if (!len)
		return -1;
	fd = socket(family, type, 0);
	if (fd < 0)
		return -1;
	if ((family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    (reuseport &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
	    bind(fd, (struct sockaddr *)&ss, len) ||
	    (type == SOCK_STREAM && listen(fd, 16))) {
		close(fd);
		return -1;
	}
	return fd;
}

int fixture_loopback_socket(int family, int type, uint64_t *cookie)
{
	const char *addr = family == AF_INET ? "127.0.0.1" : "::1";
	int fd = fixture_socket(family, type, addr, 0, false);
	socklen_t len = sizeof(*cookie);

	if (fd >= 0 && cookie &&
	    getsockopt(fd, SOL_SOCKET, SO_COOKIE, cookie, &len)) {
		close(fd);
		return -1;
	}
	return fd;
}

int fixture_bind_entry(struct rs_bind_key *k, struct rs_bind *v, int proto,
		       int family, const char *addr, int plen, uint16_t port,
		       uint32_t svc)
{
	memset(k, 0, sizeof(*k));
	memset(v, 0, sizeof(*v));
	/* The LPM key's prefix covers protocol, family and port first. */
	k->prefixlen = 32 + plen;
	k->protocol = proto;
	k->family = family;
	k->port = port;
	v->service = svc;
	v->addr_prefixlen = plen;
	return inet_pton(family, addr, k->addr) == 1 ? 0 : -1;
}

int fixture_percpu_sum(int map_fd, uint32_t key, void *sum, size_t size)
{
	/*
	 * The kernel copies one value per possible CPU, each rounded up to
	 * 8 bytes; with __u64 counters only there is no rounding to skip.
	 */
	size_t words = size / sizeof(__u64);
	int ncpus = libbpf_num_possible_cpus();
	__u64 *out = sum, *v;
	int err;

	memset(sum, 0, size);
	if (ncpus <= 0 || size % sizeof(__u64))
		return -1;
	v = calloc(ncpus, size);
	if (!v)
		return -1;
	err = bpf_map_lookup_elem(map_fd, &key, v);
	for (int c = 0; c < ncpus && !err; c++)
		for (size_t w = 0; w < words; w++)
			out[w] += v[c * words + w];
	free(v);
	return err ? -1 : 0;
}

uint64_t fixture_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}
