// SPDX-License-Identifier: MIT
/*
 * fleet status | drain NAME | undrain NAME. Drains are etcd keys, so
 * every host's table drops the drained host at the same revision; the
 * reply comes once etcd has the key.
 */
#include <string.h>

#include "control.h"
#include "control_cmds_internal.h"
#include "fleet.h"

/* fleet_set_drain()'s callback: the deferred reply, once etcd answered. */
static void drain_done(struct daemon *d, uint64_t ticket, const char *name,
		       bool drain, const char *error)
{
	control_reply_later(
		d, ticket,
		error ? json_pack("{s:b, s:s}", "ok", 0, "error", error)
		      : json_pack("{s:b, s:s, s:s}", "ok", 1, "action",
				  drain ? "drain" : "undrain", "name", name));
}

json_t *cmd_fleet(struct daemon *d, json_t *req)
{
	const char *action = req_str(req, "action");
	const char *name = req_str(req, "name");
	uint64_t ticket;
	char err[600];
	json_t *st;

	if (!action)
		return err_reply("fleet needs \"action\": status, drain or "
				 "undrain");
	if (!strcmp(action, "status")) {
		st = fleet_status_json(d);
		if (!st)
			return err_reply(
				"fleet mode is off (no [fleet] section "
				"or no service with fleet = on)");
		json_object_set_new(st, "ok", json_true());
		return st;
	}
	if (strcmp(action, "drain") && strcmp(action, "undrain"))
		return err_reply("unknown fleet action '%s' (status, drain, "
				 "undrain)",
				 action);
	if (!name)
		return err_reply("fleet %s needs \"name\"", action);
	ticket = control_defer(d);
	if (!ticket)
		return err_reply("fleet %s needs a control client", action);
	if (fleet_set_drain(d, name, action[0] == 'd', drain_done, ticket, err,
			    sizeof(err)))
		return err_reply("%s", err); /* nothing deferred after all */
	/* Answered by drain_done() once etcd has the key. */
	return NULL;
}
