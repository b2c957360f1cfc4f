// SPDX-License-Identifier: MIT
/*
 * Maps sized by the configuration (dataplane.h, "Sizing"). The fleet's
 * tables are most of what a start pins, 34 MiB of flow memory alone, and
 * a host without [fleet] never reads or writes them: there they get one
 * entry each. The size is part of the pinned layout (dp_pins_probe()
 * compares it), so a start whose configuration needs another size meets
 * pins "of another layout" and takes the upgrade path, make-before-break,
 * like an ABI change; a reload cannot resize a map and is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "dataplane_internal.h"
#include "log.h"

/* Maps that only fleet mode uses; everything else keeps its build size. */
static const char *const fleet_only[] = {
	"rs_fleet_flows",
	"rs_fleet_peers",
	"rs_fleet_sip",
};

/* Default: a data plane sized for everything (tests, tools without one). */
static bool sized_for_fleet = true;

void dp_size_for(bool fleet)
{
	sized_for_fleet = fleet;
}

bool dp_sized_for_fleet(void)
{
	return sized_for_fleet;
}

static bool is_fleet_only(const char *name)
{
	for (size_t i = 0; i < sizeof(fleet_only) / sizeof(fleet_only[0]); i++)
		if (!strcmp(name, fleet_only[i]))
			return true;
	return false;
}

int dp_size_maps(struct bpf_object *obj)
{
	struct bpf_map *m;
	int err;

	if (sized_for_fleet)
		return 0;
	bpf_object__for_each_map(m, obj)
	{
		if (!is_fleet_only(bpf_map__name(m)))
			continue;
		err = bpf_map__set_max_entries(m, 1);
		if (err) {
			rs_err("bpf: cannot size %s: %s", bpf_map__name(m),
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

int dp_sizing_fits(struct rs_dataplane *dp, bool fleet, char *why, size_t len)
{
	const struct bpf_map *m = dp->skel->maps.rs_fleet_flows;

	if (!fleet || bpf_map__max_entries(m) >= RS_FLEET_FLOWS_MAX)
		return 0;
	snprintf(why, len,
		 "[fleet] needs the fleet's flow tables, which this data plane "
		 "was started without (rs_fleet_flows has %u entry, fleet "
		 "mode %u): restart ringsteerd to switch fleet mode on (the "
		 "start resizes them beside the running data plane, no "
		 "client moved)",
		 bpf_map__max_entries(m), (unsigned int)RS_FLEET_FLOWS_MAX);
	return -EXFULL;
}
