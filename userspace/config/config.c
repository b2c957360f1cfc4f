// SPDX-License-Identifier: MIT
/*
 * Loading is all or nothing. Every error is collected, not just the first,
 * so one `ringsteerd --check` lists them all (config_errors.c); and only a
 * file without a single error becomes a struct rs_config, so a bad file
 * never changes running state. On the way: config_reader.c reads lines,
 * config_sections.c starts sections, config_global.c, config_service.c and
 * config_backend.c set keys (with config_values.c), and config_checks.c
 * looks at the file as a whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_internal.h"

static int export_config(struct parser *p, struct rs_config *cfg)
{
	size_t i;

	if (p->n_svcs) {
		cfg->services = calloc(p->n_svcs, sizeof(*cfg->services));
		if (!cfg->services)
			return -ENOMEM;
	}
	if (p->n_bes) {
		cfg->backends = calloc(p->n_bes, sizeof(*cfg->backends));
		if (!cfg->backends) {
			free(cfg->services);
			cfg->services = NULL;
			return -ENOMEM;
		}
	}
	snprintf(cfg->path, sizeof(cfg->path), "%s", p->file);
	strcpy(cfg->bpffs, p->global.bpffs);
	strcpy(cfg->control_socket, p->global.control_socket);
	memcpy(cfg->interfaces, p->global.interfaces, sizeof(cfg->interfaces));
	cfg->n_interfaces = p->global.n_interfaces;
	cfg->memory_max = p->global.memory_max;
	cfg->has_metrics = p->global.has_metrics;
	if (cfg->has_metrics) {
		cfg->metrics_family = p->global.metrics.family;
		memcpy(cfg->metrics_addr, p->global.metrics.addr,
		       sizeof(cfg->metrics_addr));
		cfg->metrics_port = p->global.metrics.port;
	}
	cfg->control_clients_max = p->global.control_clients_max;
	cfg->metrics_clients_max = p->global.metrics_clients_max;
	cfg->client_idle_ms = p->global.client_idle_ms;
	for (i = 0; i < p->n_svcs; i++)
		cfg->services[i] = p->svcs[i].conf;
	for (i = 0; i < p->n_bes; i++)
		cfg->backends[i] = p->bes[i].conf;
	cfg->n_services = p->n_svcs;
	cfg->n_backends = p->n_bes;
	return 0;
}

static void parser_free(struct parser *p)
{
	size_t i;

	for (i = 0; i < p->n_errs; i++)
		free(p->errs[i].text);
	free(p->errs);
	free(p->svcs);
	free(p->bes);
	free(p->buf);
}

static int parse(struct parser *p, struct rs_config *cfg, char *err,
		 size_t errlen)
{
	int ret;

	strcpy(p->global.bpffs, RS_DEFAULT_BPFFS);
	strcpy(p->global.control_socket, RS_DEFAULT_CONTROL_SOCKET);
	p->global.control_clients_max = RS_DEFAULT_CONTROL_CLIENTS;
	p->global.metrics_clients_max = RS_DEFAULT_METRICS_CLIENTS;
	p->global.client_idle_ms = RS_DEFAULT_CLIENT_IDLE_MS;
	p->global.memory_max = RS_DEFAULT_MEMORY_MAX;
	/*
	 * inih only gets lines that it can parse, so a line number returned
	 * here means a handler failure, and ours never fail.
	 */
	if (ini_parse_stream(cfg_read_line, p, cfg_on_key, p) == -2 ||
	    p->read_err)
		p->nomem = true;
	if (!p->nomem)
		cfg_validate(p);

	if (p->nomem)
		ret = -ENOMEM;
	else if (p->n_reported)
		ret = -EINVAL;
	else
		ret = export_config(p, cfg);
	if (ret == -ENOMEM)
		p->nomem = true;
	if (ret)
		cfg_write_errors(p, err, errlen);
	parser_free(p);
	return ret;
}

int rs_config_load_string(const char *text, const char *name,
			  struct rs_config *cfg, char *err, size_t errlen)
{
	struct parser *p;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !text)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->file = name ? name : "<string>";
	p->text = text;
	p->text_end = text + strlen(text);
	ret = parse(p, cfg, err, errlen);
	free(p);
	return ret;
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
	struct parser *p;
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
	p = calloc(1, sizeof(*p));
	if (!p) {
		free(text);
		return -ENOMEM;
	}
	p->file = path;
	p->text = text;
	p->text_end = text + len;
	p->allow_empty = flags & RS_CONFIG_ALLOW_EMPTY;
	ret = parse(p, cfg, err, errlen);
	free(p);
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
	free(cfg->services);
	free(cfg->backends);
	memset(cfg, 0, sizeof(*cfg));
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
