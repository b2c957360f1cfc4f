// SPDX-License-Identifier: MIT
/*
 * ringsteerd: loads the configuration, the data plane and the backends'
 * sockets, then keeps them in line. Stopping it leaves steering in place.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <bpf/libbpf.h>

#include "config.h"
#include "config_apply.h"
#include "dataplane.h"
#include "log.h"
#include "version.h"

#define DEFAULT_CONFIG	   "/etc/ringsteer/ringsteer.conf"
#define RECONCILE_INTERVAL 1.0

struct daemon {
	const char *config_path;
	struct rs_config cfg;
	struct rs_dataplane dp;
	struct rs_backend_rt *rt;
	ev_timer reconcile;
	ev_signal sig_term, sig_int, sig_hup;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: ringsteerd [-c FILE] [-v] [--check | --detach]\n"
		   "  -c, --config FILE  configuration (default " DEFAULT_CONFIG
		   ")\n"
		   "      --check        validate the configuration and exit\n"
		   "      --detach       remove the data plane, its link and "
		   "pins\n"
		   "  -v, --verbose      debug logging\n"
		   "  -q, --quiet        warnings and errors only\n"
		   "      --version      print the version\n");
}

static int load_config(const char *path, struct rs_config *cfg)
{
	char errs[8192];
	int err;

	err = rs_config_load(path, cfg, errs, sizeof(errs));
	if (err)
		fprintf(stderr, "%s%s", errs,
			errs[0] && errs[strlen(errs) - 1] != '\n' ? "\n" : "");
	return err;
}

static void on_reconcile(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct daemon *d = w->data;

	(void)loop;
	(void)revents;
	sockets_reconcile(&d->dp, &d->cfg, d->rt);
}

static void on_stop(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	rs_info("signal %d: exiting; the data plane stays attached", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

/* A bad file is refused as a whole and the running state carries on. */
static void on_reload(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct daemon *d = w->data;
	struct rs_backend_rt *rt;
	struct rs_config next;

	(void)loop;
	(void)revents;
	rs_info("SIGHUP: reloading %s", d->config_path);
	if (load_config(d->config_path, &next)) {
		rs_err("reload refused: configuration has errors; nothing "
		       "changed");
		return;
	}
	rt = calloc(next.n_backends ? next.n_backends : 1, sizeof(*rt));
	if (!rt) {
		rs_config_free(&next);
		return;
	}
	if (config_apply(&d->dp, &next)) {
		rs_err("reload: applying the new configuration failed");
		free(rt);
		rs_config_free(&next);
		return;
	}
	rs_config_free(&d->cfg);
	free(d->rt);
	d->cfg = next;
	d->rt = rt;
	sockets_reconcile(&d->dp, &d->cfg, d->rt);
	rs_info("reload: done");
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap)
{
	if (level == LIBBPF_DEBUG && rs_log_get_level() < RS_LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int run(struct daemon *d)
{
	struct ev_loop *loop = EV_DEFAULT;
	int err, have;

	d->rt = calloc(d->cfg.n_backends ? d->cfg.n_backends : 1,
		       sizeof(*d->rt));
	if (!d->rt)
		return -ENOMEM;
	err = dp_open(&d->dp, d->cfg.bpffs);
	if (err)
		return err;
	err = config_apply(&d->dp, &d->cfg);
	if (err) {
		rs_err("applying %s to the data plane failed", d->config_path);
		goto out;
	}
	have = sockets_reconcile(&d->dp, &d->cfg, d->rt);
	err = dp_attach(&d->dp);
	if (err)
		goto out;
	rs_info("ringsteerd %s: %s sk_lookup link %s/%s; %zu services, %d/%zu "
		"backends with a socket",
		RS_VERSION, d->dp.adopted_link ? "updated" : "attached",
		d->cfg.bpffs, RS_LINK_PIN_NAME, d->cfg.n_services, have,
		d->cfg.n_backends);

	ev_timer_init(&d->reconcile, on_reconcile, RECONCILE_INTERVAL,
		      RECONCILE_INTERVAL);
	d->reconcile.data = d;
	ev_timer_start(loop, &d->reconcile);
	ev_signal_init(&d->sig_term, on_stop, SIGTERM);
	ev_signal_init(&d->sig_int, on_stop, SIGINT);
	ev_signal_init(&d->sig_hup, on_reload, SIGHUP);
	d->sig_hup.data = d;
	ev_signal_start(loop, &d->sig_term);
	ev_signal_start(loop, &d->sig_int);
	ev_signal_start(loop, &d->sig_hup);
	ev_run(loop, 0);
out:
	dp_close(&d->dp);
	free(d->rt);
	return err;
}

int main(int argc, char **argv)
{
	enum { OPT_CHECK = 256, OPT_DETACH, OPT_VERSION };
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check", no_argument, NULL, OPT_CHECK},
		{"detach", no_argument, NULL, OPT_DETACH},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"version", no_argument, NULL, OPT_VERSION},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct daemon d = {.config_path = DEFAULT_CONFIG};
	bool check = false, detach = false;
	int opt, err;

	while ((opt = getopt_long(argc, argv, "c:vqh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			d.config_path = optarg;
			break;
		case OPT_CHECK:
			check = true;
			break;
		case OPT_DETACH:
			detach = true;
			break;
		case 'v':
			rs_log_set_level(RS_LOG_DEBUG);
			break;
		case 'q':
			rs_log_set_level(RS_LOG_WARN);
			break;
		case OPT_VERSION:
			printf("ringsteerd %s\n", RS_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (check && detach)) {
		usage(stderr);
		return 2;
	}
	if (load_config(d.config_path, &d.cfg))
		return 1;
	if (check) {
		printf("ringsteerd: configuration file %s test is successful\n",
		       d.config_path);
		rs_config_free(&d.cfg);
		return 0;
	}
	libbpf_set_print(libbpf_log);
	if (detach) {
		err = dp_detach(d.cfg.bpffs);
		if (err)
			rs_err("detach: %s: %s", d.cfg.bpffs, strerror(-err));
		else
			rs_info("detached: removed %s", d.cfg.bpffs);
		rs_config_free(&d.cfg);
		return err ? 1 : 0;
	}
	err = run(&d);
	rs_config_free(&d.cfg);
	return err ? 1 : 0;
}
