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
#include "kernel_features.h"
#include "log.h"

const struct rs_kernel_features *daemon_kernel(void)
{
	return kernel_features();
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
	const struct rs_kernel_features *kf;
	char line[512];
	bool first;

	kf = kernel_features_probe(&first);
	if (first) {
		rs_kernel_format(kf, line, sizeof(line));
		rs_info("%s", line);
	}
	miss = rs_kernel_missing(kf);
	if (miss) {
		rs_err("kernel %s lacks %s, which ringsteer needs (Linux %s or "
		       "newer); refusing to start",
		       kf->release, miss->what, miss->since);
		return -EOPNOTSUPP;
	}
	miss = rs_kernel_missing_tc(kf);
	if (miss && any_cookie_service(cfg)) {
		rs_err("kernel %s lacks %s, which cookie = quic needs (Linux "
		       "%s or newer); remove cookie = quic or upgrade",
		       kf->release, miss->what, miss->since);
		return -EOPNOTSUPP;
	}
	if (kf->tc_assign_reuseport == 0 && any_cookie_service(cfg))
		rs_warn("kernel %s: bpf_sk_assign at TC refuses SO_REUSEPORT "
			"sockets (Linux 6.6 takes them): a cookie = quic "
			"backend must listen without SO_REUSEPORT, or its QUIC "
			"cookies fall back to IP affinity",
			kf->release);
	return 0;
}

bool daemon_kernel_cookie_refused(const struct daemon *d, size_t idx)
{
	const struct rs_backend_rt *rt = &d->st.bes[idx].sock;

	for (size_t a = 0; a < d->st.cfg.backends[idx].n_addrs; a++)
		if (rt->addr[a].has_socket &&
		    kernel_cookie_refused(&d->st.cfg, idx,
					  rt->addr[a].reuseport))
			return true;
	return false;
}

static json_t *feature(int v)
{
	return v < 0 ? json_null() : json_boolean(v == 1);
}

json_t *daemon_kernel_json(const struct daemon *d)
{
	const struct rs_kernel_features *kf = kernel_features();
	json_t *warn;

	if (!kf)
		return json_null();
	warn = json_array();
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
		"release", kf->release, "features", "sk_lookup",
		feature(kf->sk_lookup), "sk_assign", feature(kf->sk_assign),
		"bpf_loop", feature(kf->bpf_loop), "sockmap",
		feature(kf->sockmap), "sockops", feature(kf->sockops),
		"tc_sk_assign", feature(kf->tc_sk_assign),
		"tc_sk_assign_reuseport", feature(kf->tc_assign_reuseport),
		"crypto_kfunc", feature(kf->crypto_kfunc), "warnings", warn);
}
