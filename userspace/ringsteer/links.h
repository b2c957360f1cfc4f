/* SPDX-License-Identifier: MIT */
/*
 * `ringsteer status`: every sk_lookup program attached to the network
 * namespace the data plane steers in, ours or not. Another one may
 * decide before ours (the kernel runs them in attachment order), and
 * another ringsteer's is a second data plane (issue 37).
 */
#ifndef RS_CLI_LINKS_H
#define RS_CLI_LINKS_H

#include <stdint.h>

#include <jansson.h>

/*
 * The sk_lookup links of netns @netns_ino (0: ours) as a JSON array of
 * {"link_id", "prog_id", "program", "pin", "ringsteer", "ours"}, "ours"
 * being whether it is @our_link; a JSON string saying why when they
 * cannot be listed (not root).
 */
json_t *links_json(uint64_t netns_ino, uint32_t our_link);
/*
 * The netns of the sk_lookup link that runs program @prog_id, 0 when
 * none is found.
 */
uint64_t links_netns_of_prog(uint32_t prog_id);
/* One line each, after a heading; a warning for another ringsteer's. */
void links_print(json_t *links);
/* The first ringsteer link of @links that is not ours, or NULL. */
json_t *links_foreign(json_t *links);

#endif /* RS_CLI_LINKS_H */
