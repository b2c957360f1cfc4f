// SPDX-License-Identifier: MIT
/*
 * A start over pins of another ABI, make-before-break (docs/operations.md,
 * "Restart and upgrade"). The earlier data plane is renamed aside, still
 * attached and deciding; this build's is made fresh under the configured
 * directory, seeded with the operator state read from the earlier maps by
 * field name, filled and attached next to it. In the kernel the programs of
 * one netns run in attachment order and the first socket chosen stands, so
 * the earlier program keeps deciding until it is detached, and the new one
 * decides alone from the next connection on. Nothing refuses a connection
 * and, as both decide from the same state, nothing moves.
 */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "guard.h"
#include "log.h"
#include "pins_found.h"
#include "state.h"
#include "tc_attach.h"
#include "upgrade.h"

static void upgrade_free(struct upgrade *u)
{
	free(u->svcs);
	free(u->bes);
	u->svcs = NULL;
	u->bes = NULL;
}

/* The earlier maps' words, as this build's structs. */
static int read_words(const char *root, struct upgrade *u)
{
	size_t n = 0;
	int err;

	u->svcs = calloc(RS_MAX_SERVICES, sizeof(*u->svcs));
	u->bes = calloc(RS_MAX_BACKENDS, sizeof(*u->bes));
	if (!u->svcs || !u->bes)
		return -ENOMEM;
	err = dp_migrate_read(root, "rs_services", "rs_service", u->svcs,
			      sizeof(*u->svcs), RS_MAX_SERVICES);
	if (!err)
		err = dp_migrate_read(root, "rs_backends", "rs_backend", u->bes,
				      sizeof(*u->bes), RS_MAX_BACKENDS);
	if (err)
		return err;
	for (uint32_t id = 0; id < RS_MAX_BACKENDS; id++) {
		/*
		 * The gauges start at 0 in the new maps: the connections open
		 * now are found by the next load check, as uncounted ones.
		 */
		u->bes[id].uncounted = 0;
		u->bes[id].name[sizeof(u->bes[id].name) - 1] = '\0';
		n += u->bes[id].name[0] != '\0';
	}
	for (uint32_t id = 0; id < RS_MAX_SERVICES; id++)
		u->svcs[id].name[sizeof(u->svcs[id].name) - 1] = '\0';
	u->carried = n;
	return 0;
}

/* The earlier data plane an interrupted upgrade left aside, if any. */
static bool find_aside(const char *root, char *out, size_t len)
{
	char pattern[PATH_MAX + 32];
	glob_t g;
	bool found;

	snprintf(pattern, sizeof(pattern), "%s-abi*-retiring*", root);
	if (glob(pattern, GLOB_ONLYDIR, NULL, &g))
		return false;
	found = g.gl_pathc > 0 &&
		(size_t)snprintf(out, len, "%s", g.gl_pathv[0]) < len;
	globfree(&g);
	return found;
}

/*
 * An upgrade killed half-way left the earlier data plane aside, still
 * deciding. Before ours was made (nothing under @root): it goes back by
 * name and the upgrade starts over. After: ours is adopted as any
 * restart does, and the earlier one retired once ours is up.
 */
