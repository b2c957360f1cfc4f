/* SPDX-License-Identifier: MIT */
/*
 * The sk_lookup programs attached to a network namespace, found through
 * the kernel's list of BPF links rather than through pins: a data plane
 * pinned under another bpffs (a changed `bpffs`, a test daemon left
 * behind) steers just the same, and its pins are not where we look
 * (issue 37: two data planes deciding in one netns, silently). Needs
 * CAP_SYS_ADMIN, as every BPF id walk does.
 */
#ifndef RS_SK_LOOKUP_LINKS_H
#define RS_SK_LOOKUP_LINKS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ringsteer's link pin name (RS_LINK_PIN_NAME of dataplane.h). */
#define RS_SK_LOOKUP_PIN "steer_lookup_link"

struct rs_sk_lookup_link {
	uint32_t link_id;
	uint32_t prog_id;
	uint64_t netns_ino;
	char prog_name[16]; /* the kernel's (first 15 characters) */
	bool ringsteer;	    /* prog_name is steer_lookup */
	/* A pin of it named RS_SK_LOOKUP_PIN found on /sys/fs/bpf, or "". */
	char pin[PATH_MAX];
};

/* The inode of this process's network namespace, 0 if unknown. */
uint64_t rs_netns_ino_self(void);

/*
 * The sk_lookup links attached to netns @netns_ino (0: ours), in link id
 * order (the order of attachment, which is the order the kernel runs
 * them in), at most @max into @out; *@n the number found (which may
 * exceed @max). Each with its pin when one is found. 0 or a negative
 * errno (-EPERM without CAP_SYS_ADMIN).
 */
int rs_sk_lookup_links(uint64_t netns_ino, struct rs_sk_lookup_link *out,
		       size_t max, size_t *n);

/* "link 12 (program steer_lookup id 40, pinned at /sys/fs/bpf/x/...)" */
void rs_sk_lookup_link_format(const struct rs_sk_lookup_link *l, char *buf,
			      size_t len);

#endif /* RS_SK_LOOKUP_LINKS_H */
