// SPDX-License-Identifier: MIT
/*
 * The [global] keys: where the pins and the control socket live, which
 * interfaces get the TC program, where metrics are served, how many
 * clients the control socket and the metrics endpoint take at once, how
 * much kernel memory the file's maps may take. A path or name the kernel
 * would refuse is refused here, before anything is pinned.
 */
#include <string.h>
#include <sys/un.h>

#include "config_keys.h"

#define SUN_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

static void set_path(const struct cfg_key *k, char *dst, const char *v,
		     size_t max)
{
	char why[64];

	if (v[0] != '/') {
		cfg_bad_value(k, "not an absolute path");
		return;
	}
	if (strlen(v) >= max) {
		snprintf(why, sizeof(why), "longer than %zu bytes", max - 1);
		cfg_bad_value(k, why);
		return;
	}
	strcpy(dst, v);
}

static void set_bpffs(const struct cfg_key *k, void *obj, const char *v)
{
	struct global_entry *g = obj;

	set_path(k, g->bpffs, v, sizeof(g->bpffs));
}

/* bind() would fail much later, after maps are pinned, on a longer path. */
static void set_control_socket(const struct cfg_key *k, void *obj,
			       const char *v)
{
	struct global_entry *g = obj;

	set_path(k, g->control_socket, v, SUN_PATH_MAX);
}

/*
 * A cgroup as /proc/PID/cgroup names it: absolute within the cgroup2
 * hierarchy, no "." or ".." component, no empty one. Whether it exists is
 * the daemon's to find out, on the host, when it attaches.
 */
static void set_sockops_cgroup(const struct cfg_key *k, void *obj,
			       const char *v)
{
	struct global_entry *g = obj;
	const char *c;

	/* Where the backends' listeners are, followed as they change. */
	if (!strcmp(v, "auto")) {
		strcpy(g->sockops_cgroup, v);
		return;
	}
	if (v[0] != '/') {
		cfg_bad_value(k, "not auto, nor a cgroup path (it starts with "
				 "/, as in /proc/PID/cgroup)");
		return;
	}
	for (c = v; *c; c++) {
		size_t n;

		if (*c != '/')
			continue;
		n = strcspn(c + 1, "/");
		if ((n == 0 && c[1]) || (n == 1 && c[1] == '.') ||
		    (n == 2 && c[1] == '.' && c[2] == '.')) {
			cfg_bad_value(k, "an empty, . or .. component");
			return;
		}
	}
	if (strlen(v) >= sizeof(g->sockops_cgroup)) {
		cfg_bad_value(k, "too long");
		return;
	}
	strcpy(g->sockops_cgroup, v);
	/* "/system.slice/" is "/system.slice". */
	for (size_t n = strlen(g->sockops_cgroup);
	     n > 1 && g->sockops_cgroup[n - 1] == '/'; n--)
		g->sockops_cgroup[n - 1] = '\0';
}

static bool valid_ifname(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n >= RS_IFNAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '@' || c == ':' || c == '-'))
			return false;
	}
	/* The kernel refuses these two (dev_valid_name()). */
	return !(n == 1 && s[0] == '.') && !(n == 2 && !strncmp(s, "..", 2));
}

#define IFNAME_RULE                                                            \
	"interface names are 1..15 characters of A-Z a-z 0-9 . _ @ : - "       \
	"(not . or ..)"

/* Blank-separated names; every bad one is reported. */
static void set_interfaces(const struct cfg_key *k, void *obj, const char *v)
{
	struct global_entry *g = obj;
	const char *s = v;

	while (*s) {
		size_t n = strcspn(s, " \t"), i;
		bool dup = false;

		if (n == 0) {
			s++;
			continue;
		}
		if (!valid_ifname(s, n)) {
			cfg_key_error(k, "bad %s '%.*s': %s", k->def->noun,
				      (int)n, s, IFNAME_RULE);
			s += n;
			continue;
		}
		for (i = 0; i < g->n_interfaces; i++)
			if (strlen(g->interfaces[i]) == n &&
			    !strncmp(g->interfaces[i], s, n))
				dup = true;
		if (dup) {
			cfg_key_error(k, "duplicate interface '%.*s'", (int)n,
				      s);
		} else if (g->n_interfaces == RS_MAX_INTERFACES) {
			cfg_key_error(k, "too many interfaces (max %d)",
				      RS_MAX_INTERFACES);
			return;
		} else {
			memcpy(g->interfaces[g->n_interfaces], s, n);
			g->interfaces[g->n_interfaces++][n] = '\0';
		}
		s += n;
	}
}

