#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The Grafana dashboard and the Prometheus alert rules in contrib/monitoring
# against a real daemon's /metrics: every ringsteer_* metric they use has
# samples in a scrape (a rename in metrics.c fails here, not on a wall
# screen); `promtool check rules` on the alerts and on the dashboard's
# expressions (its variables given values), `promtool check metrics` on the
# scrape, and the dashboard is valid JSON.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/netns.sh
. tests/e2e/lib.sh

DASH=contrib/monitoring/ringsteer-dashboard.json
RULES=contrib/monitoring/ringsteer-alerts.yml

e2e_setup mon

echo "# the files"
e2e_check "the dashboard is JSON with panels" jq -e '.panels | length > 5' "$DASH"
e2e_check "promtool check rules (alerts)" promtool check rules "$RULES"
# Each dashboard expression as a recording rule, with Grafana's variables
# replaced the way Grafana would: PromQL promtool can parse.
{
	echo "groups:"
	echo "  - name: dashboard"
	echo "    rules:"
	jq -r '.. | objects | .expr? | strings' "$DASH" | sed \
		-e 's/\$__rate_interval/1m/g; s/\$__range/1h/g' \
		-e 's/\$service/.*/g; s/\$instance/.*/g' |
		awk '{ gsub(/'\''/, "'\'''\''"); printf "      - record: dashboard:expr_%d\n        expr: '\''%s'\''\n", NR, $0 }'
} >"$OUT/dashboard-rules.yml"
e2e_check "promtool check rules (the dashboard's expressions)" \
	promtool check rules "$OUT/dashboard-rules.yml"

echo "# a scrape"
e2e_conf_global "metrics = 127.0.0.1:9464"
cat >>"$CONF" <<CONF
[service web]
protocol = tcp
listen = 198.18.0.10:80
vnodes = 64
sticky_ttl = 60
balance_factor = 1.5

[backend web-1]
service = web
address = 127.0.0.1:8081
interval = 200ms
CONF
rs_bg_start be1 rs_in_edge build/tools/rs_backend --name web-1 --tcp 127.0.0.1:8081
rs_bg_wait_ready be1
rs_bg_start daemon rs_in_edge build/ringsteerd -c "$CONF"
e2e_wait_for "$(rs_bg_err daemon)" "metrics on" 10
rs_in_edge curl -sf http://127.0.0.1:9464/metrics >"$OUT/metrics.txt"
e2e_check "promtool check metrics (the scrape)" promtool check metrics <"$OUT/metrics.txt"
# Names with at least one sample.
grep -v '^#' "$OUT/metrics.txt" | grep -o '^ringsteer_[a-z0-9_]*' | sort -u >"$OUT/exported"
echo "  $(wc -l <"$OUT/exported") metrics exported"

used() { grep -o 'ringsteer_[a-z0-9_]*' | sort -u; }
jq -r '.. | objects | (.expr?, .definition?) | strings' "$DASH" | used >"$OUT/dashboard-metrics"
sed -n 's/^ *expr: //p' "$RULES" | used >"$OUT/rules-metrics"
for f in dashboard rules; do
	missing=$(comm -23 "$OUT/$f-metrics" "$OUT/exported" | paste -sd' ')
	e2e_eq "every metric the $f uses is exported ($(wc -l <"$OUT/$f-metrics") used)" "$missing" ""
done

e2e_summary
