// SPDX-License-Identifier: MIT
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "backend_socket.h"
#include "socket_holders.h"

#define TCP_LISTEN_STATE 10

struct diag_match {
	const struct rs_sock_addr *want;
	struct rs_sock_found found;
	bool hit;
	/* sock_each_listener(): every match's inode, not the first only */
	uint64_t *inodes;
	size_t n_inodes, max_inodes;
};

static bool diag_msg_matches(const struct inet_diag_msg *m,
			     const struct rs_sock_addr *want)
{
	size_t alen = want->family == AF_INET ? 4 : 16;

	if (m->idiag_family != want->family)
		return false;
	if (ntohs(m->id.idiag_sport) != want->port)
		return false;
	/* A connected UDP socket is a client flow, not the server socket. */
	if (want->protocol == IPPROTO_UDP && m->id.idiag_dport != 0)
		return false;
	return memcmp(m->id.idiag_src, want->addr, alen) == 0;
}

/* What a dump's message @nlh (@m) says of its socket. */
static void diag_found(struct nlmsghdr *nlh, const struct inet_diag_msg *m,
		       struct rs_sock_found *f)
{
	struct nlattr *tb[INET_DIAG_MAX + 1];

	f->v6only = false;
	f->cgroup_id = 0;
	if (nlmsg_parse(nlh, sizeof(*m), tb, INET_DIAG_MAX, NULL) == 0) {
		if (m->idiag_family == AF_INET6 && tb[INET_DIAG_SKV6ONLY])
			f->v6only = nla_get_u8(tb[INET_DIAG_SKV6ONLY]) != 0;
		if (tb[INET_DIAG_CGROUP_ID] &&
		    nla_len(tb[INET_DIAG_CGROUP_ID]) >= (int)sizeof(uint64_t))
			f->cgroup_id = nla_get_u64(tb[INET_DIAG_CGROUP_ID]);
	}
	f->inode = m->idiag_inode;
	f->uid = m->idiag_uid;
	f->cookie = (uint64_t)m->id.idiag_cookie[0] |
		    (uint64_t)m->id.idiag_cookie[1] << 32;
}

static int diag_on_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct diag_match *dm = arg;
	const struct inet_diag_msg *m;

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    nlmsg_datalen(nlh) < (int)sizeof(*m) || (dm->hit && !dm->inodes))
		return NL_OK;
	m = nlmsg_data(nlh);
	if (!diag_msg_matches(m, dm->want))
		return NL_OK;
	if (dm->inodes && dm->n_inodes < dm->max_inodes)
		dm->inodes[dm->n_inodes++] = m->idiag_inode;
	diag_found(nlh, m, &dm->found);
	dm->hit = true;
	return NL_OK;
}

/*
 * Sent through libnl's core rather than libnl-idiag: the latter only
 * builds the TCP-only TCPDIAG_GETSOCK request, and UDP backends need
 * SOCK_DIAG_BY_FAMILY.
 */
static uint64_t dumps_made;

uint64_t sock_diag_dumps(void)
{
	return dumps_made;
}

static int diag_dump(const struct rs_sock_addr *addr,
		     int (*on_msg)(struct nl_msg *, void *), void *arg)
{
	struct inet_diag_req_v2 req = {
		.sdiag_family = addr->family,
		.sdiag_protocol = addr->protocol,
		.idiag_states = addr->protocol == IPPROTO_TCP
					? 1u << TCP_LISTEN_STATE
					: ~0u,
	};
	struct nl_sock *sk;
	int err;

	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	err = nl_connect(sk, NETLINK_SOCK_DIAG);
	if (err < 0) {
		err = -ECONNREFUSED;
		goto out;
	}
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_msg, arg);
	dumps_made++;
	err = nl_send_simple(sk, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, &req,
			     sizeof(req));
	if (err < 0) {
		err = -EIO;
		goto out;
	}
	err = nl_recvmsgs_default(sk);
	err = err < 0 ? -EIO : 0;
out:
	nl_socket_free(sk);
	return err;
}

/*
 * A batch's dumps: every socket of one (family, protocol) that a lookup
 * can match (TCP listeners, unconnected UDP sockets), in the kernel's
 * order, so that the first match is the one a dump of its own would give.
 */
struct batch_sock {
	uint16_t port;
	uint8_t addr[16];
	struct rs_sock_found found;
};
struct batch_dump {
	bool made;
	int err;
	struct batch_sock *s;
	size_t n, cap;
};
static struct {
	int depth;
	struct batch_dump dump[2][2]; /* [IPv6][UDP] */
} batch;

static int batch_on_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct batch_dump *bd = arg;
	const struct inet_diag_msg *m;
	struct batch_sock *b;

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    nlmsg_datalen(nlh) < (int)sizeof(*m))
		return NL_OK;
	m = nlmsg_data(nlh);
	/* A connected UDP socket is a client flow, not a server's. */
	if (m->id.idiag_dport != 0)
		return NL_OK;
	if (bd->n == bd->cap) {
		size_t cap = bd->cap ? bd->cap * 2 : 64;
		void *s = realloc(bd->s, cap * sizeof(*bd->s));

		if (!s) {
			bd->err = -ENOMEM;
			return NL_STOP;
		}
		bd->s = s;
		bd->cap = cap;
	}
	b = &bd->s[bd->n++];
	b->port = ntohs(m->id.idiag_sport);
	memcpy(b->addr, m->id.idiag_src, sizeof(b->addr));
	diag_found(nlh, m, &b->found);
	return NL_OK;
}

static int batch_find(const struct rs_sock_addr *addr,
		      struct rs_sock_found *out)
{
	struct batch_dump *bd = &batch.dump[addr->family == AF_INET6]
					   [addr->protocol == IPPROTO_UDP];
	size_t alen = addr->family == AF_INET ? 4 : 16;
	int err;

