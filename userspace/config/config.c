// SPDX-License-Identifier: MIT
/*
 * Loading is all or nothing. Every error is collected, not just the first,
 * so one `ringsteerd --check` lists them all (config_report.c); and only a
 * file without a single error becomes a struct rs_config, so a bad file
 * never changes running state. On the way, each step handing its result
 * to the next and its errors to one report:
 * - config_sections.c collects the entries: config_reader.c hands it the
 *   file's headers and keys in order, and config_global.c,
 *   config_service.c and config_backend.c set the keys (with
 *   config_values.c);
 * - config_checks.c (and config_memory.c) look at the entries as a whole;
 * - export_config() below copies them into the struct rs_config.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_checks.h"
#include "config_keys.h"
#include "config_report.h"
#include "config_sections.h"
#include "fleet_ident.h"

static int export_config(const struct cfg_entries *e, const char *file,
			 struct rs_config *cfg)
{
	const struct global_entry *g = &e->global;
	bool any_gen = false;
	size_t i;

	if (e->n_svcs) {
		cfg->services = calloc(e->n_svcs, sizeof(*cfg->services));
		if (!cfg->services)
			return -ENOMEM;
	}
	if (e->n_bes) {
		cfg->backends = calloc(e->n_bes, sizeof(*cfg->backends));
		if (!cfg->backends) {
			free(cfg->services);
			cfg->services = NULL;
			return -ENOMEM;
		}
	}
	snprintf(cfg->path, sizeof(cfg->path), "%s", file);
	strcpy(cfg->bpffs, g->bpffs);
	strcpy(cfg->control_socket, g->control_socket);
	strcpy(cfg->sockops_cgroup, g->sockops_cgroup);
	memcpy(cfg->interfaces, g->interfaces, sizeof(cfg->interfaces));
	cfg->n_interfaces = g->n_interfaces;
	cfg->memory_max = g->memory_max;
	cfg->flow_table = g->flow_table ? g->flow_table : RS_GEN_FLOWS_DEFAULT;
	cfg->has_metrics = g->has_metrics;
	if (cfg->has_metrics) {
		cfg->metrics_family = g->metrics.family;
		memcpy(cfg->metrics_addr, g->metrics.addr,
		       sizeof(cfg->metrics_addr));
		cfg->metrics_port = g->metrics.port;
	}
	cfg->control_clients_max = g->control_clients_max;
	cfg->metrics_clients_max = g->metrics_clients_max;
	cfg->client_idle_ms = g->client_idle_ms;
	cfg->fleet = e->fleet.conf;
	for (i = 0; i < e->n_svcs; i++) {
		cfg->services[i] = e->svcs[i].conf;
		/* A service's own flow_idle, else [global]'s, else 125 s. */
		if (!e->svcs[i].key_line[SVC_FLOW_IDLE])
			cfg->services[i].flow_idle_s = g->flow_idle_s;
		any_gen |= cfg->services[i].generations;
	}
	if (!any_gen)
		cfg->flow_table = 0;
	for (i = 0; i < e->n_bes; i++)
		cfg->backends[i] = e->bes[i].conf;
	cfg->n_services = e->n_svcs;
	cfg->n_backends = e->n_bes;
	return 0;
}

/* @len bytes at @text, named @file in messages, into @cfg or @err. */
static int parse(const char *file, const char *text, size_t len,
		 bool allow_empty, struct rs_config *cfg, char *err,
		 size_t errlen)
{
	struct cfg_report report = {.file = file};
	struct cfg_entries *e;
	int ret;

	/* Large (two paths of PATH_MAX and more): not on the stack. */
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->global = cfg_global_defaults;
	e->fleet = cfg_fleet_defaults;
	if (cfg_collect(text, len, &report, e))
		report.nomem = true;
	if (!report.nomem)
		cfg_validate(e, allow_empty, &report);

	if (report.nomem)
		ret = -ENOMEM;
	else if (report.n_reported)
		ret = -EINVAL;
	else
		ret = export_config(e, file, cfg);
	if (ret == -ENOMEM)
		report.nomem = true;
	if (ret)
		cfg_report_write(&report, err, errlen);
	cfg_report_free(&report);
	cfg_entries_free(e);
	free(e);
	return ret;
}

int rs_config_load_string(const char *text, const char *name,
			  struct rs_config *cfg, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !text)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	return parse(name ? name : "<string>", text, strlen(text), false, cfg,
		     err, errlen);
}

static const char *file_type(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	default:
		return "not a file";
	}
}

/* A regular file, or the reason why not in @err. */
static int check_file_type(const char *path, const struct stat *st, char *err,
			   size_t errlen)
{
	if (S_ISREG(st->st_mode))
		return 0;
	snprintf(err, errlen, "%s: not a regular file (%s)", path,
		 file_type(st->st_mode));
	return -EINVAL;
}

/*
 * The whole file into *@out (NUL-terminated, *@len bytes before the NUL).
 * A FIFO or a device could block the daemon's event loop in open() or
 * read() forever, or never end (/dev/zero), so only regular files are
 * read: stat() first so that a device is never even opened, then fstat()
 * what was opened, in case the path changed in between. A regular file can
 * still grow while it is read, so the read itself stops at the limit.
 */
