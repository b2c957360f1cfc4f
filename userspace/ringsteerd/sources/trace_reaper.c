// SPDX-License-Identifier: MIT
/*
 * A trace whose tracer died. `ringsteer trace` puts the control word back
 * when it ends, but a tracer killed with SIGKILL cannot: the data plane
 * would go on writing events nobody reads (about 110 ns a matching
 * decision) and status would say a trace runs, until the next tracer
 * noticed. Checked once a second with the socket reconciliation.
 */
#include <errno.h>
#include <signal.h>

#include "daemon.h"
#include "log.h"

void daemon_trace_reap(struct daemon *d)
{
	struct rs_trace_ctl t = {0};

	if (dp_trace_ctl(&d->dp, &t) || !t.enabled || !t.owner)
		return;
	if (!kill((pid_t)t.owner, 0) || errno != ESRCH)
		return;
	if (!dp_trace_off(&d->dp, t.owner))
		rs_warn("trace: its tracer (pid %u) is gone without ending "
			"it; tracing off",
			t.owner);
}
