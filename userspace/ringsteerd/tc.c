// SPDX-License-Identifier: MIT
/*
 * steer_tc at TC ingress of the `[global] interfaces`, for as long as a
 * service has cookie = quic. The filter sits at a fixed handle and
 * priority (tc_attach.h), so a restarted daemon replaces its own filter in
 * place and never anybody else's.
 *
 * Interfaces come and go (a veth recreated, a NIC moved between
 * namespaces, a bond rebuilt): a new interface has no filter, whatever its
 * name. An rtnetlink socket subscribed to RTNLGRP_LINK, watched by the
 * event loop, says when a configured name appears (attach), when the
 * interface we attached to goes away (forget it) or is renamed. A check
 * once a second catches what events cannot tell (somebody deleting the
 * clsact qdisc) and anything missed when the socket overflowed.
 */
#include <errno.h>
#include <stdlib.h>

#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "binds.h"
#include "daemon.h"
#include "log.h"
#include "tc_attach.h"

bool daemon_tc_wanted(const struct rs_config *cfg)
{
	for (size_t s = 0; s < cfg->n_services; s++)
		if (cfg->services[s].cookie == RS_COOKIE_QUIC ||
		    (cfg->services[s].fleet && cfg->fleet.enabled))
			return true;
	return false;
}

static bool configured(const struct rs_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_interfaces; i++)
		if (!strcmp(cfg->interfaces[i], name))
			return true;
	return false;
}

static void tc_attach_if(struct daemon *d, struct tc_iface *ti)
{
	int ifindex = (int)if_nametoindex(ti->name), err, kept;
	bool replaced;

	ti->ifindex = 0;
	if (!ifindex) {
		if (!ti->reported_missing)
			rs_warn("tc: interface %s not present; steer_tc is "
				"attached when it appears",
				ti->name);
		ti->reported_missing = true;
		return;
	}
	err = tc_attach(ifindex, dp_tc_prog_fd(&d->dp),
			dp_sockets_map_id(&d->dp), d->tc.retiring_map_id,
			&replaced, &kept);
	if (err) {
		if (err != ti->last_err)
			rs_err("tc: cannot attach steer_tc to %s (ifindex %d) "
			       "ingress: %s; retrying",
			       ti->name, ifindex, tc_strerror(err));
		ti->last_err = err;
		return;
	}
	if (kept >= 0) {
		if (ti->retiring_prog_fd >= 0)
			close(ti->retiring_prog_fd);
		ti->retiring_prog_fd = kept;
	}
	ti->ifindex = ifindex;
	ti->last_err = 0;
	ti->reported_missing = false;
	ti->attaches++;
	rs_info("tc: %s steer_tc id %u on %s ingress (ifindex %d, pref %u "
		"handle 0x%x)",
		replaced ? "replaced the program of our filter with"
			 : "attached",
		dp_tc_program_id(&d->dp), ti->name, ifindex, RS_TC_PRIORITY,
		RS_TC_HANDLE);
}

static void tc_detach_if(struct daemon *d, const char *name, int ifindex,
			 const char *why)
{
	int err = tc_detach(ifindex, dp_sockets_map_id(&d->dp));

	if (err == 0)
		rs_info("tc: removed steer_tc from %s ingress (%s)", name, why);
	else if (err != -ENOENT && err != -ENODEV)
		rs_warn("tc: cannot remove steer_tc from %s: %s", name,
			tc_strerror(err));
}

/* ---- link events ---- */

static struct tc_iface *by_ifindex(struct tc_state *t, int ifindex)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->ifs[i].ifindex && t->ifs[i].ifindex == ifindex)
			return &t->ifs[i];
	return NULL;
}

static struct tc_iface *by_name(struct tc_state *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->ifs[i].name, name))
			return &t->ifs[i];
	return NULL;
}

