// SPDX-License-Identifier: MIT
/*
 * What fleet mode shows: `ringsteer fleet status` (its -j shape in
 * docs/fleet.md) and the metrics, on the event loop. What the etcd thread
 * knows is copied out from under fleet_rt.mu first (struct etcd_view).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "fleet_rt.h"

/* The etcd thread's side, as it was when copied. */
struct etcd_view {
	bool etcd_ok;
	int64_t latest, lease;
	double lease_left; /* seconds the lease surely lives, <= 0: none */
	uint64_t tokens;
	char error[512];
};

static void etcd_view_get(struct fleet_rt *f, struct etcd_view *v)
{
	pthread_mutex_lock(&f->mu);
	v->tokens = f->sh.etcd_tokens;
	v->etcd_ok = f->sh.etcd_ok;
	v->latest = f->sh.latest_rev;
	v->lease = f->sh.lease;
	v->lease_left =
		f->sh.lease_until ? f->sh.lease_until - fleet_mono_now() : 0;
	snprintf(v->error, sizeof(v->error), "%s", f->sh.error);
	pthread_mutex_unlock(&f->mu);
}

static uint32_t owned_buckets(const struct fleet_rt *f,
			      const struct rs_config *cfg, size_t member,
			      uint32_t *total)
{
	uint32_t n = 0;

	*total = 0;
	for (size_t s = 0; s < cfg->n_services && s < f->n_owners; s++) {
		if (!cfg->services[s].fleet)
			continue;
		*total += RS_FLEET_BUCKETS;
		for (uint32_t b = 0; b < RS_FLEET_BUCKETS; b++)
			n += f->owners[s][b] == member + 1;
	}
	return n;
}

/*
 * Whether the router may send this host traffic: it runs a table read
 * from etcd in this run, that table is etcd's latest, and it names this
 * host as an owner of keys. Before that, packets entering here would be
 * judged by a table from an earlier run, or by none (docs/fleet.md,
 * "Adding a host"). NULL when ready, else why not.
 *
 * While etcd is unreachable, "etcd's latest" is the latest this host
 * read, for as long as its lease surely lives (@lease_left > 0): nobody
 * can change the table without etcd, and the others keep this host in
 * theirs. Otherwise a routing daemon whose health check asks `fleet
 * ready` would take every host of the PoP out of the router as soon as
 * etcd restarts. Past that, the others may have dropped this host (etcd
 * up but out of its reach): it is not ready.
 */
static const char *not_ready(const struct fleet_rt *f,
			     const struct rs_config *cfg, bool etcd_ok,
			     bool current, double lease_left)
{
	int self = fleet_self_index(f);
	uint32_t total;

	if (!f->installed)
		return "no fleet table read from etcd yet";
	if (!current)
		return "the table in force is not etcd's latest";
	if (!etcd_ok && lease_left <= 0)
		return "etcd unreachable for longer than this host's lease "
		       "surely lives (lease_ttl after its last keepalive): "
		       "the others may have dropped it";
	if (self < 0)
		return "not a member in etcd yet";
	if (f->snap.m[self].drained)
		return "drained";
	if (!owned_buckets(f, cfg, (size_t)self, &total))
		return "owns no keys (no capacity published yet, or none)";
	return NULL;
}

/* The installed snapshot's members; *@with6: how many have address6. */
static json_t *members_json(struct daemon *d, const struct fleet_rt *f,
			    size_t *with6)
{
	char addr[INET_ADDRSTRLEN], addr6[INET6_ADDRSTRLEN];
	json_t *members = json_array();

	*with6 = 0;
	for (size_t i = 0; i < f->snap.n; i++) {
		const struct rs_fleet_member_info *m = &f->snap.m[i];
		uint32_t cap = 0, total, owned;

		for (size_t c = 0; c < m->n_caps; c++)
			cap += m->caps[c].capacity;
		owned = owned_buckets(f, &d->st.cfg, i, &total);
		inet_ntop(AF_INET, &m->addr, addr, sizeof(addr));
		inet_ntop(AF_INET6, m->addr6, addr6, sizeof(addr6));
		*with6 += m->has_addr6;
		json_array_append_new(
			members,
			json_pack("{s:s, s:s, s:o, s:i, s:f, s:b, s:b, s:i}",
				  "name", m->name, "address", addr, "address6",
				  m->has_addr6 ? json_string(addr6)
					       : json_null(),
				  "capacity", (json_int_t)cap, "keys_share",
				  total ? (double)owned / total : 0.0,
				  "drained", m->drained, "self",
				  !strcmp(m->name, f->conf.name), "wire",
				  (json_int_t)m->wire));
	}
	return members;
}

/* How this host reaches etcd: TLS files and its RBAC user. */
static json_t *etcd_auth_json(const struct fleet_rt *f, uint64_t tokens)
{
	return json_pack("{s:b, s:b, s:s?, s:I}", "tls",
			 !strncmp(f->conf.etcd[0], "https://", 8),
			 "client_certificate", f->conf.etcd_cert[0] != 0,
			 "user",
			 f->conf.etcd_user[0] ? f->conf.etcd_user : NULL,
			 "tokens", (json_int_t)tokens);
}

/* steer_tc's fleet counters, or NULL when they cannot be read. */
static json_t *packets_json(struct daemon *d)
{
	struct rs_fleet_stats st;

	if (dp_fleet_stats(&d->dp, &st))
		return NULL;
	return json_pack(
		"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
		"s:I}",
		"stray", (json_int_t)st.stray, "forwarded",
		(json_int_t)st.forwarded, "flow_hits", (json_int_t)st.flow_hits,
		"received", (json_int_t)st.received, "second_chance",
		(json_int_t)st.second_chance, "hop_limit",
		(json_int_t)st.hop_limit, "forged", (json_int_t)st.forged,
		"local_socket", (json_int_t)st.local_socket, "errors",
		(json_int_t)st.errors, "no_address6",
		(json_int_t)st.no_address6, "cookie_forwarded",
		(json_int_t)st.cookie_forwarded, "unauthenticated",
		(json_int_t)st.unauthenticated);
}

