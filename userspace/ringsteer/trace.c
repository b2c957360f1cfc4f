// SPDX-License-Identifier: MIT
/*
 * `ringsteer trace`: the kernel's own steering decisions, one line each,
 * as they happen (issue 24). The daemon names the pin directory and the
 * ids of services and backends; the trace then works on the pinned maps
 * itself: it writes the filters into rs_trace_ctl, reads rs_trace_events
 * with libbpf's ring buffer reader, and puts the control word back as it
 * found it when it ends (--count, SIGINT/SIGTERM/SIGHUP, or the daemon
 * exiting). One trace at a time: the filters are one word for the whole
 * data plane, so a second trace would change the first one's; it is
 * refused, naming the running one's pid.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <ringsteer/abi.h>

#include "cli.h"
#include "trace_gen.h"
#include "trace_lock.h"
#include "trace_print.h"

#define DEFAULT_RATE	1000 /* events a second per CPU */
#define DAEMON_CHECK_MS 200

struct trace {
	char *svc_names[RS_MAX_SERVICES];
	char *be_names[RS_MAX_BACKENDS];
	struct trace_gen *gen; /* NULL: no service has generations */
	unsigned long long count, shown;
	int64_t mono_to_real; /* add to CLOCK_MONOTONIC ns for wall time */
	bool json;
	bool discard; /* draining a dead tracer's leftovers */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

void trace_usage(FILE *f)
{
	fprintf(f,
		"Usage: ringsteer [-s SOCKET | -c FILE] trace [SERVICE] "
		"[--client ADDR[/LEN]]\n"
		"         [--backend NAME] [--reason R[,R...]] [--hook "
		"H[,H...]] [--count N]\n"
		"         [--sample N] [--rate N] [-j]\n"
		"  The kernel's steering decisions as they happen, one line "
		"each (JSON lines\n"
		"  with -j): time, CPU, hook, client -> service address, "
		"service, backend,\n"
		"  reason, then what the hook adds: steer_lookup the ring "
		"owner and why it\n"
		"  was passed over, sticky entry, point, key hash, ring "
		"generation; steer_tc\n"
		"  the fleet member; steer_sockops whether it was counted and "
		"its sticky\n"
		"  entry written.\n"
		"  SERVICE            only this service's events\n"
		"  --client A[/L]     only clients in this prefix (default "
		"/32 or /128)\n"
		"  --backend NAME     only events of this backend\n"
		"  A generations service's datagram also names the socket it "
		"went to: its\n"
		"  generation, process, cookie, and whether it is the "
		"working one or old.\n"
		"  --reason R,...     lookup: sticky, primary, spill, "
		"spill-load, least-loaded,\n"
		"                     no-backend; tc: cookie-hit, "
		"cookie-unknown, cookie-down,\n"
		"                     fleet-forward, fleet-received, "
		"fleet-second-chance,\n"
		"                     fleet-forged, fleet-unauthenticated, "
		"fleet-hop-limit;\n"
		"                     sockops: established, closed\n"
		"  --hook H,...       lookup (sk_lookup), tc (QUIC cookies, "
		"fleet), sockops\n"
		"                     (established, closed)\n"
		"  --count N          end after N events\n"
		"  --sample N         one in N of the matching events (per "
		"CPU)\n"
		"  --rate N           at most N events a second per CPU "
		"(default %d, 0: no\n"
		"                     limit); the rest are counted lost\n"
		"  Ends at --count, Ctrl-C, SIGTERM or when ringsteerd exits, "
		"and puts the\n"
		"  filters back as they were. One trace at a time.\n",
		DEFAULT_RATE);
}

/* Name -> id of the daemon's services and backends; bpffs and pid. */
static int ask_daemon(struct trace *tr, char *bpffs, size_t len, pid_t *pid)
{
	json_t *st, *bes, *v;
	size_t i;
	int rc = 1;

	st = call(json_pack("{s:s}", "cmd", "status"));
	if (!st)
		return 1;
	if (!json_is_true(json_object_get(st, "ok"))) {
		json_decref(st);
		return fail("status: %s", jstr(st, "error"));
	}
	snprintf(bpffs, len, "%s", jstr(st, "bpffs"));
	*pid = (pid_t)jint(st, "pid");
	json_array_foreach(json_object_get(st, "services"), i, v)
	{
		long long id = jint(v, "id");

		if (id >= 0 && id < RS_MAX_SERVICES)
			tr->svc_names[id] = strdup(jstr(v, "name"));
	}
	json_decref(st);
	bes = call(json_pack("{s:s}", "cmd", "backends"));
	if (!bes)
		return 1;
	json_array_foreach(json_object_get(bes, "backends"), i, v)
	{
		long long id = jint(v, "id");

		if (id >= 0 && id < RS_MAX_BACKENDS)
			tr->be_names[id] = strdup(jstr(v, "name"));
	}
	rc = json_is_true(json_object_get(bes, "ok"))
		     ? 0
		     : fail("backends: %s", jstr(bes, "error"));
	json_decref(bes);
	return rc;
}

static int id_of(char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], name))
			return (int)i;
	return -1;
}

