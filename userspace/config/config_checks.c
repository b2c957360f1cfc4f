// SPDX-License-Identifier: MIT
/*
 * What no single key can know: keys that only make sense together,
 * defaults that depend on another key, backends naming services defined
 * later, and what would collide in the data plane (two listens that are
 * one rs_binds key, two backends that are one socket, a server ID used
 * twice, a listen that would steer the backends' own connections, a ring
 * past its size limit). Run once, after the last line.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "config_checks.h"
#include "config_keys.h"

#include <ringsteer/quic_lb.h>

static void section_label(char *buf, size_t len, const char *type,
			  const char *name)
{
	snprintf(buf, len, "%s %s", type, name);
}

/*
 * An encrypted service whose previous config has no key decodes that
 * config in the clear: any client writes a backend's server ID under its
 * codepoint and lands where it likes, which encryption was meant to stop.
 * That is right only while moving a plaintext service to encryption, so
 * it must be said: quic_previous_plaintext = on.
 */
static void check_quic_prev_clear(struct cfg_report *r,
				  const struct svc_entry *s, const char *label)
{
	const struct rs_service_conf *c = &s->conf;
	int prev = s->key_line[SVC_QUIC_PREV_CONFIG_ID];
	int clear = s->key_line[SVC_QUIC_PREV_PLAINTEXT];

	if (clear && s->prev_plaintext && !prev)
		cfg_report(r, clear, label, "quic_previous_plaintext",
			   "quic_previous_plaintext needs "
			   "quic_previous_config_id (the config it is about)");
	else if (clear && s->prev_plaintext && c->quic_prev_key_set)
		cfg_report(r, clear, label, "quic_previous_plaintext",
			   "quic_previous_plaintext = on with "
			   "quic_previous_key_file: the previous config is "
			   "either encrypted or not");
	else if (prev && c->quic_key_set && !c->quic_prev_key_set &&
		 !s->key_line[SVC_QUIC_PREV_KEY_FILE] && !s->prev_plaintext)
		cfg_report(r, prev, label, "quic_previous_config_id",
			   "quic_previous_config_id %u has no "
			   "quic_previous_key_file: it would be decoded in the "
			   "clear, and any client could pick its backend by "
			   "writing a server ID under it; give its key, or "
			   "set quic_previous_plaintext = on if it was "
			   "plaintext (moving to encryption)",
			   c->quic_prev_config_id);
}

/*
 * QUIC-LB encryption and rotation (docs/quic.md "Encrypted CIDs"). An
 * encrypted CID is the first octet, the server ID and a nonce of at least
 * 4 bytes (draft-ietf-quic-load-balancers-21): 16 of them are one AES
 * block, any other sum goes through the four-pass Feistel network.
 */
