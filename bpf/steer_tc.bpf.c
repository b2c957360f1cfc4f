// SPDX-License-Identifier: MIT
/*
 * TC ingress data plane. First the fleet step (bpf/lib/fleet.bpf.h,
 * docs/fleet.md): a packet of a fleet service owned by another host is
 * encapsulated and sent there, one encapsulated to this host is unwrapped
 * (or dropped when forged or over the hop limit). Those are the only
 * packets this program changes, drops or redirects.
 *
 * Then, for UDP services with cookie = quic: a datagram
 * whose destination connection ID carries the service's QUIC-LB config
 * rotation bits and the server ID of a backend that is UP or DRAIN goes
 * straight to that backend's socket (bpf_sk_assign), wherever the client
 * moved to. Everything else is left alone for sk_lookup and its IP
 * affinity, and counted by reason. For a service with generations the
 * backend goes into the 4-tuple's flow entry instead of an assign, and
 * sk_lookup picks the generation (flow_backend()). The program never drops or
 * modifies a packet and never ends the filter chain: every path returns
 * TC_ACT_UNSPEC, so filters after it still run (the fleet step aside).
 * docs/quic.md has the whole story.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bind_match.bpf.h"
#include "coarse_clock.bpf.h"
#include "fleet.bpf.h"
#include "maps.bpf.h"
#include "pkt.bpf.h"
#include "quic.bpf.h"
#include "quic_lb.bpf.h"
#include "trace_tc.bpf.h"

/* What happened to one datagram of a cookie service; see count(). */
enum tc_outcome {
	TC_HIT,		  /* assigned to the backend its server ID names */
	TC_ASSIGN_FAILED, /* chose a backend, the kernel refused the socket */
	TC_NONE,
	TC_UNKNOWN,
	TC_DOWN,
	TC_MALFORMED,
	TC_ERROR, /* bad service config or a socket that must not be used */
	TC_HELD,  /* the ID's backend restarts: dropped, the flow waits */
	TC_FLOW,  /* generations: the backend written for sk_lookup to honour */
};

struct udp_flow {
	__u32 daddr[4]; /* network order; IPv4 in daddr[0] */
	__u32 l4_off;	/* frame offset of the UDP header */
	__u32 l4_len;	/* IP payload length claimed by the IP header */
	__u16 dport;	/* host order */
	__u16 udp_len;	/* UDP length field, host order */
	__u8 family;
};

/* The IPv4 options' 40 bytes at most, for the verifier's bounds. */
#define UDP_MAX_L4_OFF (ETH_HLEN + 60)

/*
 * An unfragmented IPv4 UDP datagram whose UDP header is in the frame.
 * Options are skipped through ihl. Fragments are left alone: only the
 * first carries the ports, and sk_lookup sees the reassembled datagram.
 * Headers are read in place (pkt.bpf.h), as in parse_udp().
 */
static __always_inline int parse_ipv4(struct __sk_buff *skb, struct udp_flow *f)
{
	struct iphdr *iph;
	__u32 hlen, tot;

	iph = rs_pkt_at(skb, ETH_HLEN, sizeof(*iph));
	if (!iph)
		return -1;
	if (iph->version != 4 || iph->ihl < 5 || iph->protocol != IPPROTO_UDP)
		return -1;
	if (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return -1;
	hlen = iph->ihl * 4;
	tot = bpf_ntohs(iph->tot_len);
	if (tot < hlen + sizeof(struct udphdr))
		return -1;
	f->family = RS_AF_INET;
	f->daddr[0] = iph->daddr;
	f->l4_off = ETH_HLEN + hlen;
	f->l4_len = tot - hlen;
	return 0;
}

/*
 * IPv6 with UDP as the first next header. Extension headers are not
 * walked: QUIC datagrams do not carry them, and whatever does is left to
 * sk_lookup. Payload length 0 (jumbogram) fails the size check.
 */
static __always_inline int parse_ipv6(struct __sk_buff *skb, struct udp_flow *f)
{
	struct ipv6hdr *ip6;
	__u32 plen;

	ip6 = rs_pkt_at(skb, ETH_HLEN, sizeof(*ip6));
	if (!ip6)
		return -1;
	if (ip6->version != 6 || ip6->nexthdr != IPPROTO_UDP)
		return -1;
	plen = bpf_ntohs(ip6->payload_len);
	if (plen < sizeof(struct udphdr))
		return -1;
	f->family = RS_AF_INET6;
	__builtin_memcpy(f->daddr, &ip6->daddr, sizeof(f->daddr));
	f->l4_off = ETH_HLEN + sizeof(*ip6);
	f->l4_len = plen;
	return 0;
}

/*
 * Enough of Ethernet, IP and UDP to know which service the datagram is
 * for. Until that is known nothing is counted: a frame that fails here
 * belongs to no service. Length consistency is checked afterwards, so a
 * truncated datagram of a cookie service counts as malformed. Read in
 * place, a pull only when the headers are not in the linear part: three
 * bpf_skb_load_bytes() calls cost +50 ns on a 47 ns floor (issue 39).
 */
static __always_inline int parse_udp(struct __sk_buff *skb, struct udp_flow *f)
{
	struct ethhdr *eth;
	struct udphdr *uh;
	__u32 l4;

	/* Frames for other hosts (promiscuous) and multicast: not ours. */
	if (skb->pkt_type != PACKET_HOST)
		return -1;
	eth = rs_pkt_at(skb, 0, sizeof(*eth));
	if (!eth)
		return -1;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		if (parse_ipv4(skb, f))
			return -1;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		if (parse_ipv6(skb, f))
			return -1;
	} else {
		return -1;
	}
	l4 = f->l4_off;
	if (l4 > UDP_MAX_L4_OFF)
		return -1;
	uh = rs_pkt_at(skb, l4, sizeof(*uh));
	if (!uh)
		return -1;
	f->dport = bpf_ntohs(uh->dest);
	f->udp_len = bpf_ntohs(uh->len);
	return 0;
}

