// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "addr.h"
#include "local_route.h"

/* `ip route get ADDR`, over rtnetlink: one request, one reply. */
int rs_route_is_local(int family, const uint8_t addr[16])
{
	size_t alen = family == AF_INET ? 4 : 16;
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		struct rtattr dst;
		uint8_t addr[16];
	} req = {
		.nh.nlmsg_len =
			NLMSG_LENGTH(sizeof(struct rtmsg)) + RTA_LENGTH(alen),
		.nh.nlmsg_type = RTM_GETROUTE,
		.nh.nlmsg_flags = NLM_F_REQUEST,
		.nh.nlmsg_seq = 1,
		.rt.rtm_family = (unsigned char)family,
		.rt.rtm_dst_len = (unsigned char)(alen * 8),
		.dst.rta_type = RTA_DST,
		.dst.rta_len = (unsigned short)RTA_LENGTH(alen),
	};
	char buf[4096];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	ssize_t n;
	int fd, ret;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	memcpy(req.addr, addr, alen);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
		ret = -errno;
		goto out;
	}
	do
		n = recv(fd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	if (!NLMSG_OK(nh, (size_t)n)) {
		ret = -EBADMSG;
	} else if (nh->nlmsg_type == NLMSG_ERROR) {
		int err = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;

		/* No route at all is an answer: not ours. */
		ret = err == -ENETUNREACH || err == -EHOSTUNREACH ? 0
		      : err					  ? err
								  : -EBADMSG;
	} else if (nh->nlmsg_type == RTM_NEWROUTE) {
		ret = ((struct rtmsg *)NLMSG_DATA(nh))->rtm_type == RTN_LOCAL;
	} else {
		ret = -EBADMSG;
	}
out:
	close(fd);
	return ret;
}

size_t rs_listen_not_local(const struct rs_config *cfg,
			   void (*fn)(const char *line, void *arg), void *arg)
{
	size_t n = 0;

	for (size_t s = 0; s < cfg->n_services; s++) {
		const struct rs_service_conf *svc = &cfg->services[s];

		for (size_t i = 0; i < svc->n_listens; i++) {
			const struct rs_listen *l = &svc->listens[i];
			unsigned int bits = l->family == AF_INET ? 32 : 128;
			const char *ip6 = l->family == AF_INET6 ? " -6" : "";
			char text[80], host[64], net[80], line[PATH_MAX + 1024];

			/*
			 * A prefix is checked at its first address: a local
			 * route for the prefix covers it, a lone address in
			 * it would not make the rest local anyway.
			 */
			if (rs_route_is_local(l->family, l->addr) != 0)
				continue;
			rs_addr_format_prefix(l->family, l->addr, l->prefixlen,
					      l->port, text, sizeof(text));
			inet_ntop(l->family, l->addr, host, sizeof(host));
			snprintf(net, sizeof(net), "%s/%u", host, l->prefixlen);
			if (l->prefixlen == bits)
				snprintf(line, sizeof(line),
					 "%s:%d: [service %s] listen %s: %s is "
					 "not local to this host, so its "
					 "clients will time out: add it (ip%s "
					 "addr add %s dev lo) or route it here "
					 "(ip%s route add local %s dev lo)",
					 cfg->path, l->line, svc->name, text,
					 host, ip6, net, ip6, net);
			else
				snprintf(line, sizeof(line),
					 "%s:%d: [service %s] listen %s: %s is "
					 "not local to this host, so its "
					 "clients will time out: route it here "
					 "(ip%s route add local %s dev lo)",
					 cfg->path, l->line, svc->name, text,
					 net, ip6, net);
			fn(line, arg);
			n++;
		}
	}
	return n;
}
