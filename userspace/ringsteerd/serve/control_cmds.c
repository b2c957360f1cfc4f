// SPDX-License-Identifier: MIT
/*
 * Commands by name. A command is one function from a request to one JSON
 * reply, kept in the file of its subject (control_status.c,
 * control_backends.c, control_ring.c, control_cid.c), so adding one is a
 * line in the table below. What several subjects need is here too; reload
 * and detach act on the daemon as a whole and have no subject of their own.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "control_cmds_internal.h"
#include "fd_budget.h"
#include "log.h"
#include "listen_check.h"
#include "metrics.h"
#include "notify.h"
#include "state.h"

static json_t *ok_reply(void)
{
	return json_pack("{s:b}", "ok", 1);
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

/* The names still under the pin directory, for the reason of a refusal. */
static void left_in(const char *root, char *out, size_t len)
{
	DIR *dir = opendir(root);
	struct dirent *de;
	size_t n = 0;

	*out = '\0';
	if (!dir)
		return;
	while ((de = readdir(dir)) && n + 1 < len) {
		if (de->d_name[0] == '.')
			continue;
		n += (size_t)snprintf(out + n, len - n, "%s%s", n ? ", " : "",
				      de->d_name);
	}
	closedir(dir);
}

/*
 * dp_detach detached the sockops link for good (a cgroup link cannot be
 * attached again) and the pins check only pins it back: a new link
 * replaces it. For sockops_cgroup = auto it starts at the root, which sees
 * every socket, and the next load pass narrows it to the listeners.
 */
static void sockops_back(struct daemon *d)
{
	char pin[PATH_MAX + 32];

	if (d->dp.sockops_link_fd < 0)
		return;
	snprintf(pin, sizeof(pin), "%s/%s", d->st.cfg.bpffs,
		 RS_SOCKOPS_LINK_PIN_NAME);
	unlink(pin);
	dp_sockops_close(&d->dp);
	if (!dp_sockops_attach(&d->dp, d->st.cfg.control_socket,
			       d->st.cfg.sockops_cgroup, NULL, 0))
		load_check_soon(d);
}

/*
 * After a detach nothing may put back a pin, the link or a filter (the
 * reconcile timer, a netlink event, a reload, the fleet would): all that
 * uses the data plane stops before the reply, and the loop ends once the
 * reply is out (client_close), the descriptors being closed at exit.
 */
static void stop_after_detach(struct daemon *d)
{
	d->detach_requested = true;
	ev_signal_stop(d->loop, &d->sig_hup);
	notify_watchdog_stop(d);
	metrics_stop(d);
	daemon_stop(d);
}

/*
 * The detach is done before the reply, so that the reply is its result.
 * The filters first: they are found through the pinned maps. A detach
 * that fails part-way has already taken the link and some pins: they are
 * put back at once (the daemon still holds every descriptor) and the
 * daemon carries on steering.
 */
static json_t *cmd_detach(struct daemon *d, json_t *req)
{
	char left[256];
	int err;

	(void)req;
	rs_info("control: detach requested");
	err = daemon_tc_detach(&d->st.cfg);
	if (!err) {
		err = dp_detach(d->st.cfg.bpffs);
		left_in(d->st.cfg.bpffs, left, sizeof(left));
	} else {
		snprintf(left, sizeof(left), "steer_tc's filters");
	}
	if (err) {
		daemon_tc_check(d);
		/* The maps' pins first: steer_sockops is loaded on them. */
		daemon_check_pins(d);
		sockops_back(d);
		rs_err("detach failed: %s: %s (left in place: %s); put back "
		       "what was removed: still running and steering",
		       d->st.cfg.bpffs, strerror(-err), *left ? left : "-");
		return err_reply("detach failed: %s: %s (left in place: %s); "
				 "ringsteerd keeps running and steering",
				 d->st.cfg.bpffs, strerror(-err),
				 *left ? left : "-");
	}
	rs_info("detached: removed %s; exiting", d->st.cfg.bpffs);
	stop_after_detach(d);
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
	/* Read in the same turn of the loop as a detach that succeeded. */
	if (d->detach_requested)
		return err_reply("ringsteerd has detached and is exiting");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, cmd))
			return commands[i].fn(d, req);
	return err_reply("unknown command '%s'", cmd);
}