static void check_quic_lb(struct cfg_report *r, const struct svc_entry *s,
			  const char *label)
{
	const struct rs_service_conf *c = &s->conf;
	int key = s->key_line[SVC_QUIC_KEY_FILE];
	int prev = s->key_line[SVC_QUIC_PREV_CONFIG_ID];
	int prev_key = s->key_line[SVC_QUIC_PREV_KEY_FILE];
	int nonce_at = s->key_line[SVC_QUIC_NONCE_LEN];
	unsigned int room = c->quic_cid_len - 1u - c->quic_server_id_len;
	unsigned int nonce = c->quic_nonce_len ? c->quic_nonce_len : room;

	if (c->cookie != RS_COOKIE_QUIC) {
		if (key)
			cfg_report(r, key, label, "quic_key_file",
				   "quic_key_file needs cookie = quic");
		if (prev)
			cfg_report(r, prev, label, "quic_previous_config_id",
				   "quic_previous_config_id needs cookie = "
				   "quic");
		if (prev_key)
			cfg_report(
				r, prev_key, label, "quic_previous_key_file",
				"quic_previous_key_file needs cookie = quic");
		if (nonce_at)
			cfg_report(r, nonce_at, label, "quic_nonce_len",
				   "quic_nonce_len needs cookie = quic");
		if (s->key_line[SVC_QUIC_PREV_PLAINTEXT])
			cfg_report(r, s->key_line[SVC_QUIC_PREV_PLAINTEXT],
				   label, "quic_previous_plaintext",
				   "quic_previous_plaintext needs cookie = "
				   "quic");
		return;
	}
	check_quic_prev_clear(r, s, label);
	if (c->quic_nonce_len && c->quic_nonce_len > room)
		cfg_report(r, nonce_at, label, "quic_nonce_len",
			   "quic_nonce_len %u does not fit: quic_cid_len %u "
			   "holds the first octet, a %u-byte server ID and at "
			   "most %u bytes of nonce",
			   c->quic_nonce_len, c->quic_cid_len,
			   c->quic_server_id_len, room);
	else if (c->quic_nonce_len &&
		 c->quic_server_id_len + c->quic_nonce_len >
			 RS_QUIC_LB_MAX_PLAIN)
		cfg_report(r, nonce_at, label, "quic_nonce_len",
			   "quic_server_id_len + quic_nonce_len is %u, more "
			   "than the %u an encrypted CID holds",
			   c->quic_server_id_len + c->quic_nonce_len,
			   RS_QUIC_LB_MAX_PLAIN);
	if (prev_key && !prev)
		cfg_report(r, prev_key, label, "quic_previous_key_file",
			   "quic_previous_key_file needs "
			   "quic_previous_config_id (the config it decodes)");
	if (c->quic_prev_set && c->quic_prev_config_id == c->quic_config_id)
		cfg_report(r, prev, label, "quic_previous_config_id",
			   "quic_previous_config_id %u is the current "
			   "quic_config_id: a rotation needs another codepoint",
			   c->quic_prev_config_id);
	if ((c->quic_key_set || c->quic_prev_key_set) &&
	    nonce < RS_QUIC_LB_MIN_NONCE) {
		int at = s->key_line[SVC_QUIC_CID_LEN];

		cfg_report(r, at ? at : (key ? key : prev_key), label,
			   at ? "quic_cid_len" : NULL,
			   "quic_cid_len %u with quic_server_id_len %u leaves "
			   "a %u-byte nonce; an encrypted CID needs at least "
			   "%u (quic_cid_len >= %u)",
			   c->quic_cid_len, c->quic_server_id_len, nonce,
			   RS_QUIC_LB_MIN_NONCE,
			   1u + c->quic_server_id_len + RS_QUIC_LB_MIN_NONCE);
	}
}

/* A refused protocol or cookie is already reported: say nothing more. */
static void check_quic(struct cfg_report *r, const struct svc_entry *s,
		       const char *label)
{
	const struct rs_service_conf *c = &s->conf;
	int line = s->key_line[SVC_QUIC_CID_LEN];

	if (c->cookie == RS_COOKIE_QUIC && c->protocol == IPPROTO_TCP)
		cfg_report(r, s->key_line[SVC_COOKIE], label, "cookie",
			   "cookie = quic needs protocol = udp");
	if (s->key_bad[SVC_QUIC_SERVER_ID_LEN] || s->key_bad[SVC_QUIC_CID_LEN])
		return;
	if (c->quic_cid_len < 1 + c->quic_server_id_len) {
		cfg_report(
			r, line ? line : c->line, label,
			line ? "quic_cid_len" : NULL,
			"quic_cid_len %u is too short for quic_server_id_len "
			"%u (needs at least %u)",
			c->quic_cid_len, c->quic_server_id_len,
			1u + c->quic_server_id_len);
		return;
	}
	check_quic_lb(r, s, label);
}

