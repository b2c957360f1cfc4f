// SPDX-License-Identifier: MIT
/*
 * The [fleet] keys (docs/fleet.md): the etcd endpoints, this host's name
 * and forwarding addresses (IPv4, optional IPv6), the lease TTL, the UDP port
 * of forwarded packets and the etcd key prefix. Whether the section is
 * complete, and the services' `fleet = on`, are config_checks.c's business.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "secret_file.h"
#include "config_keys.h"
#include "fleet_ident.h"
#include "fleet_keys.h"

static bool printable_token(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

/* Comma-separated http:// or https:// URLs; every bad one is reported. */
static void set_etcd(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	const char *s = v;

	f->conf.n_etcd = 0;
	while (*s) {
		size_t n = strcspn(s, ","), lead = strspn(s, " \t");
		const char *u = s + lead;
		size_t un = n - lead;

		while (un && (u[un - 1] == ' ' || u[un - 1] == '\t'))
			un--;
		if (un == 0) {
			cfg_key_error(k, "empty endpoint in the list");
		} else if ((strncmp(u, "http://", 7) &&
			    strncmp(u, "https://", 8)) ||
			   !printable_token(u, un) ||
			   un >= RS_FLEET_ENDPOINT_MAX) {
			cfg_key_error(k,
				      "bad etcd endpoint '%.*s': expected "
				      "http://HOST:PORT or https://HOST:PORT "
				      "(under %d characters)",
				      (int)un, u, RS_FLEET_ENDPOINT_MAX);
		} else if (f->conf.n_etcd == RS_FLEET_MAX_ENDPOINTS) {
			cfg_key_error(k, "too many etcd endpoints (max %d)",
				      RS_FLEET_MAX_ENDPOINTS);
			return;
		} else {
			memcpy(f->conf.etcd[f->conf.n_etcd], u, un);
			f->conf.etcd[f->conf.n_etcd++][un] = '\0';
		}
		s += n;
		if (*s == ',')
			s++;
	}
}

static void set_name(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;

	if (!cfg_valid_name(v)) {
		cfg_bad_value(k, NAME_RULE);
		return;
	}
	strcpy(f->conf.name, v);
}

static void set_address(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	struct in_addr a;
	struct in6_addr a6;

	if (inet_pton(AF_INET6, v, &a6) == 1) {
		cfg_bad_value(k, "address is this host's IPv4 forwarding "
				 "address; give its IPv6 one as address6 "
				 "(docs/fleet.md)");
		return;
	}
	if (inet_pton(AF_INET, v, &a) != 1) {
		cfg_bad_value(k, "expected this host's IPv4 address");
		return;
	}
	if (a.s_addr == 0 || a.s_addr == 0xffffffffu) {
		cfg_bad_value(k, "not a host address");
		return;
	}
	f->conf.addr = a.s_addr;
}

/* A unicast global or unique-local IPv6 address: others send to it. */
static void set_address6(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	struct in6_addr a6;
	struct in_addr a;

	if (inet_pton(AF_INET, v, &a) == 1) {
		cfg_bad_value(k, "address6 is this host's IPv6 forwarding "
				 "address; give its IPv4 one as address");
		return;
	}
	if (inet_pton(AF_INET6, v, &a6) != 1) {
		cfg_bad_value(k, "expected this host's IPv6 address");
		return;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(&a6) || IN6_IS_ADDR_LOOPBACK(&a6) ||
	    IN6_IS_ADDR_MULTICAST(&a6) || IN6_IS_ADDR_LINKLOCAL(&a6) ||
	    IN6_IS_ADDR_V4MAPPED(&a6)) {
		cfg_bad_value(k, "not a routable host address (unspecified, "
				 "loopback, multicast, link-local or "
				 "IPv4-mapped)");
		return;
	}
	memcpy(f->conf.addr6, &a6, sizeof(f->conf.addr6));
	f->conf.has_addr6 = true;
}

/* Under 2 s a keepalive every third of it would race the expiry. */
static void set_lease_ttl(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	uint32_t ms;

	if (!cfg_parse_ranged_duration(k, v, 2000, &ms))
		return;
	if (ms % 1000) {
		cfg_bad_value(k, "etcd leases are whole seconds");
		return;
	}
	f->conf.lease_ttl = ms / 1000;
}

static void set_port(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	uint64_t n;

	if (cfg_parse_ranged(k, v, 1, 65535, &n))
		f->conf.port = (uint16_t)n;
}

static void set_prefix(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	size_t n = strlen(v);

	if (v[0] != '/' || n < 2 || v[n - 1] == '/' || !printable_token(v, n) ||
	    n >= RS_FLEET_PREFIX_MAX) {
		cfg_bad_value(k, "expected /NAME (no trailing /, no blanks, "
				 "under 128 characters)");
		return;
	}
	strcpy(f->conf.prefix, v);
}

/*
 * A file ringsteerd reads (@secret: a key or password, which group and
 * others must not be able to read or write).
 */