/* The records not believed, left out, truncated: into @out. */
static void rejected_set(const struct fleet_rt *f, json_t *out)
{
	json_t *rej = json_array();

	for (size_t i = 0; i < f->snap.n_rejected; i++)
		json_array_append_new(
			rej,
			json_pack("{s:s, s:s}", "key", f->snap.rejected[i].key,
				  "reason", f->snap.rejected[i].reason));
	json_object_set_new(out, "rejected", rej);
	json_object_set_new(out, "rejected_total",
			    json_integer((json_int_t)f->snap.rejected_total));
	json_object_set_new(out, "left_out",
			    json_integer((json_int_t)f->snap.left_out));
	json_object_set_new(out, "truncated", json_boolean(f->over_cap));
}

/* This host's lease and how long it surely lives: into @out. */
static void lease_set(const struct etcd_view *v, json_t *out)
{
	double left;
	char buf[24];

	snprintf(buf, sizeof(buf), "%llx", (unsigned long long)v->lease);
	json_object_set_new(out, "lease", json_string(buf));
	/*
	 * How long etcd may stay out of reach before it could expire the
	 * lease (and the others drop this host), in tenths.
	 */
	left = v->lease_left > 0 ? (double)(long)(v->lease_left * 10) : 0;
	json_object_set_new(out, "lease_left", json_real(left / 10));
}

/* Everything after the header keys, into @out. */
static void status_details(struct daemon *d, const struct fleet_rt *f,
			   const struct etcd_view *v, bool current,
			   size_t with6, json_t *out)
{
	const char *why;
	json_t *packets;

	if (v->error[0])
		json_object_set_new(out, "error", json_string(v->error));
	json_object_set_new(out, "etcd_auth", etcd_auth_json(f, v->tokens));
	/* IPv6 keys of members without address6 stay where they enter. */
	if (with6 && with6 < f->snap.n)
		json_object_set_new(
			out, "ipv6_warning",
			json_string("members without address6 own IPv6 keys "
				    "that are not forwarded to them: other "
				    "hosts steer those clients where they "
				    "enter (no_address6)"));
	why = not_ready(f, &d->st.cfg, v->etcd_ok, current, v->lease_left);
	json_object_set_new(out, "ready", json_boolean(!why));
	if (why)
		json_object_set_new(out, "not_ready", json_string(why));
	packets = packets_json(d);
	if (packets)
		json_object_set_new(out, "packets", packets);
	json_object_set_new(out, "cid_conflicts",
			    fleet_quic_conflicts_json(&f->quic));
	rejected_set(f, out);
	if (v->lease)
		lease_set(v, out);
}

/*
 * What a member record must carry here to be believed (docs/fleet.md):
 * "host" (per-host identities), "fleet_key" (key_file alone), "none".
 */
static json_t *record_trust_json(struct fleet_rt *f)
{
	size_t ids, keys;

	pthread_mutex_lock(&f->mu);
	ids = f->sh.ident.members.n;
	keys = f->sh.keys.n;
	pthread_mutex_unlock(&f->mu);
	return json_pack("{s:s, s:I}", "signed_by",
			 ids	? "host"
			 : keys ? "fleet_key"
				: "none",
			 "member_keys", (json_int_t)ids);
}

json_t *fleet_status_json(struct daemon *d)
{
	struct fleet_rt *f = (struct fleet_rt *)d->fleet;
	struct rs_fleet_header h = {0};
	struct etcd_view v;
	bool installed, current;
	size_t with6;
	json_t *out;

	if (!f)
		return NULL;
	etcd_view_get(f, &v);
	installed = !dp_fleet_header(&d->dp, RS_FLEET_CURRENT, &h);
	/* The table in force is the latest this host read from etcd. */
	current = installed && (int64_t)h.version == v.latest;
	out = json_pack("{s:o, s:I, s:I, s:b, s:s, s:s, s:b}", "members",
			members_json(d, f, &with6), "version",
			(json_int_t)(installed ? (int64_t)h.version : 0),
			"latest_revision", (json_int_t)v.latest, "agrees",
			v.etcd_ok && current, "name", f->conf.name, "etcd",
			v.etcd_ok ? "up" : "down", "member",
			fleet_self_index(f) >= 0);
	if (out) {
		status_details(d, f, &v, current, with6, out);
		json_object_set_new(out, "records", record_trust_json(f));
	}
	return out;
}

void fleet_metrics_get(struct daemon *d, struct fleet_metrics *out)
{
	struct fleet_rt *f = (struct fleet_rt *)d->fleet;
	struct rs_fleet_header h = {0};
	int64_t latest;

	memset(out, 0, sizeof(*out));
	if (!f)
		return;
	out->enabled = true;
	/* latest_rev too: the etcd thread writes it (it was read unlocked). */
	pthread_mutex_lock(&f->mu);
	out->etcd_up = f->sh.etcd_ok;
	out->agrees = f->sh.etcd_ok;
	latest = f->sh.latest_rev;
	pthread_mutex_unlock(&f->mu);
	if (!dp_fleet_header(&d->dp, RS_FLEET_CURRENT, &h))
		out->version = (int64_t)h.version;
	out->agrees = out->agrees && out->version == latest;
	out->members = (uint32_t)f->snap.n;
	out->swaps = f->swaps;
	out->cid_conflicts = (uint32_t)f->quic.n_conflicts;
	out->rejected = f->snap.rejected_total;
	out->left_out = f->snap.left_out;
}