static void check_services(const struct cfg_entries *e, struct cfg_report *r)
{
	char label[LABEL_MAX];
	size_t i;

	for (i = 0; i < e->n_svcs; i++) {
		struct svc_entry *s = &e->svcs[i];

		section_label(label, sizeof(label), "service", s->conf.name);
		if (!s->key_line[SVC_PROTOCOL])
			cfg_report(r, s->conf.line, label, NULL,
				   "missing required key 'protocol'");
		if (!s->key_line[SVC_LISTEN])
			cfg_report(r, s->conf.line, label, NULL,
				   "missing required key 'listen'");
		check_quic(r, s, label);
		/* A UDP backend's load is its live sticky entries (docs). */
		if (s->conf.balance_milli && s->conf.protocol == IPPROTO_UDP &&
		    !s->conf.sticky_ttl)
			cfg_report(r, s->key_line[SVC_BALANCE_FACTOR], label,
				   "balance_factor",
				   "balance_factor on a UDP service needs "
				   "sticky_ttl: a UDP backend's load is its "
				   "flows, the live entries of the sticky "
				   "table");
		/*
		 * A TCP SYN in a backend's restart is better served by the
		 * next backend at once than held for a retransmission a
		 * second later: a new connection has no state to lose, and
		 * its sticky entry stands (docs/operations.md).
		 */
		if (s->conf.generations && s->conf.protocol != IPPROTO_UDP)
			cfg_report(r, s->key_line[SVC_GENERATIONS], label,
				   "generations",
				   "generations is for UDP services: a TCP "
				   "listener's accepted connections already "
				   "stay with the process that accepted them "
				   "(docs/operations.md)");
		if (s->key_line[SVC_FLOW_IDLE] && !s->conf.generations)
			cfg_report(
				r, s->key_line[SVC_FLOW_IDLE], label,
				"flow_idle",
				"flow_idle is the idle time of a generations "
				"flow: set generations = on, or remove it");
		if (s->conf.restart_grace_ms && s->conf.protocol == IPPROTO_TCP)
			cfg_report(r, s->key_line[SVC_RESTART_GRACE], label,
				   "restart_grace",
				   "restart_grace is for UDP services: a TCP "
				   "connection in a backend's restart goes to "
				   "the next backend, and its sticky entry "
				   "stands");
	}
}

static void resolve_backends(struct cfg_entries *e, struct cfg_report *r)
{
	char label[LABEL_MAX];
	size_t i;
	int idx;

	for (i = 0; i < e->n_bes; i++) {
		struct be_entry *b = &e->bes[i];

		section_label(label, sizeof(label), "backend", b->conf.name);
		if (!b->key_line[BE_SERVICE])
			cfg_report(r, b->conf.line, label, NULL,
				   "missing required key 'service'");
		if (!b->key_line[BE_ADDRESS])
			cfg_report(r, b->conf.line, label, NULL,
				   "missing required key 'address'");
		if (!b->service[0])
			continue;
		for (idx = 0; (size_t)idx < e->n_svcs; idx++)
			if (strcmp(e->svcs[idx].conf.name, b->service) == 0)
				break;
		if ((size_t)idx == e->n_svcs) {
			cfg_report(r, b->key_line[BE_SERVICE], label, "service",
				   "unknown service '%s'", b->service);
			continue;
		}
		b->conf.service = (size_t)idx;
		b->resolved = true;
	}
}

/* Health check keys that only make sense together. */
static void check_health(struct cfg_entries *e, struct cfg_report *r)
{
	static const int http_only[] = {BE_CHECK_PATH, BE_CHECK_EXPECT,
					BE_CHECK_HOST};
	char label[LABEL_MAX], a[16], b[16];
	size_t i, k;

	for (i = 0; i < e->n_bes; i++) {
		struct be_entry *be = &e->bes[i];
		struct rs_health_conf *h = &be->conf.health;
		int line = be->key_line[BE_TIMEOUT];

		/*
		 * Defaults that depend on other keys: a UDP backend is not
		 * checked unless asked (a TCP connect would fail), and a short
		 * interval shortens the default timeout with it.
		 */
		if (!be->key_line[BE_CHECK] && be->resolved &&
		    e->svcs[be->conf.service].conf.protocol == IPPROTO_UDP)
			h->type = RS_CHECK_NONE;
		if (!line && !be->key_bad[BE_INTERVAL] &&
		    h->interval_ms < h->timeout_ms)
			h->timeout_ms = h->interval_ms;

		section_label(label, sizeof(label), "backend", be->conf.name);
		for (k = 0; k < sizeof(http_only) / sizeof(http_only[0]); k++) {
			const char *key = cfg_backend_keys[http_only[k]].name;

			if (!be->key_line[http_only[k]] ||
			    be->key_bad[BE_CHECK] || h->type == RS_CHECK_HTTP ||
			    h->type == RS_CHECK_HTTPS)
				continue;
			cfg_report(r, be->key_line[http_only[k]], label, key,
				   "%s is only used by check = http or https",
				   key);
		}
		if (be->key_bad[BE_INTERVAL] || be->key_bad[BE_TIMEOUT] ||
		    h->timeout_ms <= h->interval_ms)
			continue;
		cfg_report(r, line ? line : be->conf.line, label,
			   line ? "timeout" : NULL,
			   "timeout %s is longer than interval %s",
			   cfg_fmt_duration(a, sizeof(a), h->timeout_ms),
			   cfg_fmt_duration(b, sizeof(b), h->interval_ms));
	}
}

