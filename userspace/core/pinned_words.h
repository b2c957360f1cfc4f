/* SPDX-License-Identifier: MIT */
/*
 * Whether an upgrade can read the operator's state out of another
 * build's data plane: the words of its pinned rs_services and rs_backends
 * carry BTF, so they are read by field name (dataplane_migrate.c). One
 * check for the daemon's upgrade and for the CLI's pre-flight, which
 * must agree on what a start will do.
 */
#ifndef RS_PINNED_WORDS_H
#define RS_PINNED_WORDS_H

/*
 * 0 when both maps are pinned under @root with BTF for their values;
 * -EPROTO when one has none; else the negative errno of reaching it.
 */
int rs_pinned_words_readable(const char *root);

#endif /* RS_PINNED_WORDS_H */
