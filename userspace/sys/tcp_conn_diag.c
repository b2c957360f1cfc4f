// SPDX-License-Identifier: MIT
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "tcp_conn_diag.h"

struct dump_ctx {
	tcp_conn_fn fn;
	void *arg;
	int stopped;
	const struct tcp_conn_map *maps;
	size_t n;
};

/* INET_DIAG_SK_BPF_STORAGES { SK_DIAG_BPF_STORAGE { MAP_ID, MAP_VALUE } } */
static void storage_values(const struct dump_ctx *dc, struct nlattr *all,
			   struct tcp_conn_seen *c)
{
	struct nlattr *one, *f, *value;
	int rem, rem2;
	uint32_t id;

	nla_for_each_nested(one, all, rem)
	{
		if (nla_type(one) != SK_DIAG_BPF_STORAGE)
			continue;
		id = 0;
		value = NULL;
		nla_for_each_nested(f, one, rem2)
		{
			if (nla_type(f) == SK_DIAG_BPF_STORAGE_MAP_ID &&
			    nla_len(f) >= (int)sizeof(uint32_t))
				id = nla_get_u32(f);
			else if (nla_type(f) == SK_DIAG_BPF_STORAGE_MAP_VALUE)
				value = f;
		}
		for (size_t i = 0; value && i < dc->n; i++) {
			struct tcp_conn_value *v = &c->value[i];
			size_t len = (size_t)nla_len(value);

			if (dc->maps[i].id != id)
				continue;
			if (len > sizeof(v->b))
				len = sizeof(v->b);
			memcpy(v->b, nla_data(value), len);
			v->len = len;
			v->has = true;
		}
	}
}

static int on_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[INET_DIAG_MAX + 1];
	struct dump_ctx *dc = arg;
	const struct inet_diag_msg *m;
	struct tcp_conn_seen c = {0};

	if (dc->stopped || nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    nlmsg_datalen(nlh) < (int)sizeof(*m))
		return NL_OK;
	m = nlmsg_data(nlh);
	c.family = m->idiag_family;
	c.state = m->idiag_state;
	c.local_port = ntohs(m->id.idiag_sport);
	memcpy(c.local_addr, m->id.idiag_src,
	       c.family == AF_INET ? 4 : sizeof(c.local_addr));
	c.inode = m->idiag_inode;
	c.cookie = (uint64_t)m->id.idiag_cookie[0] |
		   (uint64_t)m->id.idiag_cookie[1] << 32;
	if (nlmsg_parse(nlh, sizeof(*m), tb, INET_DIAG_MAX, NULL) == 0) {
		if (tb[INET_DIAG_SK_BPF_STORAGES])
			storage_values(dc, tb[INET_DIAG_SK_BPF_STORAGES], &c);
		if (tb[INET_DIAG_CGROUP_ID] &&
		    nla_len(tb[INET_DIAG_CGROUP_ID]) >= (int)sizeof(uint64_t))
			c.cgroup_id = nla_get_u64(tb[INET_DIAG_CGROUP_ID]);
	}
	dc->stopped = dc->fn(&c, dc->arg);
	return NL_OK;
}

static int dump_family(uint8_t family, uint32_t states, struct dump_ctx *dc)
{
	struct inet_diag_req_v2 req = {
		.sdiag_family = family,
		.sdiag_protocol = IPPROTO_TCP,
		.idiag_states = states,
	};
	struct nl_sock *sk;
	struct nl_msg *msg;
	struct nlattr *nest;
	int err;

	msg = nlmsg_alloc_simple(SOCK_DIAG_BY_FAMILY, NLM_F_DUMP);
	if (!msg)
		return -ENOMEM;
	err = nlmsg_append(msg, &req, sizeof(req), NLMSG_ALIGNTO);
	if (!err && dc->n) {
		nest = nla_nest_start(msg, INET_DIAG_REQ_SK_BPF_STORAGES);
		for (size_t i = 0; nest && !err && i < dc->n; i++)
			if (nla_put_u32(msg, SK_DIAG_BPF_STORAGE_REQ_MAP_FD,
					(uint32_t)dc->maps[i].fd) < 0)
				err = -1;
		if (!nest)
			err = -1;
		else if (!err)
			nla_nest_end(msg, nest);
	}
	if (err) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	sk = nl_socket_alloc();
	if (!sk) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	/* A dump of a busy host outgrows the default 32 KiB buffer. */
	nl_socket_set_msg_buf_size(sk, 1u << 20);
	err = nl_connect(sk, NETLINK_SOCK_DIAG);
	if (err < 0) {
		err = -ECONNREFUSED;
		goto out;
	}
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_msg, dc);
	err = nl_send_auto(sk, msg);
	if (err < 0) {
		err = -EIO;
		goto out;
	}
	err = nl_recvmsgs_default(sk);
	err = err < 0 ? -EIO : 0;
out:
	nlmsg_free(msg);
	nl_socket_free(sk);
	return err;
}

int tcp_conn_dump(uint32_t states, const struct tcp_conn_map *maps, size_t n,
		  tcp_conn_fn fn, void *arg)
{
	struct dump_ctx dc = {.fn = fn, .arg = arg, .maps = maps, .n = n};
	int err;

	if (n > TCP_CONN_MAPS_MAX)
		return -EINVAL;
	err = dump_family(AF_INET, states, &dc);
	if (!err && !dc.stopped)
		err = dump_family(AF_INET6, states, &dc);
	if (err)
		return err;
	return dc.stopped;
}