/* An earlier backend of the same service with the same server ID. */
static const struct be_entry *same_server_id(const struct cfg_entries *e,
					     size_t i)
{
	const struct be_entry *b = &e->bes[i];

	for (size_t j = 0; j < i; j++) {
		const struct be_entry *a = &e->bes[j];

		if (a->conf.has_server_id &&
		    a->conf.service == b->conf.service &&
		    !memcmp(a->server_id, b->server_id, sizeof(a->server_id)))
			return a;
	}
	return NULL;
}

/*
 * Server IDs need the backend's service (cookie, quic_server_id_len), which
 * may come later in the file. Values are right-aligned in be_entry and
 * stored in the first quic_server_id_len bytes of the result.
 */
static void check_server_id(struct cfg_entries *e, struct cfg_report *r,
			    size_t i)
{
	struct be_entry *b = &e->bes[i];
	const struct svc_entry *s = &e->svcs[b->conf.service];
	unsigned int len = s->conf.quic_server_id_len;
	int line = b->key_line[BE_SERVER_ID];
	const struct be_entry *other;
	char label[LABEL_MAX];
	unsigned int k;

	section_label(label, sizeof(label), "backend", b->conf.name);
	if (!line) {
		if (s->conf.cookie == RS_COOKIE_QUIC)
			cfg_report(
				r, b->conf.line, label, NULL,
				"missing required key 'server_id' (service %s "
				"uses cookie = quic)",
				s->conf.name);
		return;
	}
	if (b->key_bad[BE_SERVER_ID] || s->key_bad[SVC_COOKIE])
		return;
	if (s->conf.cookie != RS_COOKIE_QUIC) {
		cfg_report(r, line, label, "server_id",
			   "server_id needs cookie = quic in [service %s]",
			   s->conf.name);
		return;
	}
	if (s->key_bad[SVC_QUIC_SERVER_ID_LEN])
		return;
	for (k = 0; k < RS_QUIC_MAX_SERVER_ID - len; k++) {
		if (b->server_id[k]) {
			cfg_report(r, line, label, "server_id",
				   "server_id %s does not fit in %u byte%s "
				   "(quic_server_id_len)",
				   b->server_id_text, len, len == 1 ? "" : "s");
			return;
		}
	}
	other = same_server_id(e, i);
	if (other) {
		cfg_report(
			r, line, label, "server_id",
			"server_id %s is already the server_id of [backend %s] "
			"at %s:%d",
			b->server_id_text, other->conf.name, r->file,
			other->key_line[BE_SERVER_ID]);
		return;
	}
	b->conf.has_server_id = true;
	memcpy(b->conf.server_id, b->server_id + RS_QUIC_MAX_SERVER_ID - len,
	       len);
}

static void check_server_ids(struct cfg_entries *e, struct cfg_report *r)
{
	for (size_t i = 0; i < e->n_bes; i++)
		if (e->bes[i].resolved)
			check_server_id(e, r, i);
}

