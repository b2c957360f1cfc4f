// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ringsteer/abi.h>

#include "dataplane.h"
#include "log.h"
#include "pins_found.h"
#include "preflight.h"

static void say_error(const char *line)
{
	rs_log_print(stderr, RS_LOG_ERROR, "error: ", line);
}

static int report_pins(const struct rs_config *cfg, const char *config_path)
{
	struct dp_pins_found f;
	char line[2 * PATH_MAX + 512];
	enum dp_start_kind kind = dp_start_kind(cfg->bpffs, &f);

	switch (kind) {
	case DP_START_CREATE:
		printf("pins: nothing under %s: a start creates the data plane "
		       "(ABI %d) and attaches it\n",
		       cfg->bpffs, RS_ABI_VERSION);
		return 0;
	case DP_START_ADOPT:
		printf("pins: %s holds a data plane of this build's ABI "
		       "(%d)%s: a start adopts it and moves no client\n",
		       cfg->bpffs, RS_ABI_VERSION,
		       f.link ? ", attached and steering" : "");
		return 0;
	case DP_START_RESIZE:
	case DP_START_UPGRADE:
		dp_start_beside(kind, &f, cfg->bpffs, line, sizeof(line));
		printf("pins: %s\n", line);
		return 0;
	case DP_START_REFUSE:
		dp_pins_refusal(&f, cfg->bpffs, config_path, line,
				sizeof(line));
		say_error(line);
		return -EPROTO;
	case DP_START_UNCHECKED:
	default:
		if (f.kind == DP_PINS_UNREADABLE)
			printf("note: cannot read the pins under %s (%s): what "
			       "a start finds there is not checked (run as "
			       "root)\n",
			       cfg->bpffs, strerror(f.err));
		else
			printf("note: cannot read this build's own program: "
			       "the pins under %s are not checked\n",
			       cfg->bpffs);
		return 0;
	}
}

/* Every sk_lookup program of this netns; another ringsteer's refuses. */
static int report_netns(const struct rs_config *cfg)
{
	struct rs_sk_lookup_link all[16], other;
	char line[2 * PATH_MAX + 512];
	size_t n, n_other;
	int err = rs_sk_lookup_links(0, all, 16, &n);

	if (err) {
		printf("note: cannot list the sk_lookup programs of this "
		       "network namespace (%s): another data plane here is "
		       "not checked (run as root)\n",
		       strerror(-err));
		return 0;
	}
	printf("netns: %zu sk_lookup program%s attached here\n", n,
	       n == 1 ? "" : "s");
	for (size_t i = 0; i < n && i < 16; i++) {
		rs_sk_lookup_link_format(&all[i], line, sizeof(line));
		printf("  %s\n", line);
	}
	if (dp_foreign_links(cfg->bpffs, &other, 1, &n_other) || !n_other)
		return 0;
	dp_foreign_refusal(&other, line, sizeof(line));
	say_error(line);
	return -EEXIST;
}

int preflight_report(const struct rs_config *cfg, const char *config_path)
{
	int err = report_pins(cfg, config_path);
	int err2 = report_netns(cfg);

	printf("limits: %zu of %d services, %zu of %d backends (the data "
	       "plane's maps: ringsteer.conf(5) LIMITS)\n",
	       cfg->n_services, RS_MAX_SERVICES, cfg->n_backends,
	       RS_MAX_BACKENDS);
	return err ? err : err2;
}

void preflight_memory(const struct rs_config *cfg)
{
	struct rs_memory_fixed x = {0};
	int err = dp_pinned_memory(&x.maps, &x.fleet_maps, &x.gen_maps);

	if (err) {
		printf("note: cannot read this build's own program (%s): only "
		       "the services' memory is estimated\n",
		       strerror(-err));
		rs_config_memory_report(cfg, NULL, stdout);
		return;
	}
	if (cfg->fleet.enabled)
		x.fleet_table = dp_fleet_table_memory();
	rs_config_memory_report(cfg, &x, stdout);
}