static int on_link_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[IFLA_MAX + 1];
	struct daemon *d = arg;
	struct tc_state *t = &d->tc;
	const struct ifinfomsg *ifi;
	struct tc_iface *ti;
	const char *name;

	if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK)
		return NL_OK;
	if (nlmsg_parse(nlh, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0 ||
	    !tb[IFLA_IFNAME])
		return NL_OK;
	ifi = nlmsg_data(nlh);
	name = nla_get_string(tb[IFLA_IFNAME]);
	ti = by_ifindex(t, ifi->ifi_index);
	if (nlh->nlmsg_type == RTM_DELLINK) {
		/* Deleted or moved to another namespace: the filter is gone. */
		if (ti) {
			rs_warn("tc: %s (ifindex %d) went away; steer_tc is "
				"attached again when it is back",
				ti->name, ti->ifindex);
			ti->ifindex = 0;
			ti->reported_missing = true;
		}
		return NL_OK;
	}
	if (ti && strcmp(ti->name, name)) {
		/* Renamed: no longer the configured interface. */
		rs_warn("tc: %s (ifindex %d) was renamed %s", ti->name,
			ti->ifindex, name);
		tc_detach_if(d, name, ifi->ifi_index, "renamed");
		ti->ifindex = 0;
		tc_attach_if(d, ti);
		return NL_OK;
	}
	ti = by_name(t, name);
	if (ti && ti->ifindex != ifi->ifi_index) {
		if (ti->reported_missing)
			rs_info("tc: %s appeared (ifindex %d)", name,
				ifi->ifi_index);
		tc_attach_if(d, ti);
	}
	return NL_OK;
}

static void on_netlink(struct ev_loop *loop, ev_io *w, int revents)
{
	struct daemon *d = w->data;
	int err;

	(void)loop;
	(void)revents;
	err = nl_recvmsgs_default(d->tc.nl);
	if (err < 0 && err != -NLE_AGAIN) {
		/* Most likely an overrun (ENOBUFS): events were lost. */
		rs_debug("tc: link events: %s; checking every interface",
			 nl_geterror(err));
		daemon_tc_check(d);
	}
}

static void netlink_close(struct daemon *d)
{
	struct tc_state *t = &d->tc;

	if (!t->nl)
		return;
	ev_io_stop(d->loop, &t->io);
	nl_socket_free(t->nl);
	t->nl = NULL;
}

static int netlink_open(struct daemon *d)
{
	struct tc_state *t = &d->tc;
	int err;

	if (t->nl)
		return 0;
	t->nl = nl_socket_alloc();
	if (!t->nl)
		return -ENOMEM;
	nl_socket_disable_seq_check(t->nl);
	nl_socket_modify_cb(t->nl, NL_CB_VALID, NL_CB_CUSTOM, on_link_msg, d);
	err = nl_connect(t->nl, NETLINK_ROUTE);
	if (!err)
		err = nl_socket_add_membership(t->nl, RTNLGRP_LINK);
	if (!err)
		err = nl_socket_set_nonblocking(t->nl);
	if (err) {
		rs_warn("tc: cannot watch links (%s); checking interfaces "
			"once a second only",
			nl_geterror(err));
		nl_socket_free(t->nl);
		t->nl = NULL;
		return -EIO;
	}
	nl_socket_set_buffer_size(t->nl, 1 << 20, 0);
	ev_io_init(&t->io, on_netlink, nl_socket_get_fd(t->nl), EV_READ);
	t->io.data = d;
	ev_io_start(d->loop, &t->io);
	return 0;
}

/* ---- apply, check, stop ---- */

/*
 * Filters of ours (this bpffs's maps) on interfaces that should not have
 * one: left by a daemon with another configuration, or by a reload.
 */
static void sweep(struct daemon *d, bool want)
{
	uint32_t map_id = dp_sockets_map_id(&d->dp);
	struct if_nameindex *all = if_nameindex(), *p;
	struct rs_tc_filter f;

	if (!all)
		return;
	for (p = all; p->if_index; p++) {
		if (want && configured(&d->st.cfg, p->if_name))
			continue;
		if (tc_query((int)p->if_index, map_id, &f) || !f.ours)
			continue;
		tc_detach_if(d, p->if_name, (int)p->if_index,
			     want ? "not in [global] interfaces"
				  : "no service has cookie = quic or fleet = "
				    "on");
	}
	if_freenameindex(all);
}