static void set_file(const struct cfg_key *k, char *dst, size_t len,
		     const char *v, bool secret)
{
	struct stat st;

	if (v[0] != '/' || strlen(v) >= len) {
		cfg_bad_value(k, "expected an absolute path");
		return;
	}
	if (stat(v, &st)) {
		cfg_key_error(k, "%s: %s", v, strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		cfg_key_error(k, "%s: not a regular file", v);
		return;
	}
	if (secret && (unsigned long long)st.st_size > RS_SECRET_FILE_MAX) {
		cfg_key_error(k,
			      "%s: %lld bytes, more than a key or password "
			      "file holds (%d)",
			      v, (long long)st.st_size, RS_SECRET_FILE_MAX);
		return;
	}
	if (secret && (st.st_mode & (S_IRWXG | S_IRWXO))) {
		cfg_key_error(k,
			      "%s can be read or written by group or others "
			      "(mode %04o): a secret is refused unless only "
			      "its owner can (chmod 600 %s)",
			      v, (unsigned)(st.st_mode & 07777), v);
		return;
	}
	strcpy(dst, v);
}

static void set_etcd_ca(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;

	set_file(k, f->conf.etcd_ca, sizeof(f->conf.etcd_ca), v, false);
}

static void set_etcd_cert(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;

	set_file(k, f->conf.etcd_cert, sizeof(f->conf.etcd_cert), v, false);
}

static void set_etcd_key(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;

	set_file(k, f->conf.etcd_key, sizeof(f->conf.etcd_key), v, true);
}

static void set_etcd_password_file(const struct cfg_key *k, void *obj,
				   const char *v)
{
	struct fleet_entry *f = obj;

	set_file(k, f->conf.etcd_password_file,
		 sizeof(f->conf.etcd_password_file), v, true);
}

/* Owner-only, and a list of keys that reads (checked, then forgotten). */
static void set_key_file(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	struct rs_fleet_keys keys;
	char why[PATH_MAX + 128];

	set_file(k, f->conf.key_file, sizeof(f->conf.key_file), v, true);
	if (!f->conf.key_file[0])
		return;
	if (rs_fleet_keys_read(v, &keys, why, sizeof(why))) {
		cfg_key_error(k, "%s", why);
		f->conf.key_file[0] = '\0';
	}
	OPENSSL_cleanse(&keys, sizeof(keys));
}

/* Owner-only, and an Ed25519 private key (checked, then forgotten). */
static void set_identity_key(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	uint8_t priv[RS_FLEET_ID_KEY_LEN], pub[RS_FLEET_ID_KEY_LEN];
	char why[PATH_MAX + 128];

	set_file(k, f->conf.identity_key, sizeof(f->conf.identity_key), v,
		 true);
	if (!f->conf.identity_key[0])
		return;
	if (rs_fleet_identity_read(v, priv, pub, why, sizeof(why))) {
		cfg_key_error(k, "%s", why);
		f->conf.identity_key[0] = '\0';
	}
	OPENSSL_cleanse(priv, sizeof(priv));
}

/* Public keys: anyone may read them, only their owner write them. */
static void set_member_keys(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	struct rs_fleet_pubkeys keys;
	char why[PATH_MAX + 160];

	set_file(k, f->conf.member_keys, sizeof(f->conf.member_keys), v, false);
	if (!f->conf.member_keys[0])
		return;
	if (rs_fleet_pubkeys_read(v, &keys, why, sizeof(why))) {
		cfg_key_error(k, "%s", why);
		f->conf.member_keys[0] = '\0';
	}
	rs_fleet_pubkeys_free(&keys);
}

static void set_etcd_user(const struct cfg_key *k, void *obj, const char *v)
{
	struct fleet_entry *f = obj;
	size_t n = strlen(v);

	if (!n || n >= sizeof(f->conf.etcd_user) || !printable_token(v, n)) {
		cfg_bad_value(k, "expected an etcd user name (no blanks)");
		return;
	}
	strcpy(f->conf.etcd_user, v);
}

const struct key_def cfg_fleet_keys[] = {
	[FL_ETCD] = {"etcd", "etcd endpoints", set_etcd, false},
	[FL_NAME] = {"name", "name", set_name, false},
	[FL_ADDRESS] = {"address", "address", set_address, false},
	[FL_ADDRESS6] = {"address6", "address6", set_address6, false},
	[FL_LEASE_TTL] = {"lease_ttl", "lease_ttl", set_lease_ttl, false},
	[FL_PORT] = {"port", "port", set_port, false},
	[FL_PREFIX] = {"prefix", "prefix", set_prefix, false},
	[FL_ETCD_CA] = {"etcd_ca", "path", set_etcd_ca, false},
	[FL_ETCD_CERT] = {"etcd_cert", "path", set_etcd_cert, false},
	[FL_ETCD_KEY] = {"etcd_key", "path", set_etcd_key, false},
	[FL_ETCD_USER] = {"etcd_user", "etcd user", set_etcd_user, false},
	[FL_ETCD_PASSWORD_FILE] = {"etcd_password_file", "path",
				   set_etcd_password_file, false},
	[FL_KEY_FILE] = {"key_file", "path", set_key_file, false},
	[FL_IDENTITY_KEY] = {"identity_key", "path", set_identity_key, false},
	[FL_MEMBER_KEYS] = {"member_keys", "path", set_member_keys, false},
	{NULL, NULL, NULL, false},
};

_Static_assert(sizeof(cfg_fleet_keys) / sizeof(cfg_fleet_keys[0]) <=
		       MAX_KEYS + 1,
	       "key_line[] too small");

/* Before [fleet]'s keys; enabled only by the section itself. */
const struct fleet_entry cfg_fleet_defaults = {
	.conf.lease_ttl = RS_DEFAULT_FLEET_LEASE_TTL,
	.conf.port = RS_FLEET_DEFAULT_PORT,
	.conf.prefix = RS_DEFAULT_FLEET_PREFIX,
};