/*
 * The service's QUIC parameters as the daemon validated them; a bad
 * value (a control-plane bug) must not turn into an unbounded read.
 */
static __always_inline int cookie_config(const struct rs_service *svc,
					 __u32 *sid_len, __u32 *cid_len)
{
	__u32 sid = svc->quic_server_id_len, cid = svc->quic_cid_len;

	if (sid < 1 || sid > RS_QUIC_MAX_SERVER_ID)
		return -1;
	if (cid <= sid || cid > QUIC_MAX_CID_LEN)
		return -1;
	*sid_len = sid;
	*cid_len = cid;
	return 0;
}

/* The socket to give a datagram of @family, or NULL (counts as DOWN). */
static __always_inline struct bpf_sock *backend_socket(__u32 backend,
						       __u8 family)
{
	__u32 slot = rs_socket_slot(backend, family == RS_AF_INET6);

	return bpf_map_lookup_elem(&rs_sockets, &slot);
}

/*
 * A generations service: no bpf_sk_assign here, which the kernel would
 * follow with its reuseport pick among the old and the new process.
 * The CID's backend goes into the 4-tuple's flow entry instead, and
 * sk_lookup, which runs next for this very skb on this CPU, honours it
 * and picks the flow's generation (generations.bpf.h). With list receive
 * several skbs' TC may run before their lookups: a 4-tuple is one flow,
 * so the entry is right for each of them. The cookie stays while the
 * backend does, else 0 (sk_lookup then records the working socket).
 * Returns 0 when written; -1 when the backend has no socket (the caller
 * holds the flow or calls it down, as without generations) or the entry
 * could not be written (a full table): the datagram is then assigned
 * here, as without generations. The addresses and ports are read again
 * here, from headers parse_udp() checked, not passed: a pointer to its
 * struct would put that on steer_tc's stack, which is full.
 */
static __attribute__((noinline)) int flow_backend(struct __sk_buff *skb,
						  __u32 backend, __u32 family,
						  __u32 l4_off)
{
	struct bpf_sock *sk = backend_socket(backend, family);
	struct rs_udp_flow_key key = {};
	struct rs_udp_flow *e, v = {.backend = backend};
	__u32 now = (__u32)(rs_coarse_now() / RS_NS_PER_S);
	__u16 ports[2];
	__u32 v4[2];
	int err;

	if (!sk)
		return -1;
	bpf_sk_release(sk);
	/* Source and destination are adjacent in both headers. */
	if (family == RS_AF_INET) {
		err = bpf_skb_load_bytes(
			skb, ETH_HLEN + offsetof(struct iphdr, saddr), v4, 8);
		key.saddr[0] = v4[0];
		key.daddr[0] = v4[1];
	} else {
		/* key.saddr and key.daddr as well: one read fills both. */
		err = bpf_skb_load_bytes(
			skb, ETH_HLEN + offsetof(struct ipv6hdr, saddr),
			key.saddr, 32);
	}
	if (err || bpf_skb_load_bytes(skb, l4_off, ports, sizeof(ports)))
		return -1;
	key.sport = bpf_ntohs(ports[0]);
	key.dport = bpf_ntohs(ports[1]);
	key.family = family;
	e = bpf_map_lookup_elem(&rs_udp_flows, &key);
	if (e && e->backend == backend) {
		if (rs_gen_refresh_due(e->seen, now))
			e->seen = now;
		return 0;
	}
	v.seen = now;
	return bpf_map_update_elem(&rs_udp_flows, &key, &v, BPF_ANY) ? -1 : 0;
}

