// SPDX-License-Identifier: MIT
/*
 * `ringsteer cid`: QUIC connection IDs of a cookie service, made for a
 * backend as its QUIC stack could issue them (for tests, and to check a
 * server's own CIDs against), or decoded, to say which backend one names
 * and whether the data plane steers it (docs/quic.md).
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static void cid_new_table(json_t *r)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(r, "cids"), i, v)
		printf("%s\n", json_string_value(v));
}

/* "  cid        0a 1b 2c": @hex as bytes. */
static void print_spaced_hex(const char *label, const char *hex)
{
	printf("  %-11s", label);
	for (size_t k = 0; hex[k] && hex[k + 1]; k += 2)
		printf("%s%c%c", k ? " " : "", hex[k], hex[k + 1]);
	putchar('\n');
}

/* Whether steer_tc steers the CID for one family, and its counter. */
static void cid_family_line(const char *family, json_t *v)
{
	printf("  %-11s%s%s (%s)\n", family,
	       json_is_true(json_object_get(v, "steered")) ? ""
							   : "not steered: ",
	       jstr(v, "why"), jstr(v, "counter"));
}

static void cid_decode_table(json_t *r)
{
	printf("service %s, connection ID of %lld bytes (%s%s)\n",
	       jstr(r, "service"), jint(r, "length"), jstr(r, "reason"),
	       json_is_true(json_object_get(r, "encrypted")) ? ", encrypted"
							     : "");
	print_spaced_hex("cid", jstr(r, "cid"));
	printf("  %-11s%lld (service: %lld), low bits 0x%02llx\n", "config id",
	       jint(r, "config_id"), jint(r, "config_expected"),
	       jint(r, "low_bits"));
	if (json_is_string(json_object_get(r, "server_id"))) {
		printf("  %-11s%s", "server id", jstr(r, "server_id"));
		if (json_is_string(json_object_get(r, "backend")))
			printf(" -> backend %s (%s)", jstr(r, "backend"),
			       jstr(r, "backend_state"));
		putchar('\n');
	}
	if (*jstr(r, "nonce") != '-')
		print_spaced_hex("nonce", jstr(r, "nonce"));
	cid_family_line("IPv4", json_object_get(r, "ipv4"));
	cid_family_line("IPv6", json_object_get(r, "ipv6"));
	if (json_is_string(json_object_get(r, "fleet")))
		printf("  %-11s%s: %s\n", "owner host",
		       json_is_string(json_object_get(r, "owner"))
			       ? jstr(r, "owner")
			       : "none",
		       jstr(r, "fleet"));
	if (jint(r, "tc_interfaces") == 0)
		printf("  (steer_tc is attached to no interface now: nothing "
		       "is steered by cookie)\n");
}

/*
 * "--config N": the config rotation a new CID is minted under. Takes it
 * out of @argv; 1 if it was there, 0 if not, -1 if N is not 0..6.
 */
static int take_config(int *argc, char **argv, long *config)
{
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--config"))
			continue;
		if (i + 1 >= *argc || parse_uint(argv[i + 1], 6, config))
			return -1;
		for (int j = i; j + 2 <= *argc; j++)
			argv[j] = argv[j + 2];
		*argc -= 2;
		return 1;
	}
	return 0;
}

int cmd_cid(int argc, char **argv)
{
	json_t *req;
	long count = 1, config = -1;
	int has_config = take_config(&argc, argv, &config);

	if (has_config < 0)
		return fail("--config takes a config id, 0..6");
	if (argc == 4 && !strcmp(argv[1], "decode") && !has_config)
		return print_reply(
			call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "cid",
				       "action", "decode", "service", argv[2],
				       "cid", argv[3])),
			cid_decode_table);
	if (argc != 3 && argc != 4)
		return fail("usage: ringsteer cid [--config ID] SERVICE "
			    "BACKEND [COUNT] | cid decode SERVICE HEX");
	if (argc == 4 && (parse_uint(argv[3], 1000, &count) || count < 1))
		return fail("COUNT must be 1..1000");
	req = json_pack("{s:s, s:s, s:s, s:s, s:i}", "cmd", "cid", "action",
			"new", "service", argv[1], "backend", argv[2], "count",
			(int)count);
	if (req && has_config)
		json_object_set_new(req, "config", json_integer(config));
	return print_reply(call(req), cid_new_table);
}
