/* SPDX-License-Identifier: MIT */
/*
 * Reading a packet's headers in place at TC (skb->data .. skb->data_end)
 * rather than copying them out with bpf_skb_load_bytes(): each copy is a
 * helper call, about 10 ns on hosts whose returns pass through a
 * mitigation thunk (issues 21 and 39).
 */
#ifndef RS_BPF_PKT_H
#define RS_BPF_PKT_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/*
 * The first @len bytes of the packet in its linear part, where they can be
 * read in place: headers nearly always are; a packet whose driver left
 * them in page fragments is pulled, once. A packet shorter than @len
 * fails, as the copy would have. A pull moves skb->data: callers hold no
 * packet pointer across this call.
 */
static __always_inline int rs_pkt_linear(struct __sk_buff *skb, __u32 len)
{
	if ((long)skb->data + len <= (long)skb->data_end)
		return 0;
	if (len > skb->len)
		return -1;
	return bpf_skb_pull_data(skb, len) ? -1 : 0;
}

/*
 * The @len bytes at @off of the packet, in place, or NULL when the packet
 * is shorter (or a pull failed). @off must be bounded for the verifier.
 * skb->data and data_end are read afresh (volatile): a value the compiler
 * kept from an earlier read can reach here through a 32-bit move, which
 * the verifier no longer takes for a packet pointer.
 */
static __always_inline void *rs_pkt_at(struct __sk_buff *skb, __u32 off,
				       __u32 len)
{
	void *data, *end;

	if (rs_pkt_linear(skb, off + len))
		return NULL;
	data = (void *)(long)*(volatile __u32 *)&skb->data;
	end = (void *)(long)*(volatile __u32 *)&skb->data_end;
	if (data + off + len > end)
		return NULL;
	return data + off;
}

#endif /* RS_BPF_PKT_H */