static __always_inline enum tc_outcome steer_cookie(
	struct __sk_buff *skb, const struct udp_flow *f, __u32 svc_id,
	const struct rs_service *svc, __u32 *backend)
{
	struct rs_cookie_key key __attribute__((aligned(8))) = {};
	struct quic_lb_sid sid;
	__u32 sid_len, cid_len, off, len, dcid_off = 0;
	struct rs_cookie *cookie;
	struct rs_backend *be;
	struct bpf_sock *sk;
	long err;

	/*
	 * The frame must hold the whole IP packet (the IP layer would drop
	 * it otherwise) and the UDP length must fit inside it. Longer
	 * frames are fine: Ethernet pads short packets.
	 */
	if (skb->len < f->l4_off + f->l4_len)
		return TC_MALFORMED;
	if (f->udp_len < sizeof(struct udphdr) || f->udp_len > f->l4_len)
		return TC_MALFORMED;
	if (cookie_config(svc, &sid_len, &cid_len))
		return TC_ERROR;

	off = f->l4_off + sizeof(struct udphdr);
	len = f->udp_len - sizeof(struct udphdr);
	switch (quic_find_dcid(skb, off, len, cid_len, &dcid_off)) {
	case QUIC_DCID_FOUND:
		break;
	case QUIC_DCID_NONE:
		return TC_NONE;
	case QUIC_DCID_OTHER_LEN:
		return TC_UNKNOWN;
	default:
		return TC_MALFORMED;
	}

	/* The fleet step decoded these very bytes: its answer stands. */
	if (!quic_sid_memo_get(skb, svc_id, dcid_off, &sid))
		goto decoded;
	switch (quic_lb_server_id(
		skb, dcid_off, svc_id,
		QUIC_LB_LENS(sid_len, cid_len, svc->quic_config_id), &sid)) {
	case QUIC_SID_FOUND:
		break;
	case QUIC_SID_NONE:
		return TC_NONE;
	case QUIC_SID_UNKNOWN:
		return TC_UNKNOWN;
	case QUIC_SID_MALFORMED:
		return TC_MALFORMED;
	default:
		return TC_ERROR;
	}
decoded:
	key.service = svc_id;
	__builtin_memcpy(&key.len, &sid, sizeof(sid));

	cookie = bpf_map_lookup_elem(&rs_cookies, &key);
	if (!cookie)
		return TC_UNKNOWN;
	*backend = cookie->backend;
	be = bpf_map_lookup_elem(&rs_backends, backend);
	/* A stale entry naming another service's backend is never followed. */
	if (!be || be->service != svc_id)
		return TC_UNKNOWN;
	/* DRAIN keeps its QUIC connections: they are sticky by nature. */
	if (be->state != RS_BACKEND_UP && be->state != RS_BACKEND_DRAIN)
		return TC_DOWN;
	/* No socket reference is held across this call: less stack. */
	if (svc->generations &&
	    !flow_backend(skb, *backend, f->family, f->l4_off))
		return TC_FLOW;
	sk = backend_socket(*backend, f->family);
	if (!sk)
		return rs_restart_holds(be, f->family == RS_AF_INET6,
					IPPROTO_UDP)
			       ? TC_HELD
			       : TC_DOWN;
	/*
	 * bpf_sk_assign at TC does not check the protocol (unlike the
	 * sk_lookup flavour): a TCP socket would be handed a UDP datagram.
	 * An IPv6 datagram needs an AF_INET6 socket; an IPv4 one may go to a
	 * dual-stack AF_INET6 socket.
	 */
	if (sk->protocol != IPPROTO_UDP ||
	    (f->family == RS_AF_INET6 && sk->family != RS_AF_INET6)) {
		bpf_sk_release(sk);
		return TC_ERROR;
	}
	/*
	 * flags must be 0 at TC. Since 6.5 a SO_REUSEPORT socket is fine: the
	 * UDP receive path then picks among its reuseport group.
	 */
	err = bpf_sk_assign(skb, sk, 0);
	bpf_sk_release(sk);
	return err ? TC_ASSIGN_FAILED : TC_HIT;
}

/*
 * cookie_hits counts the datagrams whose cookie chose the backend, as soon
 * as bpf_sk_assign is called; assigned only those the kernel accepted, and
 * a refusal counts in the service's errors. On a real ingress hook the two
 * agree; under BPF_PROG_TEST_RUN the kernel always refuses (-EOPNOTSUPP:
 * not at TC ingress), so the choice stays observable there. A
 * generations service's hit (TC_FLOW) is assigned by sk_lookup, which
 * counts it there.
 */