static int resume(struct daemon *d, struct upgrade *u, const char *left)
{
	const char *root = d->st.cfg.bpffs;
	struct dp_pins_found f, theirs;
	int kind = dp_pins_probe(root, &f), err;

	if (kind == DP_PINS_NONE) {
		/* @root is the empty directory our lock made. */
		dp_pins_unlock(&d->pins_lock);
		if (rename(left, root)) {
			err = -errno;
			rs_err("upgrade: an earlier upgrade left %s; it cannot "
			       "go back under %s: %s",
			       left, root, strerror(-err));
			return err;
		}
		rs_info("upgrade: an earlier upgrade stopped before its data "
			"plane was made: %s is back under %s, and the upgrade "
			"starts over",
			left, root);
		return guard_lock(d, false);
	}
	if (kind != DP_PINS_SAME)
		return 0;
	dp_pins_probe(left, &theirs);
	/* For its sticky entries; without them, the ring decides. */
	if (read_words(left, u))
		upgrade_free(u);
	snprintf(u->aside, sizeof(u->aside), "%s", left);
	u->from_abi = theirs.abi;
	d->tc.retiring_map_id = dp_pinned_sockets_map_id(u->aside);
	dp_pins_retiring(u->aside);
	rs_info("upgrade: an earlier upgrade from ABI %u stopped before it "
		"retired %s: ours under %s is adopted, and that one retired "
		"once ours is up",
		theirs.abi, left, root);
	return 0;
}

int upgrade_prepare(struct daemon *d, struct upgrade *u)
{
	const char *root = d->st.cfg.bpffs;
	char left[PATH_MAX];
	struct dp_pins_found f;
	uint32_t abi;
	int err;

	memset(u, 0, sizeof(*u));
	if (find_aside(root, left, sizeof(left))) {
		err = resume(d, u, left);
		if (err || u->aside[0])
			return err;
	}
	/* Nothing pinned, ours, or not ours to read: dp_open says so. */
	if (dp_pins_probe(root, &f) != DP_PINS_OTHER)
		return 0;
	abi = f.abi;
	err = read_words(root, u);
	if (err) {
		char why[2 * PATH_MAX + 512];

		dp_pins_refusal(&f, root, dp_pins_config_path(), why,
				sizeof(why));
		rs_err("bpf: %s (their state cannot be read by field name, "
		       "for an upgrade without a gap: %s)",
		       why, strerror(-err));
		upgrade_free(u);
		return err;
	}
	err = dp_pins_set_aside(root, abi, u->aside, sizeof(u->aside));
	if (err) {
		rs_err("bpf: cannot move the ABI %u pins under %s aside: %s",
		       abi, root, strerror(-err));
		upgrade_free(u);
		return err;
	}
	u->from_abi = abi;
	u->moved = true;
	d->tc.retiring_map_id = dp_pinned_sockets_map_id(u->aside);
	dp_pins_retiring(u->aside);
	if (abi == RS_ABI_VERSION)
		/* Same ABI: a map sized by the configuration changed size. */
		rs_info("upgrade: the maps pinned under %s are sized for "
			"another configuration (%s: %s): building ours beside "
			"them; theirs, moved to %s, decide until ours is "
			"attached (operator state of %zu backends carried)",
			root, f.map, f.differs, u->aside, u->carried);
	else
		rs_info("upgrade: the maps pinned under %s are of ABI %u, "
			"this build is ABI %u: building ours beside them; "
			"theirs, moved to %s, decide until ours is attached "
			"(operator state of %zu backends carried)",
			root, abi, RS_ABI_VERSION, u->aside, u->carried);
	/* The lock moved with the directory: take the new one's. */
	dp_pins_unlock(&d->pins_lock);
	err = guard_lock(d, false);
	if (err)
		upgrade_abort(d, u);
	return err;
}

int upgrade_seed(struct daemon *d, const struct upgrade *u)
{
	int err = 0;

	if (!u || !u->moved)
		return 0;
	for (uint32_t id = 0; id < RS_MAX_SERVICES && !err; id++)
		if (u->svcs[id].name[0])
			err = dp_set_service(&d->dp, id, &u->svcs[id]);
	for (uint32_t id = 0; id < RS_MAX_BACKENDS && !err; id++)
		if (u->bes[id].name[0])
			err = dp_set_backend(&d->dp, id, &u->bes[id]);
	return err;
}

/*
 * The earlier programs our TC filters replaced: closed (@put_back false)
 * or put back as the filters' programs, an upgrade that failed handing
 * TC back with the rest.
 */
