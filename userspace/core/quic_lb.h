/* SPDX-License-Identifier: MIT */
/*
 * QUIC-LB encrypted connection IDs in userspace: the key file, and the
 * draft's single-pass and four-pass modes (include/ringsteer/quic_lb.h,
 * shared with steer_tc) over libcrypto's AES-128-ECB. The daemon uses it
 * for `ringsteer cid` and `ringsteer cid decode`, the tests to predict
 * what the kernel does.
 */
#ifndef RS_QUIC_LB_USER_H
#define RS_QUIC_LB_USER_H

#include <stddef.h>
#include <stdint.h>

#include <ringsteer/quic_lb.h>

/*
 * Read @path: one key of 32 hex digits (`openssl rand -hex 16`), '#'
 * comments and blank lines allowed. The file must be a regular file only
 * its owner can read or write (rs_secret_file_read()). 0 or a negative
 * errno with "PATH:LINE: problem" (or "PATH: problem") in @why; the key
 * is never part of a message.
 */
int quic_lb_key_read(const char *path, uint8_t key[RS_QUIC_LB_KEY_LEN],
		     char *why, size_t why_len);

/*
 * Encrypt (@decrypt 0) or decrypt in place the plaintext block of the
 * @len byte CID @cid (octets 1..len-1; octet 0 is never encrypted) with
 * @key: single pass when that block is 16 bytes, four passes otherwise.
 * 0; -EINVAL when the block is not 5..19 bytes; -ENOMEM when libcrypto
 * fails.
 */
int quic_lb_cid_crypt(const uint8_t key[RS_QUIC_LB_KEY_LEN], uint8_t *cid,
		      size_t len, int decrypt);

#endif /* RS_QUIC_LB_USER_H */
