// SPDX-License-Identifier: MIT
/*
 * Kernel features at start (kernel.h). Feature probes rather than version
 * checks: distribution kernels carry backports, and the one behaviour that
 * matters most to operators here, bpf_sk_assign at TC refusing a
 * SO_REUSEPORT socket before 6.6, fails per packet and silently unless
 * someone looks for it.
 */
#include <errno.h>
#include <stdio.h>

#include "daemon.h"
#include "kernel.h"
#include "log.h"

static struct rs_kernel_features features;
static bool probed;

const struct rs_kernel_features *daemon_kernel(void)
{
	return probed ? &features : NULL;
}

static bool any_cookie_service(const struct rs_config *cfg)
{
	for (size_t s = 0; s < cfg->n_services; s++)
		if (cfg->services[s].cookie == RS_COOKIE_QUIC)
			return true;
	return false;
}

int daemon_kernel_check(const struct rs_config *cfg)
{
	const struct rs_kernel_need *miss;
	char line[512];

	if (!probed) {
		rs_kernel_probe(&features);
		probed = true;
		rs_kernel_format(&features, line, sizeof(line));
		rs_info("%s", line);
	}
	miss = rs_kernel_missing(&features);
	if (miss) {
		rs_err("kernel %s lacks %s, which ringsteer needs (Linux %s or "
		       "newer); refusing to start",
		       features.release, miss->what, miss->since);
		return -EOPNOTSUPP;
	}
	miss = rs_kernel_missing_tc(&features);
	if (miss && any_cookie_service(cfg)) {
		rs_err("kernel %s lacks %s, which cookie = quic needs (Linux "
		       "%s or newer); remove cookie = quic or upgrade",
		       features.release, miss->what, miss->since);
		return -EOPNOTSUPP;
	}
	if (features.tc_assign_reuseport == 0 && any_cookie_service(cfg))
		rs_warn("kernel %s: bpf_sk_assign at TC refuses SO_REUSEPORT "
			"sockets (Linux 6.6 takes them): a cookie = quic "
			"backend must listen without SO_REUSEPORT, or its QUIC "
			"cookies fall back to IP affinity",
			features.release);
	return 0;
}

static bool refused(const struct rs_config *cfg, size_t idx, bool reuseport)
{
	const struct rs_backend_conf *bc = &cfg->backends[idx];

	return reuseport && probed && features.tc_assign_reuseport == 0 &&
	       cfg->services[bc->service].cookie == RS_COOKIE_QUIC;
}

void daemon_kernel_note_socket(const struct rs_config *cfg, size_t idx,
			       bool reuseport)
{
	const struct rs_backend_conf *bc = &cfg->backends[idx];

	if (refused(cfg, idx, reuseport))
		rs_warn("backend %s: its socket has SO_REUSEPORT, which "
			"bpf_sk_assign at TC refuses on kernel %s (before "
			"6.6): QUIC cookies of service %s cannot reach it and "
			"fall back to IP affinity; listen without SO_REUSEPORT "
			"or run Linux 6.6 or newer",
			bc->name, features.release,
			cfg->services[bc->service].name);
}

bool daemon_kernel_cookie_refused(const struct daemon *d, size_t idx)
{
	const struct rs_backend_rt *rt = &d->st.bes[idx].sock;

	for (size_t a = 0; a < d->st.cfg.backends[idx].n_addrs; a++)
		if (rt->addr[a].has_socket &&
		    refused(&d->st.cfg, idx, rt->addr[a].reuseport))
			return true;
	return false;
}

static json_t *feature(int v)
{
	return v < 0 ? json_null() : json_boolean(v == 1);
}

json_t *daemon_kernel_json(const struct daemon *d)
{
	json_t *warn = json_array();

	if (!probed)
		return json_null();
	for (size_t i = 0; i < d->st.cfg.n_backends; i++) {
		char msg[512];

		if (!daemon_kernel_cookie_refused(d, i))
			continue;
		snprintf(msg, sizeof(msg),
			 "service %s: backend %s's socket has SO_REUSEPORT; "
			 "bpf_sk_assign at TC refuses it before Linux 6.6, so "
			 "its QUIC cookies fall back to IP affinity",
			 d->st.cfg.services[d->st.cfg.backends[i].service].name,
			 d->st.cfg.backends[i].name);
		json_array_append_new(warn, json_string(msg));
	}
	return json_pack(
		"{s:s, s:{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}, s:o}",
		"release", features.release, "features", "sk_lookup",
		feature(features.sk_lookup), "sk_assign",
		feature(features.sk_assign), "bpf_loop",
		feature(features.bpf_loop), "sockmap",
		feature(features.sockmap), "sockops", feature(features.sockops),
		"tc_sk_assign", feature(features.tc_sk_assign),
		"tc_sk_assign_reuseport", feature(features.tc_assign_reuseport),
		"crypto_kfunc", feature(features.crypto_kfunc), "warnings",
		warn);
}
