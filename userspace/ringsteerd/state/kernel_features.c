// SPDX-License-Identifier: MIT
#include "kernel_features.h"

#include "config.h"
#include "log.h"

static struct rs_kernel_features features;
static bool probed;

const struct rs_kernel_features *kernel_features_probe(bool *first)
{
	*first = !probed;
	if (!probed) {
		rs_kernel_probe(&features);
		probed = true;
	}
	return &features;
}

const struct rs_kernel_features *kernel_features(void)
{
	return probed ? &features : NULL;
}

bool kernel_cookie_refused(const struct rs_config *cfg, size_t idx,
			   bool reuseport)
{
	const struct rs_backend_conf *bc = &cfg->backends[idx];

	return reuseport && probed && features.tc_assign_reuseport == 0 &&
	       cfg->services[bc->service].cookie == RS_COOKIE_QUIC;
}

void kernel_note_socket(const struct rs_config *cfg, size_t idx, bool reuseport)
{
	const struct rs_backend_conf *bc = &cfg->backends[idx];

	if (kernel_cookie_refused(cfg, idx, reuseport))
		rs_warn("backend %s: its socket has SO_REUSEPORT, which "
			"bpf_sk_assign at TC refuses on kernel %s (before "
			"6.6): QUIC cookies of service %s cannot reach it and "
			"fall back to IP affinity; listen without SO_REUSEPORT "
			"or run Linux 6.6 or newer",
			bc->name, features.release,
			cfg->services[bc->service].name);
}
