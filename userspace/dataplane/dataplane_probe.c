// SPDX-License-Identifier: MIT
/*
 * Kernel feature probes (dataplane_probe.h). The helper and type probes
 * load a trivial program through libbpf; the SO_REUSEPORT probe needs a
 * real packet at real TC ingress, so it runs in a forked child inside a
 * network namespace of its own: the caller's namespace, its interfaces and
 * its filters are never touched, and whatever the child set up vanishes
 * with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "dataplane_probe.h"
#include "steer_probe.skel.h"

/* libbpf's answers are 1, 0 or negative errno already. */
static int prog_type(enum bpf_prog_type t)
{
	return libbpf_probe_bpf_prog_type(t, NULL);
}

static int helper(enum bpf_prog_type t, enum bpf_func_id f)
{
	return libbpf_probe_bpf_helper(t, f, NULL);
}

static int lo_up(void)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		err = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (!err && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* A UDP socket on 127.0.0.1:@port (0: any), SO_REUSEPORT set. */
static int reuseport_socket(uint16_t port, uint16_t *bound)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (bound)
		*bound = ntohs(a.sin_port);
	return fd;
}

/*
 * In the child, in its own network namespace: attach steer_probe to lo,
 * put a SO_REUSEPORT socket (one of a group of two) in its SOCKMAP, send a
 * datagram through lo. Returns what bpf_sk_assign said (0 or -errno), or
 * a negative errno of the setup with @setup_failed set.
 */
static long probe_in_child(bool *setup_failed)
{
	struct steer_probe_bpf *skel = NULL;
	struct timespec ms = {0, 1000000};
	uint16_t port = 0;
	int s1 = -1, s2 = -1, c = -1, err;
	uint32_t k = 0;
	uint64_t fd;
	__s64 r = 1;

	*setup_failed = true;
	if (unshare(CLONE_NEWNET))
		return -errno;
	err = lo_up();
	if (err)
		return err;
	skel = steer_probe_bpf__open_and_load();
	if (!skel)
		return -errno;
	s1 = reuseport_socket(0, &port);
	s2 = s1 >= 0 ? reuseport_socket(port, NULL) : -1;
	c = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	err = s1 < 0 ? s1 : s2 < 0 ? s2 : c < 0 ? -errno : 0;
	fd = (uint64_t)s1;
	if (!err &&
	    bpf_map_update_elem(bpf_map__fd(skel->maps.probe_sock), &k, &fd, 0))
		err = -errno;
	if (!err && bpf_map_update_elem(bpf_map__fd(skel->maps.probe_result),
					&k, &r, 0))
		err = -errno;
	if (!err) {
		LIBBPF_OPTS(bpf_tc_hook, hook,
			    .ifindex = (int)if_nametoindex("lo"),
			    .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts,
			    .prog_fd =
				    bpf_program__fd(skel->progs.steer_probe));

		err = bpf_tc_hook_create(&hook);
		if (!err || err == -EEXIST)
			err = bpf_tc_attach(&hook, &opts);
	}
	if (!err) {
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons(port),
					.sin_addr.s_addr =
						htonl(INADDR_LOOPBACK)};

		if (sendto(c, "x", 1, 0, (struct sockaddr *)&a, sizeof(a)) < 0)
			err = -errno;
	}
	/* lo delivers in softirq, normally before sendto returns. */
	for (int i = 0; !err && i < 500; i++) {
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.probe_result),
					&k, &r)) {
			err = -errno;
			break;
		}
		if (r != 1)
			break;
		nanosleep(&ms, NULL);
	}
	if (!err && r == 1)
		err = -ETIMEDOUT;
	if (!err)
		*setup_failed = false;
	if (c >= 0)
		close(c);
	if (s2 >= 0)
		close(s2);
	if (s1 >= 0)
		close(s1);
	steer_probe_bpf__destroy(skel);
	return err ? err : (long)r;
}

int rs_probe_tc_assign_reuseport(void)
{
	struct {
		long result;
		bool setup_failed;
	} msg = {-EIO, true};
	int p[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(p[0]);
		close(p[1]);
		return err;
	}
	if (pid == 0) {
		/*
		 * The child only probes and reports; _exit, not exit: the
		 * parent's atexit handlers and stdio buffers are not ours.
		 */
		close(p[0]);
		msg.result = probe_in_child(&msg.setup_failed);
		n = write(p[1], &msg, sizeof(msg));
		_exit(n == (ssize_t)sizeof(msg) ? 0 : 1);
	}
	close(p[1]);
	do
		n = read(p[0], &msg, sizeof(msg));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(msg))
		return -EIO;
	if (msg.setup_failed)
		return msg.result < 0 ? (int)msg.result : -EIO;
	if (msg.result == 0)
		return 1;
	/* The refusal this probe is for; anything else is a failed probe. */
	return msg.result == -ESOCKTNOSUPPORT ? 0 : (int)msg.result;
}

