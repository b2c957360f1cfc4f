// SPDX-License-Identifier: MIT
/*
 * Commands by name. A command is one function from a request to one JSON
 * reply, kept in the file of its subject (control_status.c,
 * control_backends.c, control_ring.c, control_cid.c), so adding one is a
 * line in the table below. What several subjects need is here too; reload
 * and detach act on the daemon as a whole and have no subject of their own.
 */
#include <stdio.h>
#include <string.h>

#include "control_cmds_internal.h"
#include "fd_budget.h"
#include "log.h"
#include "listen_check.h"
#include "notify.h"

json_t *err_reply(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static json_t *ok_reply(void)
{
	return json_pack("{s:b}", "ok", 1);
}

const char *req_str(json_t *req, const char *key)
{
	return json_string_value(json_object_get(req, key));
}

const char *backend_name_of(struct daemon *d, uint32_t id)
{
	for (size_t i = 0; i < d->cfg.n_backends; i++)
		if (d->bes[i].id == id)
			return d->cfg.backends[i].name;
	return "?";
}

static json_t *cmd_reload(struct daemon *d, json_t *req)
{
	char errs[8192] = "";
	json_t *reply, *warnings;

	bool force = json_is_true(json_object_get(req, "force"));

	rs_info("control: reload of %s%s", d->config_path,
		force ? " (--force)" : "");
	if (notify_reload(d, force, errs, sizeof(errs))) {
		rs_err("reload: %s", errs);
		return err_reply("%s", errs);
	}
	daemon_fd_budget(d); /* more backends, other caps */
	reply = ok_reply();
	warnings = json_array();
	/* Logged by the reload itself (notify_reload); told to the CLI here. */
	listen_check(d, false, warnings);
	json_object_set_new(reply, "warnings", warnings);
	return reply;
}

static json_t *cmd_detach(struct daemon *d, json_t *req)
{
	(void)req;
	rs_info("control: detach requested");
	d->detach_requested = true;
	return ok_reply();
}

struct command {
	const char *name;
	json_t *(*fn)(struct daemon *d, json_t *req);
};

static const struct command commands[] = {
	{"version", cmd_version},   {"status", cmd_status},
	{"services", cmd_services}, {"backends", cmd_backends},
	{"backend", cmd_backend},   {"ring", cmd_ring},
	{"lookup", cmd_lookup},	    {"sim", cmd_sim},
	{"reload", cmd_reload},	    {"detach", cmd_detach},
	{"cid", cmd_cid},	    {"fleet", cmd_fleet},
};

json_t *control_dispatch(struct daemon *d, const char *cmd, json_t *req)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, cmd))
			return commands[i].fn(d, req);
	return err_reply("unknown command '%s'", cmd);
}
