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
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	/*
	 * inih only gets lines that it can parse, so a line number returned
	 * here means a handler failure, and ours never fail.
	 */
	if (ini_parse_stream(cfg_read_line, p, cfg_on_key, p) == -2 ||
	    p->read_err == ENOMEM)
		p->nomem = true;
	else if (p->read_err)
		cfg_report(p, p->line + 1, NULL, NULL, "read error: %s",
			   strerror(p->read_err));
	if (!p->nomem)
		cfg_validate(p);

	if (p->nomem)
		ret = -ENOMEM;
	else if (p->n_errs)
		ret = p->read_err ? -p->read_err : -EINVAL;
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
	ret = parse(p, cfg, err, errlen);
	free(p);
	return ret;
}

int rs_config_load(const char *path, struct rs_config *cfg, char *err,
		   size_t errlen)
{
	struct parser *p;
	FILE *fp;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !path)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	fp = fopen(path, "re");
	if (!fp) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		fclose(fp);
		return -ENOMEM;
	}
	p->file = path;
	p->fp = fp;
	ret = parse(p, cfg, err, errlen);
	free(p);
	fclose(fp);
	return ret;
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
