/* SPDX-License-Identifier: MIT */
/*
 * What steer_tc notes for its trace events: the fleet step (fleet.bpf.h)
 * and the cookie step write it with plain stores, trace running or not,
 * and trace_tc.bpf.h turns it into events only when a trace runs.
 *
 * The note lives in the packet's skb->cb[] (the 20 bytes a TC program may
 * use as it likes; steer_tc clears them first), not on the stack: the
 * verifier tracks stack contents, so paths that noted different things
 * would stay apart to the program's end and be checked once each (that
 * took steer_tc from 68,000 to 92,000 verified instructions). What the
 * context holds, it does not track. And the stack is nearly full.
 */
#ifndef RS_TRACE_NOTE_BPF_H
#define RS_TRACE_NOTE_BPF_H

#include <linux/bpf.h>
#include <linux/types.h>

/*
 * What steer_tc did with one packet; reason and cookie 0: nothing. Both
 * when a packet a member forwarded is unwrapped here and then meets the
 * cookie step: the same packet and service, so one note of 16 bytes
 * carries the two events.
 */
struct rs_trace_tc_note {
	__u32 service; /* RS_NONE: the packet's service is not known */
	__u32 backend; /* the cookie step's backend, RS_NONE none */
	__u32 member;  /* fleet member sent to, RS_NONE unknown */
	union {
		__u32 word; /* the four below, read as one (and cleared) */
		struct {
			__u8 reason; /* fleet step's enum rs_trace_reason */
			__u8 cookie; /* cookie step's enum rs_trace_reason */
			__u8 flags;  /* cookie step's RS_TRACE_F_* */
			/* The packet traced sits behind fleet outer headers. */
			__u8 inner;
		};
	};
};

_Static_assert(sizeof(struct rs_trace_tc_note) <=
		       sizeof(((struct __sk_buff *)0)->cb),
	       "the note fits in skb->cb");

static __always_inline struct rs_trace_tc_note *rs_trace_note_of(
	struct __sk_buff *skb)
{
	return (struct rs_trace_tc_note *)&skb->cb[0];
}

/* The service of packet @skb, once the fleet step knows it. */
#define RS_TRACE_SERVICE(skb, svc) (rs_trace_note_of(skb)->service = (svc))

/*
 * Fleet step of packet @skb: reason @r, member @m (RS_NONE: not known),
 * the packet behind outer headers (@in).
 */
#define RS_TRACE_NOTE(skb, r, m, in)                                           \
	do {                                                                   \
		struct rs_trace_tc_note *n_ = rs_trace_note_of(skb);           \
		n_->reason = (r);                                              \
		n_->member = (m);                                              \
		n_->inner = (in);                                              \
	} while (0)

#endif /* RS_TRACE_NOTE_BPF_H */
