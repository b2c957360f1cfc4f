#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End to end (issue 39): a reload keeps the schedule of the health checks
# it does not change. web-1 is checked every 60 s, web-2 every 200 ms.
# Before, a reload stopped every check and started it again spread over
# its interval, and web-1, first in the file, was probed again at once:
# a check due in a minute came right after every reload. Now, after a
# reload of the same file, web-2 goes on being checked (the condition
# waited for) while web-1's count stays where it was; a reload that
# changes web-1's check starts it anew, spread as before.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

e2e_setup rlc

write_conf() { # web-1's interval
	e2e_conf_global
	cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
vnodes = 64

[backend web-1]
service = web
address = 127.0.0.1:8081
interval = $1
timeout = 1s

[backend web-2]
service = web
address = 127.0.0.1:8082
interval = 200ms
CONF
}

# checks NAME: health checks of backend NAME so far.
checks() { rsjson backends | jq ".backends[] | select(.name == \"$1\") | .checks"; }
# more_checks NAME N: NAME has been checked at least N times.
more_checks() { (($(checks "$1") >= $2)); }

for i in 1 2; do
	rs_bg_start "be$i" rs_in_edge build/tools/rs_backend --name "web-$i" \
		--tcp "127.0.0.1:808$i"
	rs_bg_wait_ready "be$i"
done
write_conf 60s
rs_bg_start daemon rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon)" "control socket" 10
e2e_check "web-1 checked once at start" rs_until 10 more_checks web-1 1
c1=$(checks web-1)

echo "# a reload of the same file, three times"
for i in 1 2 3; do
	rsctl reload >/dev/null
	c2=$(checks web-2)
	e2e_check "reload $i: web-2 checked 3 times more" \
		rs_until 10 more_checks web-2 $((c2 + 3))
done
e2e_eq "web-1 not checked again before it is due" "$(checks web-1)" "$c1"

echo "# a reload that changes web-1's check starts it anew"
write_conf 59s
rsctl reload >/dev/null
e2e_check "web-1 checked again" rs_until 10 more_checks web-1 $((c1 + 1))

e2e_summary