static void retiring_tc_programs(struct daemon *d, bool put_back)
{
	for (size_t i = 0; i < d->tc.n; i++) {
		struct tc_iface *ti = &d->tc.ifs[i];
		int err;

		if (ti->retiring_prog_fd < 0)
			continue;
		if (put_back && ti->ifindex) {
			err = tc_put_back(ti->ifindex, ti->retiring_prog_fd);
			if (err)
				rs_err("upgrade: cannot put the earlier "
				       "steer_tc back on %s: %s",
				       ti->name, strerror(-err));
		}
		close(ti->retiring_prog_fd);
		ti->retiring_prog_fd = -1;
	}
	d->tc.retiring_map_id = 0;
}

/*
 * Sticky clients stay where they are: each service's sticky entries copied
 * from the earlier table (ids are kept by name, so the backends they name
 * are the same), before the earlier program stops deciding.
 */
static void carry_sticky(struct daemon *d, const struct upgrade *u)
{
	if (!u->svcs)
		return;
	for (size_t s = 0; s < d->st.cfg.n_services; s++) {
		const char *name = d->st.cfg.services[s].name;
		int fd = dp_sticky_fd(&d->dp, d->st.svcs[s].id), n = -ENOENT;
		uint32_t old;

		if (fd < 0)
			continue;
		for (old = 0; old < RS_MAX_SERVICES; old++)
			if (!strcmp(u->svcs[old].name, name))
				break;
		if (old < RS_MAX_SERVICES)
			n = dp_migrate_inner(u->aside, "rs_sticky", old, fd,
					     "rs_affinity_key",
					     "rs_sticky_entry");
		close(fd);
		if (n > 0)
			rs_info("upgrade: service %s: %d sticky entries "
				"carried",
				name, n);
		else if (n < 0 && n != -ENOENT)
			rs_warn("upgrade: service %s: the earlier sticky "
				"entries cannot be carried (%s): its sticky "
				"clients go by the ring from now on",
				name, strerror(-n));
	}
}

void upgrade_retire(struct daemon *d, struct upgrade *u)
{
	int err;

	if (!u->aside[0])
		return;
	retiring_tc_programs(d, false);
	dp_pins_retiring(NULL);
	carry_sticky(d, u);
	/* Filters elsewhere still running the earlier program. */
	daemon_tc_detach_elsewhere(&d->st.cfg,
				   dp_pinned_sockets_map_id(u->aside));
	err = dp_detach(u->aside);
	if (err)
		rs_err("upgrade: cannot remove the ABI %u data plane under "
		       "%s: %s; attached before ours, it decides until it "
		       "is gone: `ringsteerd --detach` with bpffs = %s "
		       "removes it",
		       u->from_abi, u->aside, strerror(-err), u->aside);
	else
		rs_info("upgrade: from ABI %u done: the earlier data plane "
			"(%s) is detached and removed",
			u->from_abi, u->aside);
	/* Its connections are ours to count now. */
	load_check_soon(d);
	upgrade_free(u);
}

void upgrade_abort(struct daemon *d, struct upgrade *u)
{
	const char *root = d->st.cfg.bpffs;
	int err;

	if (!u->aside[0])
		return;
	retiring_tc_programs(d, true);
	dp_pins_retiring(NULL);
	if (!u->moved) {
		/* Resumed: nothing of it was moved, it stays where it is. */
		upgrade_free(u);
		return;
	}
	dp_pins_unlock(&d->pins_lock);
	err = dp_detach(root);
	if (!err && rename(u->aside, root))
		err = -errno;
	if (err)
		rs_err("upgrade: the start failed and the ABI %u data plane "
		       "could not be put back under %s (%s): it is still "
		       "attached, under %s",
		       u->from_abi, root, strerror(-err), u->aside);
	else
		rs_info("upgrade: the start failed: the ABI %u data plane is "
			"back under %s, deciding as before",
			u->from_abi, root);
	upgrade_free(u);
}