static bool same_listen(const struct rs_listen *a, const struct rs_listen *b)
{
	return a->family == b->family && a->prefixlen == b->prefixlen &&
	       a->port == b->port && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

static const char *proto_name(uint8_t protocol)
{
	return protocol == IPPROTO_TCP ? "tcp" : "udp";
}

/* Two identical keys in rs_binds: the second would replace the first. */
static void check_listen_pair(struct cfg_report *r, const struct svc_entry *a,
			      const struct rs_listen *la,
			      const struct svc_entry *b,
			      const struct rs_listen *lb)
{
	char label[LABEL_MAX], text[RS_ADDR_STRLEN];

	if (!a->conf.protocol || a->conf.protocol != b->conf.protocol ||
	    !same_listen(la, lb))
		return;
	section_label(label, sizeof(label), "service", b->conf.name);
	rs_addr_format_prefix(lb->family, lb->addr, lb->prefixlen, lb->port,
			      text, sizeof(text));
	cfg_report(r, lb->line, label, "listen",
		   "%s %s overlaps listen at %s:%d in [service %s]",
		   proto_name(b->conf.protocol), text, r->file, la->line,
		   a->conf.name);
}

static void check_listens(const struct cfg_entries *e, struct cfg_report *r)
{
	size_t i, j, k, m;

	/* Services are contiguous in the file, so index order is line order. */
	for (i = 0; i < e->n_svcs; i++) {
		const struct svc_entry *a = &e->svcs[i];

		for (j = 0; j < a->conf.n_listens; j++) {
			for (k = i; k < e->n_svcs; k++) {
				const struct svc_entry *b = &e->svcs[k];

				for (m = k == i ? j + 1 : 0;
				     m < b->conf.n_listens; m++)
					check_listen_pair(
						r, a, &a->conf.listens[j], b,
						&b->conf.listens[m]);
			}
		}
	}
}

static uint8_t backend_protocol(const struct cfg_entries *e,
				const struct be_entry *b)
{
	return b->resolved ? e->svcs[b->conf.service].conf.protocol : 0;
}

static bool same_backend_addr(const struct rs_backend_addr *a,
			      const struct rs_backend_addr *b)
{
	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr));
}

/* The earlier backend address equal to @x with the same protocol, if any. */
static const struct rs_backend_addr *earlier_socket(
	const struct cfg_entries *e, size_t i, uint8_t proto,
	const struct rs_backend_addr *x, size_t *owner)
{
	for (size_t j = 0; j < i; j++) {
		const struct be_entry *a = &e->bes[j];

		if (backend_protocol(e, a) != proto)
			continue;
		for (size_t k = 0; k < a->conf.n_addrs; k++) {
			if (same_backend_addr(&a->conf.addrs[k], x)) {
				*owner = j;
				return &a->conf.addrs[k];
			}
		}
	}
	return NULL;
}

/* The same protocol and address:port would be one and the same socket. */
static void check_sockets(const struct cfg_entries *e, struct cfg_report *r)
{
	char label[LABEL_MAX], text[RS_ADDR_STRLEN];

	for (size_t i = 0; i < e->n_bes; i++) {
		const struct be_entry *b = &e->bes[i];
		uint8_t proto = backend_protocol(e, b);

		if (!proto)
			continue;
		for (size_t k = 0; k < b->conf.n_addrs; k++) {
			const struct rs_backend_addr *x = &b->conf.addrs[k];
			const struct rs_backend_addr *prev;
			size_t owner = 0;

			prev = earlier_socket(e, i, proto, x, &owner);
			if (!prev)
				continue;
			section_label(label, sizeof(label), "backend",
				      b->conf.name);
			rs_addr_format(x->family, x->addr, x->port, text,
				       sizeof(text));
			cfg_report(
				r, x->line, label, "address",
				"%s %s is already the address of [backend %s] "
				"at %s:%d",
				proto_name(proto), text,
				e->bes[owner].conf.name, r->file, prev->line);
		}
	}
}

/*
 * A file without services would take every service out of the data plane:
 * all steering stops, and nothing says so. Stopping steering is a command
 * of its own. Said only of a file without other errors: one whose
 * [service] header was refused already says why it has no service.
 */
static void check_not_empty(const struct cfg_entries *e, bool allow_empty,
			    struct cfg_report *r)
{
	if (e->n_svcs || allow_empty || r->n_reported)
		return;
	cfg_report(r, 0, NULL, NULL,
		   "no [service] section: this file would stop all steering; "
		   "to stop steering, run `ringsteer detach` (or `ringsteerd "
		   "--detach` with the daemon stopped)");
}