	if (!bd->made) {
		bd->made = true;
		err = diag_dump(addr, batch_on_msg, bd);
		if (err && !bd->err)
			bd->err = err;
	}
	if (bd->err)
		return bd->err;
	for (size_t i = 0; i < bd->n; i++)
		if (bd->s[i].port == addr->port &&
		    !memcmp(bd->s[i].addr, addr->addr, alen)) {
			*out = bd->s[i].found;
			return 0;
		}
	return -ENOENT;
}

void sock_diag_batch_begin(void)
{
	batch.depth++;
}

void sock_diag_batch_end(void)
{
	if (batch.depth <= 0 || --batch.depth > 0)
		return;
	for (int f = 0; f < 2; f++)
		for (int p = 0; p < 2; p++) {
			free(batch.dump[f][p].s);
			batch.dump[f][p] = (struct batch_dump){0};
		}
}

int sock_diag_find(const struct rs_sock_addr *addr, struct rs_sock_found *out)
{
	struct diag_match dm = {.want = addr};
	int err;

	if (batch.depth > 0)
		return batch_find(addr, out);
	err = diag_dump(addr, diag_on_msg, &dm);

	if (!err && !dm.hit)
		err = -ENOENT;
	if (!err)
		*out = dm.found;
	return err;
}

/* Every match of a dump, not the first only (sock_diag_find_all()). */
struct diag_all {
	const struct rs_sock_addr *want;
	struct rs_sock_found *out;
	size_t n, max;
};

static int diag_all_on_msg(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct diag_all *da = arg;
	const struct inet_diag_msg *m;

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    nlmsg_datalen(nlh) < (int)sizeof(*m) || da->n == da->max)
		return NL_OK;
	m = nlmsg_data(nlh);
	if (diag_msg_matches(m, da->want))
		diag_found(nlh, m, &da->out[da->n++]);
	return NL_OK;
}

int sock_diag_find_all(const struct rs_sock_addr *addr,
		       struct rs_sock_found *out, size_t max)
{
	struct diag_all da = {.want = addr, .out = out, .max = max};
	struct batch_dump *bd = &batch.dump[addr->family == AF_INET6]
					   [addr->protocol == IPPROTO_UDP];
	size_t alen = addr->family == AF_INET ? 4 : 16;
	struct rs_sock_found first;
	int err;

	if (batch.depth == 0) {
		err = diag_dump(addr, diag_all_on_msg, &da);
		return err ? err : (int)da.n;
	}
	/* Makes the batch's dump if this pass has none yet. */
	err = batch_find(addr, &first);
	if (err && err != -ENOENT)
		return err;
	for (size_t i = 0; i < bd->n && da.n < max; i++)
		if (bd->s[i].port == addr->port &&
		    !memcmp(bd->s[i].addr, addr->addr, alen))
			out[da.n++] = bd->s[i].found;
	return (int)da.n;
}

struct owner_found {
	pid_t pid;
	int fd;
};

static int owner_first(size_t idx, pid_t pid, int fd, void *arg)
{
	struct owner_found *o = arg;

	(void)idx;
	o->pid = pid;
	o->fd = fd;
	return 1;
}

int sock_owner_find(uint64_t inode, pid_t *pid, int *fd)
{
	struct owner_found o = {0};
	int err = socket_holders_scan(&inode, 1, owner_first, &o);

	if (err)
		return err;
	if (!o.pid)
		return -ESRCH;
	*pid = o.pid;
	*fd = o.fd;
	return 0;
}

int sock_take(pid_t pid, int fd, uint64_t inode)
{
	struct stat st;
	int pidfd, sfd, err;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	sfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	err = -errno;
	close(pidfd);
	if (sfd < 0)
		return err;
	if (fstat(sfd, &st) || (uint64_t)st.st_ino != inode) {
		close(sfd);
		return -ESTALE;
	}
	return sfd;
}

int sock_acquire(const struct rs_sock_addr *addr, struct rs_sock_found *found,
		 pid_t *owner)
{
	int err, fd;

	err = sock_diag_find(addr, found);
	if (err)
		return err;
	err = sock_owner_find(found->inode, owner, &fd);
	if (err)
		return err;
	return sock_take(*owner, fd, found->inode);
}

struct each_listener {
	const uint64_t *inodes;
	bool *done;
	int (*fn)(int fd, void *arg);
	void *arg;
	int handed;
};

static int take_each(size_t idx, pid_t pid, int fd, void *arg)
{
	struct each_listener *e = arg;
	int sfd;

	if (e->done[idx])
		return 0;
	sfd = sock_take(pid, fd, e->inodes[idx]);
	if (sfd < 0)
		return 0; /* closed meanwhile, or another holder will do */
	e->done[idx] = true;
	if (!e->fn(sfd, e->arg))
		e->handed++;
	close(sfd);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int sock_each_listener(const struct rs_sock_addr *addr,
		       int (*fn)(int fd, void *arg), void *arg)
{
	uint64_t inodes[RS_SOCK_EACH_MAX];
	bool done[RS_SOCK_EACH_MAX] = {0};
	struct diag_match dm = {
		.want = addr, .inodes = inodes, .max_inodes = RS_SOCK_EACH_MAX};
	struct each_listener e = {
		.inodes = inodes, .done = done, .fn = fn, .arg = arg};
	int err = diag_dump(addr, diag_on_msg, &dm);

	if (err)
		return err;
	if (!dm.n_inodes)
		return -ENOENT;
	qsort(inodes, dm.n_inodes, sizeof(inodes[0]), cmp_u64);
	err = socket_holders_scan(inodes, dm.n_inodes, take_each, &e);
	return err ? err : e.handed;
}