static int read_file(const char *path, char **out, size_t *len, char *err,
		     size_t errlen)
{
	size_t cap, used = 0;
	struct stat st;
	char *buf;
	int fd, ret;

	if (stat(path, &st))
		goto fail_errno;
	ret = check_file_type(path, &st, err, errlen);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		goto fail_errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	ret = check_file_type(path, &st, err, errlen);
	if (!ret && st.st_size > RS_CONFIG_MAX_BYTES)
		ret = -EFBIG;
	/* The file, one more byte to see it grow, the NUL. */
	cap = (size_t)st.st_size + 2;
	buf = ret ? NULL : malloc(cap);
	if (!ret && !buf)
		ret = -ENOMEM;
	while (!ret) {
		ssize_t n;

		if (used + 1 == cap) {
			char *b;

			if (used > RS_CONFIG_MAX_BYTES) {
				ret = -EFBIG;
				break;
			}
			cap = cap * 2 < RS_CONFIG_MAX_BYTES + 2
				      ? cap * 2
				      : RS_CONFIG_MAX_BYTES + 2u;
			b = realloc(buf, cap);
			if (!b) {
				ret = -ENOMEM;
				break;
			}
			buf = b;
		}
		n = read(fd, buf + used, cap - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ret = -errno;
		else if (n == 0)
			break;
		else
			used += (size_t)n;
	}
	close(fd);
	if (ret == -EFBIG)
		snprintf(err, errlen, "%s: too large (limit %u bytes)", path,
			 RS_CONFIG_MAX_BYTES);
	else if (ret && ret != -EINVAL)
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	if (ret) {
		free(buf);
		return ret;
	}
	buf[used] = '\0';
	*out = buf;
	*len = used;
	return 0;

fail_errno:
	ret = -errno;
	snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	return ret;
}

int rs_config_load_flags(const char *path, unsigned int flags,
			 struct rs_config *cfg, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int ret;

	if (!err)
		errlen = 0;
	if (errlen)
		err[0] = '\0';
	if (!cfg || !path)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	ret = read_file(path, &text, &len, err, errlen);
	if (ret)
		return ret;
	ret = parse(path, text, len, flags & RS_CONFIG_ALLOW_EMPTY, cfg, err,
		    errlen);
	free(text);
	return ret;
}

int rs_config_load(const char *path, struct rs_config *cfg, char *err,
		   size_t errlen)
{
	return rs_config_load_flags(path, 0, cfg, err, errlen);
}

void rs_config_free(struct rs_config *cfg)
{
	if (!cfg)
		return;
	/* Services hold QUIC-LB keys: none is left in freed memory. */
	if (cfg->services)
		explicit_bzero(cfg->services,
			       cfg->n_services * sizeof(*cfg->services));
	free(cfg->services);
	free(cfg->backends);
	explicit_bzero(cfg, sizeof(*cfg));
}

int rs_config_find_service(const struct rs_config *cfg, const char *name)
{
	size_t i;

	if (!cfg || !name)
		return -EINVAL;
	for (i = 0; i < cfg->n_services; i++)
		if (strcmp(cfg->services[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

/* Whether member_keys binds an address to any member (unread: yes). */
static bool member_addresses_bound(const char *path)
{
	struct rs_fleet_pubkeys keys;
	char why[PATH_MAX + 160];
	bool bound;

	if (rs_fleet_pubkeys_read(path, &keys, why, sizeof(why)))
		return true;
	bound = keys.n_addr > 0;
	rs_fleet_pubkeys_free(&keys);
	return bound;
}

void rs_config_fleet_ipv6_notes(const struct rs_config *cfg,
				void (*say)(const char *line))
{
	char line[320];

	if (cfg->fleet.enabled && !cfg->fleet.etcd_cert[0] &&
	    !cfg->fleet.etcd_user[0])
		say("[fleet] reaches etcd without a client certificate or an "
		    "etcd user: it trusts the network, and whoever reaches "
		    "etcd can change this PoP's membership (docs/fleet.md, "
		    "\"etcd over TLS\")");
	if (cfg->fleet.enabled && !cfg->fleet.member_keys[0])
		say("[fleet] has no member_keys: every member's record is "
		    "believed on the shared key_file (or on nothing), so one "
		    "compromised host can write records for the others and "
		    "add members; give each host an identity_key "
		    "(docs/fleet.md, \"Per-host identities\")");
	if (cfg->fleet.enabled && cfg->fleet.member_keys[0] &&
	    !member_addresses_bound(cfg->fleet.member_keys))
		say("[fleet] member_keys binds no address to a member: a "
		    "compromised member can claim another's address while "
		    "that one is away, and keep it out; list each host's "
		    "addresses after its key (docs/fleet.md, \"Per-host "
		    "identities\")");
	if (!cfg->fleet.enabled || cfg->fleet.has_addr6)
		return;
	for (size_t s = 0; s < cfg->n_services; s++) {
		const struct rs_service_conf *sc = &cfg->services[s];
		bool v6 = false;

		for (size_t l = 0; l < sc->n_listens; l++)
			v6 = v6 || sc->listens[l].family == AF_INET6;
		if (!sc->fleet || !v6)
			continue;
		snprintf(line, sizeof(line),
			 "fleet service %s listens on IPv6 but [fleet] has no "
			 "address6: its IPv6 clients are not forwarded to "
			 "other hosts nor from them, but steered where they "
			 "enter (counted as no_address6)",
			 sc->name);
		say(line);
	}
}

void rs_config_empty_services(const struct rs_config *cfg,
			      void (*say)(const char *line))
{
	char line[256];

	for (size_t s = 0; s < cfg->n_services; s++) {
		size_t n = 0;

		for (size_t b = 0; b < cfg->n_backends; b++)
			n += cfg->backends[b].service == s;
		if (n)
			continue;
		snprintf(line, sizeof(line),
			 "service %s has no backends: every client of it gets "
			 "fallback = %s",
			 cfg->services[s].name,
			 cfg->services[s].fallback == RS_FALLBACK_DROP
				 ? "drop"
				 : "pass (connection refused unless something "
				   "listens on the service address itself)");
		say(line);
	}
}
