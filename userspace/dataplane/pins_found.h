/* SPDX-License-Identifier: MIT */
/*
 * What a start over a pin directory will meet, found before anything is
 * loaded or pinned: nothing, this build's data plane (adopted as it is),
 * or pins of another ABI or layout, which libbpf would only refuse with
 * "couldn't reuse pinned map ... parameter mismatch". The daemon's start
 * (dp_open), `ringsteerd --check` and an upgrade path all ask this one
 * function, so they cannot disagree about what is there.
 */
#ifndef RS_PINS_FOUND_H
#define RS_PINS_FOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sk_lookup_links.h"

enum dp_pins_kind {
	DP_PINS_NONE = 0,   /* nothing pinned: a start creates everything */
	DP_PINS_SAME = 1,   /* this build's ABI and layout: adopted */
	DP_PINS_OTHER = 2,  /* another ABI or another layout: see below */
	DP_PINS_UNREADABLE, /* pinned, but not ours to open (not root) */
};

struct dp_pins_found {
	enum dp_pins_kind kind;
	/* rs_meta's ABI; 0 when there is no rs_meta or it is unstamped. */
	uint32_t abi;
	/*
	 * DP_PINS_OTHER: the first pinned map whose layout is not this
	 * build's ("" when only the ABI stamp differs), and how it differs
	 * ("value size 8, this build's 108").
	 */
	char map[32];
	char differs[96];
	int err; /* DP_PINS_UNREADABLE: the errno that opening met */
	/* The sk_lookup link pinned there, which steers while it is. */
	bool link;
	uint32_t link_id;
	uint32_t prog_id;
	uint64_t netns_ino;
};

/*
 * Fill @out from the pins under @pin_dir: reads rs_meta's ABI and
 * compares each pinned map's type, key and value size, entries and flags
 * with this build's, as libbpf would on loading. Returns out->kind, or a
 * negative errno when this build's own object cannot be read.
 */
int dp_pins_probe(const char *pin_dir, struct dp_pins_found *out);

/*
 * What a start over @pin_dir does with what is pinned there, as the
 * daemon's start decides it (dp_open, upgrade.c), for `ringsteerd
 * --check` and `ringsteer status` with the daemon stopped: the maps
 * sized as the configuration will size them (dp_size_for() first), @out
 * filled by dp_pins_probe(). Pins of another layout are upgraded from
 * when their words can be read by field name (RESIZE: same ABI, a size
 * the configuration changed), refused otherwise.
 */
enum dp_start_kind {
	DP_START_CREATE,    /* nothing pinned */
	DP_START_ADOPT,	    /* this build's ABI and layout */
	DP_START_RESIZE,    /* this ABI, sized for another configuration */
	DP_START_UPGRADE,   /* another ABI: built beside, no gap */
	DP_START_REFUSE,    /* another layout, not readable by field name */
	DP_START_UNCHECKED, /* pins not readable here, or no own object */
};
enum dp_start_kind dp_start_kind(const char *pin_dir,
				 struct dp_pins_found *out);

/*
 * For DP_START_RESIZE and DP_START_UPGRADE: the one sentence that says
 * what the pins under @pin_dir are and how a start upgrades from them,
 * for `ringsteerd --check` and `ringsteer status` alike.
 */
void dp_start_beside(enum dp_start_kind kind, const struct dp_pins_found *f,
		     const char *pin_dir, char *buf, size_t len);

/*
 * For DP_PINS_OTHER: the one sentence that says what the pins are and
 * that a start refuses them, naming the command that removes them
 * (`ringsteerd --detach`, with -c @config when not NULL).
 */
void dp_pins_refusal(const struct dp_pins_found *f, const char *pin_dir,
		     const char *config, char *buf, size_t len);

/*
 * The configuration file to name in the command of a refusal that
 * dp_open() logs (it knows only the pin directory); none: plain
 * `ringsteerd --detach`. The daemon sets it once, before starting.
 */
void dp_pins_config(const char *config);
const char *dp_pins_config_path(void);

/*
 * One data plane per network namespace: the sk_lookup links of ringsteer
 * (program steer_lookup) attached to this process's netns other than the
 * one pinned under @pin_dir, at most @max into @out, *@n of them. Such a
 * link is another data plane (a changed `bpffs`, a test daemon left
 * attached) that would go on deciding beside ours. 0 or a negative errno
 * (-EPERM: listing links needs CAP_SYS_ADMIN).
 */
int dp_foreign_links(const char *pin_dir, struct rs_sk_lookup_link *out,
		     size_t max, size_t *n);
/*
 * The data plane under @dir is being retired by an upgrade (upgrade.c):
 * it decides until ours is attached, and is not another one. NULL: none.
 */
void dp_pins_retiring(const char *dir);

/* The sentence that refuses a start beside @l and says how to remove it. */
void dp_foreign_refusal(const struct rs_sk_lookup_link *l, char *buf,
			size_t len);

#endif /* RS_PINS_FOUND_H */