static __always_inline void count(__u32 svc_id, enum tc_outcome outcome,
				  __u32 backend)
{
	struct rs_service_stats *sst;
	struct rs_backend_stats *bst;

	if (outcome == TC_HIT || outcome == TC_ASSIGN_FAILED ||
	    outcome == TC_FLOW) {
		bst = bpf_map_lookup_elem(&rs_backend_stats, &backend);
		if (bst) {
			bst->cookie_hits++;
			if (outcome == TC_HIT)
				bst->assigned++;
		}
		if (outcome != TC_ASSIGN_FAILED)
			return;
	}
	sst = bpf_map_lookup_elem(&rs_service_stats, &svc_id);
	if (!sst)
		return;
	switch (outcome) {
	case TC_NONE:
		sst->cookie_none++;
		break;
	case TC_UNKNOWN:
		sst->cookie_unknown++;
		break;
	case TC_DOWN:
		sst->cookie_down++;
		break;
	case TC_MALFORMED:
		sst->cookie_malformed++;
		break;
	case TC_HELD:
		sst->held++;
		break;
	default:
		sst->errors++;
		break;
	}
}

/* The trace's reason for a cookie step's @outcome; 0: not traced. */
static __always_inline void note_cookie(struct __sk_buff *skb,
					enum tc_outcome outcome, __u32 svc_id,
					__u32 backend)
{
	struct rs_trace_tc_note *n = rs_trace_note_of(skb);

	switch (outcome) {
	case TC_HIT:
		n->flags = RS_TRACE_F_ASSIGNED;
		/* fall through */
	case TC_ASSIGN_FAILED:
	case TC_FLOW:
		n->cookie = RS_TRACE_COOKIE_HIT;
		n->backend = backend;
		break;
	case TC_DOWN:
		n->cookie = RS_TRACE_COOKIE_DOWN;
		n->backend = backend;
		break;
	case TC_HELD:
		n->cookie = RS_TRACE_HELD;
		n->backend = backend;
		break;
	case TC_UNKNOWN:
		n->cookie = RS_TRACE_COOKIE_UNKNOWN;
		break;
	default:
		/* Not ours to decide: sk_lookup decides, and traces. */
		return;
	}
	n->service = svc_id;
}

static __always_inline int steer(struct __sk_buff *skb)
{
	struct udp_flow f = {};
	struct rs_service *svc;
	struct rs_bind *bind;
	__u32 svc_id, backend = 0;
	enum tc_outcome outcome;
	int verdict;

	verdict = fleet_steer(skb);
	if (verdict != FLEET_CONTINUE)
		return verdict;
	if (parse_udp(skb, &f))
		return TC_ACT_UNSPEC;
	bind = rs_match_bind(IPPROTO_UDP, f.family, f.dport, f.daddr);
	if (!bind)
		return TC_ACT_UNSPEC;
	svc_id = bind->service;
	svc = bpf_map_lookup_elem(&rs_services, &svc_id);
	if (!svc || !svc->enabled || svc->protocol != IPPROTO_UDP ||
	    svc->cookie != RS_COOKIE_QUIC)
		return TC_ACT_UNSPEC;

	outcome = steer_cookie(skb, &f, svc_id, svc, &backend);
	count(svc_id, outcome, backend);
	note_cookie(skb, outcome, svc_id, backend);
	return outcome == TC_HELD ? TC_ACT_SHOT : TC_ACT_UNSPEC;
}

/*
 * Tracing off costs four stores a packet, and one array read for a packet
 * the fleet or cookie step noted. The note is read back from the context,
 * which the verifier does not track, so branching on it does not split
 * the program's paths (trace_note.bpf.h). A fleet packet unwrapped here
 * may then meet the cookie step: two events.
 */
_Static_assert(sizeof(struct rs_trace_tc_note) <= RS_QUIC_SID_MEMO_CB * 4,
	       "the note leaves skb->cb[RS_QUIC_SID_MEMO_CB] to the memo");

SEC("tc")
int steer_tc(struct __sk_buff *skb)
{
	struct rs_trace_tc_note *n = rs_trace_note_of(skb), done;
	int verdict;

	n->service = RS_NONE;
	n->backend = RS_NONE;
	n->member = RS_NONE;
	n->word = 0;
	skb->cb[RS_QUIC_SID_MEMO_CB] = 0;
	verdict = steer(skb);
	done.word = n->word;
	if ((done.reason || done.cookie) && rs_trace_on()) {
		rs_trace_tc(skb, 0);
		rs_trace_tc(skb, 1);
	}
	return verdict;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
