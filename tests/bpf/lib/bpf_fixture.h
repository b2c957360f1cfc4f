/* SPDX-License-Identifier: MIT */
/*
 * bpf_fixture: what every BPF test program needs around its checks: the
 * CUnit main(), maps that cannot touch pinned state, loopback sockets for
 * the SOCKMAP, bind entries, per-CPU counters summed over the CPUs and a
 * replayable random generator.
 *
 * The programs under test (steer_lookup, steer_tc) share the maps and
 * their layouts (include/ringsteer/abi.h), so their tests set them up and
 * read them back the same way; doing it in one place keeps a test from
 * quietly reading a counter on one CPU only or pinning into the daemon's
 * bpffs directory.
 */
#ifndef BPF_FIXTURE_H
#define BPF_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <CUnit/CUnit.h>
#include <ringsteer/abi.h>

struct bpf_object;

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

struct fixture_test {
	const char *name;
	CU_TestFunc fn;
};

/*
 * The whole main() of a BPF test program: runs @setup (failing with a hint
 * that root and a BPF-capable kernel are needed), then @tests as the CUnit
 * suite @suite with verbose output, then @teardown. Returns the exit
 * status: non-zero when a test failed or CUnit itself did.
 */
int fixture_main(const char *suite, int (*setup)(void), void (*teardown)(void),
		 const struct fixture_test *tests, size_t ntests);

/*
 * Clears the pin path of every map of @obj, before it is loaded: the test
 * must neither reuse the state of a running ringsteerd nor leave its own
 * behind.
 */
void fixture_private_maps(struct bpf_object *obj);

/* @addr:@port in @ss. Returns the length for bind()/sendto(), 0 if bad. */
socklen_t fixture_sockaddr(int family, const char *addr, uint16_t port,
			   struct sockaddr_storage *ss);

/*
 * A socket of @type bound to @addr:@port (port 0: any), listening if it is
 * a stream socket. IPv6 sockets are IPv6-only so that an AF_INET6 slot
 * never silently serves IPv4. Returns the fd or -1.
 */
int fixture_socket(int family, int type, const char *addr, uint16_t port,
		   bool reuseport);

/*
 * fixture_socket() on 127.0.0.1 or ::1, any port. With @cookie, also its
 * socket cookie, which is how a program's choice of socket is seen from
 * userspace (the sk_lookup context reports the cookie it selected).
 */
int fixture_loopback_socket(int family, int type, uint64_t *cookie);

/*
 * An rs_binds entry: @addr/@plen, @port (0: every port) of @proto to
 * service @svc. Returns 0, or -1 if @addr does not parse.
 */
int fixture_bind_entry(struct rs_bind_key *k, struct rs_bind *v, int proto,
		       int family, const char *addr, int plen, uint16_t port,
		       uint32_t svc);

/*
 * Element @key of the per-CPU map @map_fd summed over all possible CPUs
 * into @sum, a struct of @size bytes made of __u64 counters only (as all
 * the rs_*_stats are). Returns 0 or -1.
 */
int fixture_percpu_sum(int map_fd, uint32_t key, void *sum, size_t size);

/*
 * xorshift64: the same @state always gives the same sequence, so a test
 * that prints its seed can be replayed exactly. @state must not be 0.
 */
uint64_t fixture_rand(uint64_t *state);

#endif /* BPF_FIXTURE_H */
