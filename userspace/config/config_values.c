// SPDX-License-Identifier: MIT
/*
 * Values as the file writes them: numbers, durations with a unit, names,
 * QUIC server IDs, and how a refused one is reported. Digits are checked
 * by hand where the C library would quietly take leading blanks, a minus
 * sign or a wrapped value, because a typo must be an error, not another
 * number.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* vasprintf */
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"
#include "name.h"

void cfg_key_error(const struct cfg_key *k, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0) {
		k->report->nomem = true;
		return;
	}
	cfg_report(k->report, k->line, k->label, k->def->name, "%s", msg);
	free(msg);
}

void cfg_bad_value(const struct cfg_key *k, const char *why)
{
	cfg_key_error(k, "bad %s '%s': %s", k->def->noun, k->value, why);
}

static int digit_value(char c, unsigned int base)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * strtoull() accepts leading blanks and a minus sign (and wraps it), so the
 * digits are checked by hand. Every character is looked at before overflow
 * is reported so that garbage is called garbage.
 */
int cfg_parse_u64(const char *s, bool hex_ok, uint64_t *out)
{
	unsigned int base = 10;
	bool overflow = false;
	uint64_t v = 0;

	if (hex_ok && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (*s == '\0')
		return -EINVAL;
	for (; *s; s++) {
		int d = digit_value(*s, base);

		if (d < 0)
			return -EINVAL;
		if (v > (UINT64_MAX - (unsigned int)d) / base)
			overflow = true;
		v = v * base + (unsigned int)d;
	}
	if (overflow)
		return -ERANGE;
	*out = v;
	return 0;
}

bool cfg_parse_ranged(const struct cfg_key *k, const char *v, uint64_t min,
		      uint64_t max, uint64_t *out)
{
	char why[64];
	int err = cfg_parse_u64(v, false, out);

	if (err == -EINVAL) {
		cfg_bad_value(k, "not a decimal number");
		return false;
	}
	if (err || *out < min || *out > max) {
		snprintf(why, sizeof(why), "out of range %llu..%llu",
			 (unsigned long long)min, (unsigned long long)max);
		cfg_bad_value(k, why);
		return false;
	}
	return true;
}

bool cfg_valid_name(const char *s)
{
	return rs_name_ok(s);
}

#define MAX_DURATION_MS (60u * 60 * 1000)

/*
 * "500ms", "2s", "1m" or a bare number of seconds, into milliseconds.
 * Digits are clamped like parse_small_uint() so nothing wraps into range.
 */
static int parse_duration(const char *s, uint64_t *ms)
{
	size_t n = strspn(s, "0123456789"), i;
	uint64_t v = 0, unit;

	if (n == 0)
		return -EINVAL;
	if (s[n] == '\0' || strcmp(s + n, "s") == 0)
		unit = 1000;
	else if (strcmp(s + n, "ms") == 0)
		unit = 1;
	else if (strcmp(s + n, "m") == 0)
		unit = 60 * 1000;
	else
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (v <= MAX_DURATION_MS)
			v = v * 10 + (uint64_t)(s[i] - '0');
	*ms = v * unit;
	return 0;
}

/* @ms in the largest unit that is exact: "2m", "90s", "1500ms". */
const char *cfg_fmt_duration(char *buf, size_t len, uint32_t ms)
{
	if (ms && ms % 60000 == 0)
		snprintf(buf, len, "%um", ms / 60000);
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%us", ms / 1000);
	else
		snprintf(buf, len, "%ums", ms);
	return buf;
}

bool cfg_parse_ranged_duration(const struct cfg_key *k, const char *v,
			       uint32_t min_ms, uint32_t *out)
{
	char why[64], a[16], b[16];
	uint64_t ms;

	if (parse_duration(v, &ms)) {
		cfg_bad_value(k, "expected a number with ms, s or m (no unit: "
				 "seconds)");
		return false;
	}
	if (ms < min_ms || ms > MAX_DURATION_MS) {
		snprintf(why, sizeof(why), "out of range %s..%s",
			 min_ms ? cfg_fmt_duration(a, sizeof(a), min_ms) : "0",
			 cfg_fmt_duration(b, sizeof(b), MAX_DURATION_MS));
		cfg_bad_value(k, why);
		return false;
	}
	*out = (uint32_t)ms;
	return true;
}

/*
 * Decimal or 0x hex into @out, big-endian and right-aligned. -ERANGE when
 * it needs more than RS_QUIC_MAX_SERVER_ID bytes.
 */
int cfg_parse_server_id(const char *s, uint8_t out[RS_QUIC_MAX_SERVER_ID])
{
	uint8_t v[RS_QUIC_MAX_SERVER_ID] = {0};
	unsigned int base = 10;
	bool overflow = false;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (*s == '\0')
		return -EINVAL;
	for (; *s; s++) {
		int d = digit_value(*s, base);
		unsigned int carry;
		size_t i;

		if (d < 0)
			return -EINVAL;
		carry = (unsigned int)d;
		for (i = RS_QUIC_MAX_SERVER_ID; i-- > 0;) {
			carry += v[i] * base;
			v[i] = (uint8_t)carry;
			carry >>= 8;
		}
		if (carry)
			overflow = true;
	}
	if (overflow)
		return -ERANGE;
	memcpy(out, v, sizeof(v));
	return 0;
}
