/* SPDX-License-Identifier: MIT */
/*
 * `ringsteer status` when ringsteerd cannot be reached: what the pinned
 * data plane, which keeps steering without the daemon, says by itself.
 */
#ifndef RS_CLI_PINS_H
#define RS_CLI_PINS_H

#include <jansson.h>

/*
 * Reads the pins under @bpffs into a JSON object: "bpffs", "pins" (names),
 * "link" (the sk_lookup link's program id and netns, or null), "abi",
 * "services" (names), "backends" (up, draining, down), "sockets",
 * "sk_lookup" (links.h: every sk_lookup program of the link's netns) and
 * "start": what a start of the daemon of @config does over these pins,
 * {"action": "adopt"} or {"action": "refuse", "why"}. Returns
 * NULL with errno set when nothing is pinned there (ENOENT) or it cannot
 * be read (EACCES, EPERM).
 */
json_t *pins_read(const char *bpffs, const char *config, bool fleet);
/* The object above as an operator reads it, on stdout. */
void pins_print(const json_t *p);

#endif /* RS_CLI_PINS_H */