int daemon_tc_apply(struct daemon *d)
{
	struct tc_state *t = &d->tc;
	struct tc_state old = *t;
	bool want = daemon_tc_wanted(&d->st.cfg);
	int err;

	/* Forget interfaces no longer configured (the sweep detaches). */
	t->n = 0;
	for (size_t i = 0; i < old.n && want; i++)
		if (configured(&d->st.cfg, old.ifs[i].name))
			t->ifs[t->n++] = old.ifs[i];
	sweep(d, want);
	if (!want) {
		netlink_close(d);
		dp_tc_close(&d->dp);
		t->active = false;
		return 0;
	}
	for (size_t s = 0; s < d->st.cfg.n_services && !d->st.cfg.n_interfaces;
	     s++)
		if (d->st.cfg.services[s].cookie == RS_COOKIE_QUIC)
			rs_warn("service %s: cookie = quic, but [global] "
				"interfaces is empty: its QUIC connections "
				"follow IP affinity only",
				d->st.cfg.services[s].name);
	err = dp_tc_open(&d->dp);
	if (!err)
		err = quic_lb_apply(&d->dp, &d->st);
	if (err)
		return err;
	t->active = true;
	netlink_open(d);
	for (size_t i = 0; i < d->st.cfg.n_interfaces; i++) {
		struct tc_iface *ti = by_name(t, d->st.cfg.interfaces[i]);

		if (!ti) {
			ti = &t->ifs[t->n++];
			memset(ti, 0, sizeof(*ti));
			ti->retiring_prog_fd = -1;
			snprintf(ti->name, sizeof(ti->name), "%s",
				 d->st.cfg.interfaces[i]);
		}
		if (!ti->ifindex)
			tc_attach_if(d, ti);
	}
	return 0;
}

void daemon_tc_check(struct daemon *d)
{
	struct tc_state *t = &d->tc;
	uint32_t map_id;

	if (!t->active)
		return;
	map_id = dp_sockets_map_id(&d->dp);
	for (size_t i = 0; i < t->n; i++) {
		struct tc_iface *ti = &t->ifs[i];
		struct rs_tc_filter f;

		if (ti->ifindex) {
			if ((int)if_nametoindex(ti->name) != ti->ifindex) {
				rs_warn("tc: %s (ifindex %d) went away; "
					"steer_tc "
					"is attached again when it is back",
					ti->name, ti->ifindex);
				ti->ifindex = 0;
				ti->reported_missing = true;
			} else if (tc_query(ti->ifindex, map_id, &f) ||
				   !f.ours) {
				rs_warn("tc: our filter on %s is gone; "
					"attaching again",
					ti->name);
				ti->ifindex = 0;
			}
		}
		if (!ti->ifindex) {
			/*
			 * The link event may come after this check (seen under
			 * qemu TCG): say "appeared" here too, or nobody does.
			 */
			bool was_missing = ti->reported_missing;

			tc_attach_if(d, ti);
			if (was_missing && ti->ifindex)
				rs_info("tc: %s appeared (ifindex %d)",
					ti->name, ti->ifindex);
		}
	}
}

void daemon_tc_stop(struct daemon *d)
{
	netlink_close(d);
	d->tc.active = false;
}

int daemon_tc_detach(const struct rs_config *cfg)
{
	uint32_t map_id = dp_pinned_sockets_map_id(cfg->bpffs);
	int rc = 0;

	for (size_t i = 0; i < cfg->n_interfaces; i++) {
		int ifindex = (int)if_nametoindex(cfg->interfaces[i]), err;

		if (!ifindex) {
			rs_info("tc: %s not present: no filter to remove",
				cfg->interfaces[i]);
			continue;
		}
		err = tc_detach(ifindex, map_id);
		if (err == 0)
			rs_info("tc: removed steer_tc from %s ingress",
				cfg->interfaces[i]);
		else if (err == -EEXIST)
			rs_warn("tc: the filter at pref %u handle 0x%x on %s "
				"is not ringsteer's: left alone",
				RS_TC_PRIORITY, RS_TC_HANDLE,
				cfg->interfaces[i]);
		else if (err != -ENOENT && err != -ENODEV) {
			rs_err("tc: cannot remove steer_tc from %s: %s",
			       cfg->interfaces[i], strerror(-err));
			rc = err;
		}
	}
	/* Elsewhere only what provably uses our maps. */
	daemon_tc_detach_elsewhere(cfg, map_id);
	return rc;
}

void daemon_tc_detach_elsewhere(const struct rs_config *cfg, uint32_t map_id)
{
	struct if_nameindex *all, *p;

	if (!map_id)
		return;
	all = if_nameindex();
	for (p = all; p && p->if_index; p++) {
		struct rs_tc_filter f;

		if (configured(cfg, p->if_name) ||
		    tc_query((int)p->if_index, map_id, &f) || !f.ours)
			continue;
		if (tc_detach((int)p->if_index, map_id) == 0)
			rs_info("tc: removed steer_tc from %s ingress",
				p->if_name);
	}
	if (all)
		if_freenameindex(all);
}
