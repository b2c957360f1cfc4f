/* SPDX-License-Identifier: MIT */
/*
 * The release and the commit a binary was built from. Both are generated
 * (scripts/version.sh, from debian/changelog and git describe) so that two
 * builds can be told apart; the ABI between the BPF programs and
 * userspace is a number of its own (RS_ABI_VERSION in abi.h), which moves
 * only when the maps' layout does.
 */
#ifndef RS_VERSION_H
#define RS_VERSION_H

#include <ringsteer/abi.h>
#include <ringsteer/version_gen.h>

#define RS_STR_(x) #x
#define RS_STR(x)  RS_STR_(x)
/* --version's line, e.g. "ringsteerd 0.2.0 (commit v0.2.0-3-g0123, abi 8)". */
#define RS_VERSION_LINE(name)                                                  \
	name " " RS_VERSION " (commit " RS_COMMIT                              \
	     ", abi " RS_STR(RS_ABI_VERSION) ")"

#endif /* RS_VERSION_H */