static int parse_client(const char *arg, struct rs_trace_ctl *t)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	long plen;

	snprintf(buf, sizeof(buf), "%s", arg);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	if (inet_pton(AF_INET, buf, t->client) == 1)
		t->client_family = AF_INET;
	else if (inet_pton(AF_INET6, buf, t->client) == 1)
		t->client_family = AF_INET6;
	else
		return fail("--client %s: not an address", arg);
	plen = t->client_family == AF_INET ? 32 : 128;
	if (slash) {
		long max = plen;

		errno = 0;
		plen = strtol(slash, &end, 10);
		if (errno || *end || !*slash || plen < 0 || plen > max)
			return fail("--client %s: prefix length 0..%ld", arg,
				    max);
	}
	t->client_plen = (__u8)plen;
	return 0;
}

static int parse_reasons(const char *arg, struct rs_trace_ctl *t)
{
	char *dup = strdup(arg), *save = NULL, *tok;
	int rc = 0;

	for (tok = strtok_r(dup, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		int r = trace_reason_of_name(tok);

		if (r < 0)
			rc = fail("--reason %s: one of %s", tok,
				  trace_reason_names());
		else
			t->reason_mask |= 1u << r;
	}
	free(dup);
	return rc;
}

static int parse_hooks(const char *arg, struct rs_trace_ctl *t)
{
	char *dup = strdup(arg), *save = NULL, *tok;
	int rc = 0;

	for (tok = strtok_r(dup, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		int h = trace_hook_of_name(tok);

		if (h < 0)
			rc = fail("--hook %s: one of lookup, tc, sockops", tok);
		else
			t->hook_mask |= (__u8)(1u << h);
	}
	free(dup);
	return rc;
}

static int parse_count(const char *opt, const char *arg, unsigned long long max,
		       unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(arg, &end, 10);
	if (errno || *end || !*arg || arg[0] == '-' || *out > max)
		return fail("%s %s: a number up to %llu", opt, arg, max);
	return 0;
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct trace *tr = ctx;
	const struct rs_trace_event *e = data;
	struct trace_view v = {.svc_names = tr->svc_names,
			       .be_names = tr->be_names,
			       .mono_to_real = tr->mono_to_real,
			       .json = tr->json};
	struct trace_sock sock;

	if (tr->discard || len < sizeof(*e))
		return 0;
	if (tr->count && tr->shown >= tr->count)
		return 1; /* stop consuming: the rest is not ours to show */
	if (trace_gen_of(tr->gen, e, &sock))
		v.sock = &sock;
	trace_print(&v, e);
	tr->shown++;
	fflush(stdout);
	return 0;
}

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int pin_get(const char *bpffs, const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", bpffs, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		fail("%s: %s (a daemon without tracing? restart it with this "
		     "version)",
		     path, strerror(errno));
	return fd;
}

static int trace_stats(int fd, struct rs_trace_cpu *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	struct rs_trace_cpu *v = calloc(ncpu > 0 ? ncpu : 1, sizeof(*v));
	__u32 zero = 0;

	memset(sum, 0, sizeof(*sum));
	if (!v || ncpu <= 0 || bpf_map_lookup_elem(fd, &zero, v)) {
		free(v);
		return -1;
	}
	for (int c = 0; c < ncpu; c++) {
		sum->emitted += v[c].emitted;
		sum->lost_full += v[c].lost_full;
		sum->lost_rate += v[c].lost_rate;
		sum->matched += v[c].matched;
	}
	free(v);
	return 0;
}

/* Whether the daemon we asked is gone (its pidfd readable, or no pid). */
static bool daemon_gone(int pidfd, pid_t pid)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	if (pidfd >= 0)
		return poll(&p, 1, 0) > 0;
	return kill(pid, 0) && errno == ESRCH;
}

static int parse_args(int argc, char **argv, struct trace *tr,
		      struct rs_trace_ctl *t, const char **svc,
		      const char **backend, unsigned long long *rate)
{
	static const struct option lo[] = {
		{"client", required_argument, NULL, 'C'},
		{"backend", required_argument, NULL, 'b'},
		{"reason", required_argument, NULL, 'r'},
		{"hook", required_argument, NULL, 'H'},
		{"count", required_argument, NULL, 'n'},
		{"sample", required_argument, NULL, 'S'},
		{"rate", required_argument, NULL, 'R'},
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	unsigned long long v;
	int c;

	/* 0: GNU getopt starts afresh (main() parsed with "+" before). */
	optind = 0;
	while ((c = getopt_long(argc, argv, "j", lo, NULL)) != -1) {
		switch (c) {
		case 'C':
			if (parse_client(optarg, t))
				return 1;
			break;
		case 'b':
			*backend = optarg;
			break;
		case 'r':
			if (parse_reasons(optarg, t))
				return 1;
			break;
		case 'H':
			if (parse_hooks(optarg, t))
				return 1;
			break;
		case 'n':
			if (parse_count("--count", optarg, ULLONG_MAX,
					&tr->count))
				return 1;
			break;
		case 'S':
			if (parse_count("--sample", optarg, UINT32_MAX, &v))
				return 1;
			t->sample = (__u32)v;
			break;
		case 'R':
			if (parse_count("--rate", optarg, 1000000, rate))
				return 1;
			break;
		case 'j':
			tr->json = true;
			break;
		default:
			trace_usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		*svc = argv[optind++];
	if (optind < argc) {
		trace_usage(stderr);
		return 2;
	}
	return 0;
}

static int run(struct trace *tr, const struct rs_trace_ctl *want,
	       const char *bpffs, pid_t pid)
{
	int ctl = -1, evfd = -1, cpufd = -1, lock, pidfd, rc = 1;
	struct trace_lock lk;
	struct rs_trace_cpu before, after;
	struct rs_trace_ctl old, set = *want;
	struct ring_buffer *rb = NULL;
	struct sigaction sa = {.sa_handler = on_signal};
	bool leftover;
	__u32 zero = 0;
	const char *why = NULL;

	lock = trace_lock_take(&lk, bpffs);
	if (lock == -EWOULDBLOCK) {
		struct rs_trace_ctl cur = {0};

		ctl = pin_get(bpffs, "rs_trace_ctl");
		if (ctl >= 0)
			bpf_map_lookup_elem(ctl, &zero, &cur);
		if (ctl >= 0)
			close(ctl);
		return fail("another trace is running (pid %u); one at a "
			    "time, since the filters are the data plane's",
			    cur.owner);
	}
	if (lock < 0)
		return 1;
	ctl = pin_get(bpffs, "rs_trace_ctl");
	evfd = ctl < 0 ? -1 : pin_get(bpffs, "rs_trace_events");
	cpufd = evfd < 0 ? -1 : pin_get(bpffs, "rs_trace_cpu");
	if (cpufd < 0 || bpf_map_lookup_elem(ctl, &zero, &old))
		goto out;
	/*
	 * The lock was free, so an enabled word is a dead tracer's (killed
	 * before it could put the word back): it is put back off.
	 */
	leftover = old.enabled;
	if (leftover)
		old.enabled = 0;
	rb = ring_buffer__new(evfd, on_event, tr, NULL);
	if (!rb) {
		fail("reading %s/rs_trace_events: %s", bpffs, strerror(errno));
		goto out;
	}
	tr->discard = true;
	ring_buffer__consume(rb);
	tr->discard = false;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	tr->mono_to_real = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	trace_stats(cpufd, &before);
	set.enabled = 1;
	set.owner = (__u32)getpid();
	if (bpf_map_update_elem(ctl, &zero, &set, BPF_ANY)) {
		fail("writing the filters: %s", strerror(errno));
		goto out_fd;
	}
	/* On stderr even with -j: stdout is the events alone. */
	fprintf(stderr, "ringsteer: tracing%s; Ctrl-C to end\n",
		leftover ? " (a dead trace's filters were left on: put back "
			   "off at the end)"
			 : "");
	while (!stop_signal && (!tr->count || tr->shown < tr->count)) {
		int n = ring_buffer__poll(rb, DAEMON_CHECK_MS);

		if (n < 0 && n != -EINTR) {
			fail("reading events: %s", strerror(-n));
			break;
		}
		if (daemon_gone(pidfd, pid)) {
			why = "ringsteerd exited";
			break;
		}
	}
	rc = why ? 1 : 0;
	/* Back as it was, whatever ended the trace. */
	if (bpf_map_update_elem(ctl, &zero, &old, BPF_ANY))
		rc = fail("putting the filters back: %s (ringsteer trace "
			  "again, then Ctrl-C, turns them off)",
			  strerror(errno));
	if (!tr->count || tr->shown < tr->count)
		ring_buffer__consume(rb);
	trace_stats(cpufd, &after);
	fprintf(stderr,
		"ringsteer: %s: %llu events shown, %llu lost (%llu buffer "
		"full, %llu over --rate)\n",
		why ? why : "trace ended", tr->shown,
		(unsigned long long)(after.lost_full - before.lost_full +
				     after.lost_rate - before.lost_rate),
		(unsigned long long)(after.lost_full - before.lost_full),
		(unsigned long long)(after.lost_rate - before.lost_rate));
out_fd:
	if (pidfd >= 0)
		close(pidfd);
out:
	ring_buffer__free(rb);
	if (cpufd >= 0)
		close(cpufd);
	if (evfd >= 0)
		close(evfd);
	if (ctl >= 0)
		close(ctl);
	trace_lock_release(&lk);
	return rc;
}

int cmd_trace(int argc, char **argv)
{
	struct rs_trace_ctl t = {.service = RS_NONE, .backend = RS_NONE};
	unsigned long long rate = DEFAULT_RATE;
	const char *svc = NULL, *backend = NULL;
	struct trace *tr = calloc(1, sizeof(*tr));
	char bpffs[PATH_MAX];
	pid_t pid = 0;
	int rc, id;

	if (!tr)
		return fail("out of memory");
	tr->json = json_out;
	rc = parse_args(argc, argv, tr, &t, &svc, &backend, &rate);
	if (!rc)
		rc = ask_daemon(tr, bpffs, sizeof(bpffs), &pid);
	if (!rc && svc) {
		id = id_of(tr->svc_names, RS_MAX_SERVICES, svc);
		if (id < 0)
			rc = fail("no service '%s'", svc);
		t.service = (__u32)id;
	}
	if (!rc && backend) {
		id = id_of(tr->be_names, RS_MAX_BACKENDS, backend);
		if (id < 0)
			rc = fail("no backend '%s'", backend);
		t.backend = (__u32)id;
	}
	t.rate = (__u32)rate;
	t.burst = (__u32)(rate ? rate : 1);
	if (!rc)
		tr->gen = trace_gen_open(bpffs);
	if (!rc)
		rc = run(tr, &t, bpffs, pid);
	trace_gen_close(tr->gen);
	for (size_t i = 0; i < RS_MAX_SERVICES; i++)
		free(tr->svc_names[i]);
	for (size_t i = 0; i < RS_MAX_BACKENDS; i++)
		free(tr->be_names[i]);
	free(tr);
	return rc;
}
