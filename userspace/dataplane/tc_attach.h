/* SPDX-License-Identifier: MIT */
/*
 * The TC side of the data plane: steer_tc as a cls_bpf filter in
 * direct-action mode on the clsact ingress hook of an interface, at a fixed
 * handle and priority so that ringsteer finds its own filter again (after
 * a restart, for --detach) and never touches anybody else's.
 *
 * "Ours" means: the filter at RS_TC_HANDLE / RS_TC_PRIORITY on ingress,
 * running a program called RS_TC_PROG_NAME, and, when the caller knows the
 * id of its rs_sockets map, a program that uses that very map (so two
 * ringsteerd instances with different bpffs roots in one namespace do not
 * take each other's filters).
 */
#ifndef RS_TC_ATTACH_H
#define RS_TC_ATTACH_H

#include <stdbool.h>
#include <stdint.h>

#define RS_TC_HANDLE 0x5253 /* "RS" */
/*
 * First in the chain: steer_tc only ever returns TC_ACT_UNSPEC ("carry
 * on"), so every filter after it still sees every packet, and none before
 * it can end the chain ahead of it.
 */
#define RS_TC_PRIORITY	1
#define RS_TC_PROG_NAME "steer_tc"

/* What sits at our handle and priority on an interface's ingress. */
struct rs_tc_filter {
	uint32_t prog_id;
	char prog_name[16];
	bool ours; /* name matches and (if asked) it uses our map */
};

/*
 * Look at the filter at our handle/priority on @ifindex's ingress.
 * @map_id (0 = do not check) is the id of the caller's rs_sockets map.
 * Returns 0 (filled @out), -ENOENT (no such filter or no clsact qdisc),
 * -ENODEV, or another negative errno.
 */
int tc_query(int ifindex, uint32_t map_id, struct rs_tc_filter *out);

/*
 * Attach @prog_fd at our handle/priority on @ifindex's ingress, creating
 * the clsact qdisc if there is none. A filter of ours there is replaced in
 * place (no moment without a program; *@replaced = true); a foreign one
 * makes it fail with -EEXIST and stays. Other filters are never touched.
 * A filter whose program uses the map @also_ours (0: none) is ours too;
 * when that one is replaced, *@kept_fd holds its program (else -1), so
 * that it can be put back.
 */
int tc_attach(int ifindex, int prog_fd, uint32_t map_id, uint32_t also_ours,
	      bool *replaced, int *kept_fd);
/*
 * Put @prog_fd back as the program of our filter on @ifindex, whatever
 * program it has now (an upgrade that failed hands TC back).
 */
int tc_put_back(int ifindex, int prog_fd);

/*
 * Remove our filter from @ifindex's ingress. Returns 0, -ENOENT (none
 * there), -EEXIST (the filter there is not ours: left alone), -ENODEV.
 * The clsact qdisc stays: other filters may live in it.
 */
int tc_detach(int ifindex, uint32_t map_id);

/* strerror() for the errors above, -EEXIST in words. */
const char *tc_strerror(int err);

#endif /* RS_TC_ATTACH_H */
