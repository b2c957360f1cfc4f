/* SPDX-License-Identifier: MIT */
/*
 * Bytes as hex text and back: QUIC connection and server IDs as operators
 * type them (`ringsteer cid decode`) and as hosts publish them in etcd.
 */
#ifndef RS_HEX_H
#define RS_HEX_H

#include <stddef.h>
#include <stdint.h>

/* @n bytes as hex, @sep between them, cut to what fits in @len. */
void rs_hex_bytes(char *buf, size_t len, const uint8_t *b, size_t n,
		  const char *sep);

/*
 * Hex with an optional 0x and separators (blank : - .) into @out (at most
 * @max bytes, the count in *@len). 0, -EINVAL (not hex, an odd digit
 * count) or -E2BIG.
 */
int rs_hex_parse(const char *s, uint8_t *out, size_t max, size_t *len);

#endif /* RS_HEX_H */
