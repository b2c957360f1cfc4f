/* SPDX-License-Identifier: MIT */
/*
 * upgrade.c: a start over the pins of another ABI builds this build's data
 * plane beside the earlier one, carries the operator's state over, attaches
 * and only then retires the earlier one.
 */
#ifndef RS_UPGRADE_H
#define RS_UPGRADE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringsteer/abi.h>

struct daemon;

struct upgrade {
	char aside[PATH_MAX]; /* the earlier data plane; "" = none */
	uint32_t from_abi;
	bool moved;		 /* renamed aside by this start (not resumed) */
	size_t carried;		 /* backends whose words were read */
	struct rs_service *svcs; /* RS_MAX_SERVICES, by id */
	struct rs_backend *bes;	 /* RS_MAX_BACKENDS, by id */
};

/*
 * Before anything is opened under the pin directory, with its lock held:
 * pins of another ABI are read and moved aside (still deciding), and the
 * lock is taken on a fresh directory. 0 also when there is nothing to do.
 */
int upgrade_prepare(struct daemon *d, struct upgrade *u);
/* Right after the fresh maps are made: the earlier words written in. */
int upgrade_seed(struct daemon *d, const struct upgrade *u);
/* Ours is attached: detach and remove the earlier data plane. */
void upgrade_retire(struct daemon *d, struct upgrade *u);
/* The start failed: ours removed, the earlier one put back by name. */
void upgrade_abort(struct daemon *d, struct upgrade *u);

#endif /* RS_UPGRADE_H */
