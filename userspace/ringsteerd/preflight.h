/* SPDX-License-Identifier: MIT */
/*
 * `ringsteerd --check` beyond the file: what a start over the pins and in
 * this network namespace will do (adopt, create, or refuse and why), and
 * the limits the file is held to. Asks the same functions the start asks
 * (pins_found.h), so the two cannot disagree (issue 37: --check passed
 * over pins a start then refused).
 */
#ifndef RS_PREFLIGHT_H
#define RS_PREFLIGHT_H

#include "config.h"

/*
 * Prints each finding on stdout (refusals on stderr, as errors). 0 when a
 * start would go ahead, -EPROTO (pins of another ABI or layout) or
 * -EEXIST (another data plane attached here) when it would refuse.
 */
int preflight_report(const struct rs_config *cfg, const char *config_path);

/*
 * The kernel memory a start pins, by service and for the data plane's own
 * maps at the sizes @cfg asks for (dp_size_for()), on stdout.
 */
void preflight_memory(const struct rs_config *cfg);

#endif /* RS_PREFLIGHT_H */
