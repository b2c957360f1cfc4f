// SPDX-License-Identifier: MIT
#include "tc_fixture.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <ringsteer/aes128.h>

#include "bpf_fixture.h"
#include "steer_tc_kfunc.skel.h"
#include "frames.h"

struct steer_tc_bpf *tc_fixture_load(void)
{
	struct steer_tc_bpf *s;

	/* Every check reads per-CPU counters: no use loading without. */
	if (libbpf_num_possible_cpus() <= 0)
		return NULL;
	s = steer_tc_bpf__open();
	if (!s)
		return NULL;
	fixture_private_maps(s->obj);
	if (steer_tc_bpf__load(s)) {
		steer_tc_bpf__destroy(s);
		return NULL;
	}
	return s;
}

struct steer_tc_bpf *tc_fixture_load_kfunc(struct steer_tc_kfunc_bpf **k)
{
	const struct bpf_object_skeleton *sk;
	struct steer_tc_bpf *v;

	*k = NULL;
	if (libbpf_num_possible_cpus() <= 0)
		return NULL;
	*k = steer_tc_kfunc_bpf__open();
	if (!*k)
		return NULL;
	fixture_private_maps((*k)->obj);
	v = steer_tc_bpf__open();
	if (!v || steer_tc_kfunc_bpf__load(*k)) {
		steer_tc_bpf__destroy(v);
		steer_tc_kfunc_bpf__destroy(*k);
		*k = NULL;
		return NULL;
	}
	/*
	 * Point the view's maps and program at the loaded object's. The
	 * entries are map_skel_sz apart, not sizeof(*sk->maps): libbpf 1.5
	 * (Debian 13) grew struct bpf_map_skeleton by a link pointer that
	 * bpftool leaves out of objects without struct_ops (24 bytes a map,
	 * against 32 in the header).
	 */
	sk = v->skeleton;
	for (int i = 0; i < sk->map_cnt; i++) {
		const struct bpf_map_skeleton *m =
			(const void *)((const char *)sk->maps +
				       (size_t)i * sk->map_skel_sz);

		*m->map = bpf_object__find_map_by_name((*k)->obj, m->name);
	}
	v->progs.steer_tc = (*k)->progs.steer_tc;
	return v;
}

void tc_fixture_free_kfunc(struct steer_tc_bpf *view,
			   struct steer_tc_kfunc_bpf *k)
{
	/* The view closes its own object, opened and never loaded. */
	steer_tc_bpf__destroy(view);
	steer_tc_kfunc_bpf__destroy(k);
}

int tc_set_quic_lb(struct steer_tc_bpf *skel, struct steer_tc_kfunc_bpf *k,
		   uint32_t svc, uint8_t config, uint8_t mode, uint8_t plen,
		   const uint8_t *key)
{
	struct rs_quic_lb lb = {.mode = mode, .plen = plen};
	__u32 index = svc * RS_QUIC_LB_CONFIGS + config;

	if (k) {
		struct rs_quic_lb_key_args a = {.index = index};
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a,
			    .ctx_size_in = sizeof(a));
		int err;

		if (key)
			memcpy(a.key, key, 16);
		err = bpf_prog_test_run_opts(
			bpf_program__fd(k->progs.rs_quic_lb_set_key), &o);
		if (err || a.err)
			return err ? err : a.err;
	} else if (key) {
		rs_aes128_expand(key, &lb.key);
	}
	return bpf_map_update_elem(bpf_map__fd(skel->maps.rs_quic_lb), &index,
				   &lb, BPF_ANY);
}

void tc_quic_service(struct rs_service *s, uint32_t id, uint8_t sid_len,
		     uint8_t cid_len, uint8_t config)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->enabled = 1;
	s->protocol = IPPROTO_UDP;
	s->prefix4 = 32;
	s->prefix6 = 64;
	s->cookie = RS_COOKIE_QUIC;
	s->quic_server_id_len = sid_len;
	s->quic_cid_len = cid_len;
	s->quic_config_id = config;
	snprintf(s->name, sizeof(s->name), "quic%u", id);
}

void tc_sid_bytes(uint32_t sid, unsigned int len, uint8_t *out)
{
	memset(out, 0, RS_QUIC_MAX_SERVER_ID);
	for (unsigned int i = 0; i < len && i < 4; i++)
		out[len - 1 - i] = (uint8_t)(sid >> (8 * i));
}

int tc_set_service(struct steer_tc_bpf *skel, const struct rs_service *s)
{
	return bpf_map_update_elem(bpf_map__fd(skel->maps.rs_services), &s->id,
				   s, BPF_ANY);
}

int tc_add_bind(struct steer_tc_bpf *skel, int family, const char *addr,
		int plen, uint16_t port, uint32_t svc)
{
	return tc_add_bind_proto(skel, IPPROTO_UDP, family, addr, plen, port,
				 svc);
}