/* One address the data plane must leave alone: a backend's, or its check's. */
struct own_addr {
	const struct be_entry *b;
	uint8_t protocol;
	uint8_t family;
	uint8_t addr[16];
	uint16_t port;
	int line;	 /* of the key that makes it */
	const char *key; /* "address" or "check_port" */
	bool check;	 /* where the daemon's health check connects */
};

static bool listen_covers(const struct rs_listen *l, const struct own_addr *o)
{
	return l->family == o->family && (l->port == 0 || l->port == o->port) &&
	       rs_addr_in_prefix(o->family, o->addr, l->addr, l->prefixlen);
}

/*
 * sk_lookup steers every new connection to a listen of its protocol, the
 * daemon's own health checks and the backends' own traffic included: a
 * check of a healthy backend handed to another backend (or to none) fails,
 * and healthy backends flap DOWN.
 */
static void check_cover(const struct cfg_entries *e, struct cfg_report *r,
			const struct own_addr *o)
{
	char label[LABEL_MAX], ltext[RS_ADDR_STRLEN], atext[RS_ADDR_STRLEN];

	for (size_t i = 0; i < e->n_svcs; i++) {
		const struct svc_entry *s = &e->svcs[i];

		if (s->conf.protocol != o->protocol)
			continue;
		for (size_t j = 0; j < s->conf.n_listens; j++) {
			const struct rs_listen *l = &s->conf.listens[j];

			if (!listen_covers(l, o))
				continue;
			section_label(label, sizeof(label), "service",
				      s->conf.name);
			rs_addr_format_prefix(l->family, l->addr, l->prefixlen,
					      l->port, ltext, sizeof(ltext));
			rs_addr_format(o->family, o->addr, o->port, atext,
				       sizeof(atext));
			cfg_report(r, l->line, label, "listen",
				   "%s %s covers %s, %s [backend %s] (%s at "
				   "%s:%d): the daemon's health checks and the "
				   "backend's own connections would be steered",
				   proto_name(o->protocol), ltext, atext,
				   o->check ? "where the daemon checks"
					    : "the address of",
				   o->b->conf.name, o->key, r->file, o->line);
		}
	}
}

static void check_backend_covers(const struct cfg_entries *e,
				 struct cfg_report *r, const struct be_entry *b)
{
	const struct rs_health_conf *h = &b->conf.health;
	uint8_t proto = backend_protocol(e, b);

	if (!proto)
		return;
	for (size_t k = 0; k < b->conf.n_addrs; k++) {
		const struct rs_backend_addr *a = &b->conf.addrs[k];
		struct own_addr o = {
			.b = b,
			.protocol = proto,
			.family = a->family,
			.port = a->port,
			.line = a->line,
			.key = "address",
		};

		rs_addr_connect_target(a->family, a->addr, o.addr);
		check_cover(e, r, &o);
		/* Checks are TCP, to the first address (see start_check()). */
		if (k || h->type == RS_CHECK_NONE ||
		    (proto == IPPROTO_TCP && (!h->port || h->port == a->port)))
			continue;
		o.protocol = IPPROTO_TCP;
		o.check = true;
		if (h->port) {
			o.port = h->port;
			o.line = b->key_line[BE_CHECK_PORT];
			o.key = "check_port";
		}
		check_cover(e, r, &o);
	}
}

static void check_covers(const struct cfg_entries *e, struct cfg_report *r)
{
	for (size_t i = 0; i < e->n_bes; i++)
		if (e->bes[i].resolved && !e->bes[i].key_bad[BE_CHECK])
			check_backend_covers(e, r, &e->bes[i]);
}

static void check_ring_sizes(const struct cfg_entries *e, struct cfg_report *r)
{
	char label[LABEL_MAX];
	size_t i;

	for (i = 0; i < e->n_svcs; i++) {
		const struct svc_entry *s = &e->svcs[i];
		uint64_t points = cfg_service_points(e, i);

		if (points <= RS_MAX_RING_POINTS)
			continue;
		section_label(label, sizeof(label), "service", s->conf.name);
		cfg_report(r, s->conf.line, label, NULL,
			   "ring too large: %llu points (weight * vnodes over "
			   "all backends), max %u%s",
			   (unsigned long long)points, RS_MAX_RING_POINTS,
			   s->conf.vnodes_set
				   ? ""
				   : "; vnodes is not set, so it is "
				     "4096 (the default): set it lower");
	}
}

