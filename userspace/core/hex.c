// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hex.h"

void rs_hex_bytes(char *buf, size_t len, const uint8_t *b, size_t n,
		  const char *sep)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < n && off + 3 + strlen(sep) <= len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%02x",
					k ? sep : "", b[k]);
}

int rs_hex_parse(const char *s, uint8_t *out, size_t max, size_t *len)
{
	int hi = -1;

	*len = 0;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++) {
		int v;

		if (strchr(" :-.", *s))
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			return -EINVAL;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (*len == max)
			return -E2BIG;
		out[(*len)++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	return hi < 0 ? 0 : -EINVAL;
}