int rs_probe_crypto_kfuncs(char *why, size_t len)
{
	static const char *const names[] = {
		"bpf_crypto_ctx_create", "bpf_crypto_ctx_release",
		"bpf_crypto_encrypt", "bpf_crypto_decrypt"};
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int found = 1;

	if (!vmlinux) {
		snprintf(why, len, "the kernel's BTF cannot be read");
		return -errno ? -errno : -ENOENT;
	}
	for (size_t i = 0; found && i < sizeof(names) / sizeof(names[0]); i++)
		if (btf__find_by_name_kind(vmlinux, names[i], BTF_KIND_FUNC) <
		    0) {
			snprintf(why, len,
				 "the kernel has no %s kfunc (Linux 6.10+)",
				 names[i]);
			found = 0;
		}
	btf__free(vmlinux);
	return found;
}

int rs_kernel_probe(struct rs_kernel_features *kf)
{
	char why[128];

	struct utsname u;

	memset(kf, 0, sizeof(*kf));
	if (uname(&u) == 0)
		snprintf(kf->release, sizeof(kf->release), "%s", u.release);
	kf->sk_lookup = prog_type(BPF_PROG_TYPE_SK_LOOKUP);
	kf->sk_assign = kf->sk_lookup == 1 ? helper(BPF_PROG_TYPE_SK_LOOKUP,
						    BPF_FUNC_sk_assign)
					   : kf->sk_lookup;
	kf->bpf_loop = kf->sk_lookup == 1
			       ? helper(BPF_PROG_TYPE_SK_LOOKUP, BPF_FUNC_loop)
			       : kf->sk_lookup;
	kf->sockmap = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_SOCKMAP, NULL);
	kf->tc_sk_assign = helper(BPF_PROG_TYPE_SCHED_CLS, BPF_FUNC_sk_assign);
	kf->sockops = prog_type(BPF_PROG_TYPE_SOCK_OPS);
	kf->tc_assign_reuseport = kf->tc_sk_assign == 1
					  ? rs_probe_tc_assign_reuseport()
					  : kf->tc_sk_assign;
	kf->crypto_kfunc = rs_probe_crypto_kfuncs(why, sizeof(why));
	return 0;
}

static const struct rs_kernel_need need_sk_lookup = {
	"BPF_PROG_TYPE_SK_LOOKUP (sk_lookup programs)", "5.9"};
static const struct rs_kernel_need need_sk_assign = {
	"bpf_sk_assign() in sk_lookup", "5.9"};
static const struct rs_kernel_need need_loop = {
	"bpf_loop() (the ring walk of steer_lookup)", "5.17"};
static const struct rs_kernel_need need_sockmap = {"BPF_MAP_TYPE_SOCKMAP",
						   "5.7"};
static const struct rs_kernel_need need_tc_assign = {
	"bpf_sk_assign() at TC ingress (QUIC cookies)", "5.7"};

const struct rs_kernel_need *rs_kernel_missing(
	const struct rs_kernel_features *kf)
{
	if (kf->sk_lookup == 0)
		return &need_sk_lookup;
	if (kf->sk_assign == 0)
		return &need_sk_assign;
	if (kf->bpf_loop == 0)
		return &need_loop;
	if (kf->sockmap == 0)
		return &need_sockmap;
	return NULL;
}

const struct rs_kernel_need *rs_kernel_missing_tc(
	const struct rs_kernel_features *kf)
{
	return kf->tc_sk_assign == 0 ? &need_tc_assign : NULL;
}

static const char *yes_no(int v)
{
	return v == 1 ? "yes" : v == 0 ? "NO" : "unknown";
}

void rs_kernel_format(const struct rs_kernel_features *kf, char *buf,
		      size_t len)
{
	char reuse[64];

	if (kf->tc_assign_reuseport >= 0)
		snprintf(reuse, sizeof(reuse), "%s",
			 kf->tc_assign_reuseport ? "yes" : "NO (before 6.6)");
	else
		snprintf(reuse, sizeof(reuse), "unknown (%s)",
			 strerror(-kf->tc_assign_reuseport));
	snprintf(buf, len,
		 "kernel %s: sk_lookup %s, sk_assign %s, bpf_loop %s, sockmap "
		 "%s, sockops %s, TC sk_assign %s, TC sk_assign to "
		 "SO_REUSEPORT %s, crypto kfuncs %s (QUIC-LB AES: %s)",
		 kf->release, yes_no(kf->sk_lookup), yes_no(kf->sk_assign),
		 yes_no(kf->bpf_loop), yes_no(kf->sockmap), yes_no(kf->sockops),
		 yes_no(kf->tc_sk_assign), reuse, yes_no(kf->crypto_kfunc),
		 kf->crypto_kfunc == 1 ? "kfunc" : "software");
}