/*
 * etcd over TLS with RBAC: a certificate comes with its key, a user with
 * its password file, and TLS files with https:// endpoints only.
 */
static void check_fleet_etcd_auth(const struct fleet_entry *f,
				  struct cfg_report *r)
{
	const struct rs_fleet_conf *c = &f->conf;
	static const struct {
		int have, need;
		const char *have_name, *need_name;
	} pairs[] = {
		{FL_ETCD_CERT, FL_ETCD_KEY, "etcd_cert", "etcd_key"},
		{FL_ETCD_KEY, FL_ETCD_CERT, "etcd_key", "etcd_cert"},
		{FL_ETCD_USER, FL_ETCD_PASSWORD_FILE, "etcd_user",
		 "etcd_password_file"},
		{FL_ETCD_PASSWORD_FILE, FL_ETCD_USER, "etcd_password_file",
		 "etcd_user"},
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (f->key_line[pairs[i].have] && !f->key_line[pairs[i].need])
			cfg_report(r, f->key_line[pairs[i].have], "fleet",
				   pairs[i].have_name, "needs %s too",
				   pairs[i].need_name);
	if (!c->etcd_ca[0] && !c->etcd_cert[0])
		return;
	for (size_t i = 0; i < c->n_etcd; i++)
		if (strncmp(c->etcd[i], "https://", 8))
			cfg_report(r,
				   f->key_line[c->etcd_ca[0] ? FL_ETCD_CA
							     : FL_ETCD_CERT],
				   "fleet",
				   c->etcd_ca[0] ? "etcd_ca" : "etcd_cert",
				   "TLS files are for https:// endpoints, and "
				   "%s is not one",
				   c->etcd[i]);
}

/*
 * [fleet] names its etcd, this host and its address or is refused; a
 * service with fleet = on needs [fleet] and interfaces for the TC program,
 * and no QUIC cookie (not carried across hosts: docs/fleet.md).
 */
static void check_fleet(const struct cfg_entries *e, struct cfg_report *r)
{
	static const struct {
		int key;
		const char *name;
	} required[] = {
		{FL_ETCD, "etcd"}, {FL_NAME, "name"}, {FL_ADDRESS, "address"}};
	const struct fleet_entry *f = &e->fleet;
	char label[LABEL_MAX];

	for (size_t i = 0; f->line && i < 3; i++)
		if (!f->key_line[required[i].key])
			cfg_report(r, f->line, "fleet", NULL,
				   "missing required key '%s'",
				   required[i].name);
	check_fleet_etcd_auth(f, r);
	cfg_check_fleet_identity(f, r);
	for (size_t i = 0; i < e->n_svcs; i++) {
		const struct svc_entry *s = &e->svcs[i];
		int line = s->key_line[SVC_FLEET];

		if (!s->conf.fleet)
			continue;
		section_label(label, sizeof(label), "service", s->conf.name);
		if (!f->line)
			cfg_report(r, line, label, "fleet",
				   "fleet = on needs a [fleet] section (etcd, "
				   "name, address)");
		if (!e->global.n_interfaces &&
		    !e->global.key_bad[GL_INTERFACES])
			cfg_report(
				r, line, label, "fleet",
				"fleet = on needs [global] interfaces (where "
				"clients' packets arrive and forwarded ones "
				"leave)");
	}
}

void cfg_validate(struct cfg_entries *e, bool allow_empty, struct cfg_report *r)
{
	check_services(e, r);
	check_fleet(e, r);
	resolve_backends(e, r);
	check_health(e, r);
	check_server_ids(e, r);
	check_listens(e, r);
	check_sockets(e, r);
	check_covers(e, r);
	check_ring_sizes(e, r);
	cfg_check_memory(e, r);
	check_not_empty(e, allow_empty, r);
}