static void set_metrics(const struct cfg_key *k, void *obj, const char *v)
{
	struct global_entry *g = obj;
	const char *why;

	if (rs_addr_parse(v, 0, &g->metrics, &why)) {
		cfg_bad_value(k, why);
		return;
	}
	g->has_metrics = true;
}

static void set_control_clients_max(const struct cfg_key *k, void *obj,
				    const char *v)
{
	struct global_entry *g = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, RS_MAX_CLIENTS, &n))
		g->control_clients_max = (uint32_t)n;
}

static void set_metrics_clients_max(const struct cfg_key *k, void *obj,
				    const char *v)
{
	struct global_entry *g = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, RS_MAX_CLIENTS, &n))
		g->metrics_clients_max = (uint32_t)n;
}

/* Under 100 ms a CLI on a busy host could be dropped mid-request. */
static void set_client_idle_timeout(const struct cfg_key *k, void *obj,
				    const char *v)
{
	struct global_entry *g = obj;

	cfg_parse_ranged_duration(k, v, 100, &g->client_idle_ms);
}

#define MEMORY_MIN (1ull << 20)
#define MEMORY_MAX (1ull << 40)

/* Bytes, or with a binary suffix: "512K", "256M", "2G" (also KiB, MiB...). */
static void set_memory_max(const struct cfg_key *k, void *obj, const char *v)
{
	static const char units[] = "KMGT";
	struct global_entry *g = obj;
	size_t n = strspn(v, "0123456789");
	char digits[24];
	uint64_t val;
	const char *u;
	int shift = 0;

	if (n == 0 || n >= sizeof(digits)) {
		cfg_bad_value(k,
			      "expected bytes, or a number with K, M, G or T");
		return;
	}
	u = v + n;
	if (*u) {
		const char *at = strchr(units, *u);

		if (!at || (u[1] && strcmp(u + 1, "iB"))) {
			cfg_bad_value(
				k, "expected bytes, or a number with K, M, G "
				   "or T");
			return;
		}
		shift = 10 * (int)(at - units + 1);
	}
	memcpy(digits, v, n);
	digits[n] = '\0';
	if (cfg_parse_u64(digits, false, &val) || val > (MEMORY_MAX >> shift) ||
	    (val << shift) < MEMORY_MIN) {
		cfg_bad_value(k, "out of range 1M..1T");
		return;
	}
	g->memory_max = val << shift;
}

/* Entries of the generations' flow table (rs_udp_flows, ~104 bytes each). */
static void set_flow_table(const struct cfg_key *k, void *obj, const char *v)
{
	uint64_t n;

	if (cfg_parse_ranged(k, v, 64, 1u << 24, &n))
		((struct global_entry *)obj)->flow_table = (uint32_t)n;
}

static void set_global_flow_idle(const struct cfg_key *k, void *obj,
				 const char *v)
{
	uint32_t ms = 0;

	if (cfg_parse_ranged_duration(k, v, 1000, &ms))
		((struct global_entry *)obj)->flow_idle_s = ms / 1000;
}

const struct key_def cfg_global_keys[] = {
	[GL_MEMORY_MAX] = {"memory_max", "memory_max", set_memory_max, false},
	[GL_INTERFACES] = {"interfaces", "interface name", set_interfaces,
			   false},
	[GL_FLOW_TABLE] = {"flow_table", "entry count", set_flow_table, false},
	[GL_FLOW_IDLE] = {"flow_idle", "flow_idle", set_global_flow_idle,
			  false},
	{"bpffs", "path", set_bpffs, false},
	{"control_socket", "path", set_control_socket, false},
	{"sockops_cgroup", "cgroup", set_sockops_cgroup, false},
	{"metrics", "metrics address", set_metrics, false},
	{"control_clients_max", "client count", set_control_clients_max, false},
	{"metrics_clients_max", "client count", set_metrics_clients_max, false},
	{"client_idle_timeout", "duration", set_client_idle_timeout, false},
	{NULL, NULL, NULL, false},
};

_Static_assert(sizeof(cfg_global_keys) / sizeof(cfg_global_keys[0]) <=
		       MAX_KEYS + 1,
	       "key_line[] too small");

/* [global] when the file has none, or before its keys. */
const struct global_entry cfg_global_defaults = {
	.bpffs = RS_DEFAULT_BPFFS,
	.control_socket = RS_DEFAULT_CONTROL_SOCKET,
	.sockops_cgroup = "auto",
	.control_clients_max = RS_DEFAULT_CONTROL_CLIENTS,
	.metrics_clients_max = RS_DEFAULT_METRICS_CLIENTS,
	.client_idle_ms = RS_DEFAULT_CLIENT_IDLE_MS,
	.memory_max = RS_DEFAULT_MEMORY_MAX,
	.flow_idle_s = RS_DEFAULT_FLOW_IDLE_S,
};