int tc_add_bind_proto(struct steer_tc_bpf *skel, int proto, int family,
		      const char *addr, int plen, uint16_t port, uint32_t svc)
{
	struct rs_bind_key k;
	struct rs_bind v;

	struct rs_bind_exact_key e = {0};
	struct rs_meta meta;
	__u32 zero = 0;
	int fd;

	if (fixture_bind_entry(&k, &v, proto, family, addr, plen, port, svc))
		return -1;
	/* As the daemon does: one address and port in the hash table. */
	if (port && plen == (family == AF_INET ? 32 : 128)) {
		e.protocol = k.protocol;
		e.family = k.family;
		e.port = k.port;
		memcpy(e.addr, k.addr, sizeof(e.addr));
		return bpf_map_update_elem(
			bpf_map__fd(skel->maps.rs_binds_exact), &e, &v,
			BPF_ANY);
	}
	fd = bpf_map__fd(skel->maps.rs_meta);
	if (bpf_map_lookup_elem(fd, &zero, &meta))
		return -1;
	meta.lpm_binds++;
	if (bpf_map_update_elem(fd, &zero, &meta, BPF_ANY))
		return -1;
	return bpf_map_update_elem(bpf_map__fd(skel->maps.rs_binds), &k, &v,
				   BPF_ANY);
}

int tc_set_backend(struct steer_tc_bpf *skel, uint32_t id, uint32_t svc,
		   uint32_t state)
{
	return tc_set_backend_held(skel, id, svc, state, 0);
}

int tc_set_backend_held(struct steer_tc_bpf *skel, uint32_t id, uint32_t svc,
			uint32_t state, uint32_t held)
{
	struct rs_backend be = {
		.state = state, .service = svc, .held_slots = held};

	snprintf(be.name, sizeof(be.name), "quic-%u", id);
	return bpf_map_update_elem(bpf_map__fd(skel->maps.rs_backends), &id,
				   &be, BPF_ANY);
}

int tc_set_socket(struct steer_tc_bpf *skel, uint32_t slot, int fd)
{
	uint64_t v = (uint64_t)fd;

	return bpf_map_update_elem(bpf_map__fd(skel->maps.rs_sockets), &slot,
				   &v, BPF_ANY);
}

static void cookie_key(struct rs_cookie_key *k, const struct rs_service *svc,
		       const uint8_t *sid)
{
	memset(k, 0, sizeof(*k));
	k->service = svc->id;
	k->len = svc->quic_server_id_len;
	memcpy(k->server_id, sid, k->len);
}

int tc_set_cookie(struct steer_tc_bpf *skel, const struct rs_service *svc,
		  const uint8_t *sid, uint32_t backend)
{
	struct rs_cookie v = {.backend = backend};
	struct rs_cookie_key k;

	cookie_key(&k, svc, sid);
	return bpf_map_update_elem(bpf_map__fd(skel->maps.rs_cookies), &k, &v,
				   BPF_ANY);
}

int tc_del_cookie(struct steer_tc_bpf *skel, const struct rs_service *svc,
		  const uint8_t *sid)
{
	struct rs_cookie_key k;

	cookie_key(&k, svc, sid);
	return bpf_map_delete_elem(bpf_map__fd(skel->maps.rs_cookies), &k);
}

void tc_count(struct rs_service_stats *svc, struct rs_backend_stats *be,
	      enum tc_outcome what, bool assigned)
{
	switch (what) {
	case TC_HIT:
		be->cookie_hits++;
		if (assigned)
			be->assigned++;
		else
			svc->errors++;
		break;
	case TC_NONE:
		svc->cookie_none++;
		break;
	case TC_UNKNOWN:
		svc->cookie_unknown++;
		break;
	case TC_DOWN:
		svc->cookie_down++;
		break;
	case TC_MALFORMED:
		svc->cookie_malformed++;
		break;
	case TC_ERROR:
		svc->errors++;
		break;
	case TC_HELD:
		svc->held++;
		break;
	default:
		break;
	}
}

int tc_snapshot(struct steer_tc_bpf *skel, struct rs_service_stats *svc,
		uint32_t nsvc, struct rs_backend_stats *be, uint32_t nbe)
{
	int svc_fd = bpf_map__fd(skel->maps.rs_service_stats);
	int be_fd = bpf_map__fd(skel->maps.rs_backend_stats);

	for (uint32_t i = 0; i < nsvc; i++)
		if (fixture_percpu_sum(svc_fd, i, &svc[i], sizeof(svc[i])))
			return -1;
	for (uint32_t i = 0; i < nbe; i++)
		if (fixture_percpu_sum(be_fd, i, &be[i], sizeof(be[i])))
			return -1;
	return 0;
}

int tc_run(struct steer_tc_bpf *skel, const uint8_t *data, size_t len,
	   int *retval)
{
	return tc_run_cb(skel, data, len, NULL, retval);
}

int tc_run_cb(struct steer_tc_bpf *skel, const uint8_t *data, size_t len,
	      const uint32_t cb[5], int *retval)
{
	uint8_t out[FRAME_MAX] = {0};
	struct __sk_buff ctx = {0};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = data,
		    .data_size_in = (__u32)len, .data_out = out,
		    .data_size_out = sizeof(out));
	int err;

	if (cb) {
		memcpy(ctx.cb, cb, sizeof(ctx.cb));
		opts.ctx_in = &ctx;
		opts.ctx_size_in = sizeof(ctx);
	}

	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.steer_tc),
				     &opts);
	if (err)
		return err;
	*retval = (int)opts.retval;
	if (opts.data_size_out != len || memcmp(out, data, len))
		return -EILSEQ;
	return 0;
}
