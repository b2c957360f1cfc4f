// SPDX-License-Identifier: MIT
/*
 * ringsteerd: loads the configuration, the data plane and the backends'
 * sockets, then keeps them in line. Stopping it leaves steering in place.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <ev.h>

#include "control.h"
#include "daemon.h"
#include "kernel.h"
#include "fd_budget.h"
#include "guard.h"
#include "upgrade.h"
#include "log.h"
#include "listen_check.h"
#include "pins_found.h"
#include "preflight.h"
#include "local_route.h"
#include "metrics.h"
#include "notify.h"
#include <ringsteer/version.h>

#define DEFAULT_CONFIG RS_DEFAULT_CONFIG

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ringsteerd [-c FILE] [-v|-vv|-q] [-t|--check | "
		"--detach]\n"
		"  -c, --config FILE  configuration (default " DEFAULT_CONFIG
		")\n"
		"  -t, --check        validate the configuration and exit\n"
		"      --detach       remove the data plane: sk_lookup link, "
		"TC filters\n"
		"                     on the configured interfaces, pins\n"
		"  -v, --verbose      debug logging; twice, libbpf's too\n"
		"  -q, --quiet        warnings and errors only\n"
		"      --version      print the version\n"
		"      --probe        print what this kernel can do and exit\n"
		"                     (1 if ringsteer cannot run on it)\n"
		"Signals: TERM/INT exit and leave steering in place; HUP "
		"reloads.\n");
}

/* --check's findings: under ExecStartPre= at journald priorities too. */
static void print_warning(const char *line)
{
	rs_log_print(stdout, RS_LOG_WARN, "warning: ", line);
}

static void print_warning_arg(const char *line, void *arg)
{
	(void)arg;
	print_warning(line);
}

/*
 * What a reload of this file would do to a running ring built with the
 * vnodes default of earlier versions: read from the pins, when there are
 * any and we may read them.
 */
static void check_running_vnodes(const struct rs_config *cfg)
{
	struct rs_backend *words = calloc(RS_MAX_BACKENDS, sizeof(*words));
	int err = words ? dp_read_pinned_backends(cfg->bpffs, words) : -ENOMEM;

	if (!err || err == -EPROTO)
		rs_config_default_vnodes(cfg, err ? NULL : words,
					 print_warning);
	else if (err != -ENOENT)
		printf("note: cannot read the running state under %s (%s): "
		       "what a reload moves is not checked\n",
		       cfg->bpffs, strerror(-err));
	free(words);
}

static void print_errors(const char *errs)
{
	if (*errs)
		rs_log_print(stderr, RS_LOG_ERROR, "", errs);
}

/*
 * --check prints a refused file's errors as they are, for a person; the
 * daemon logs them, so that each line carries its priority.
 */
static int load_config(const char *path, unsigned int flags, bool check,
		       struct rs_config *cfg)
{
	char errs[8192];
	int err;

	err = rs_config_load_flags(path, flags, cfg, errs, sizeof(errs));
	if (err && check)
		print_errors(errs);
	else if (err)
		rs_err("%s", errs);
	return err;
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
	char errs[8192] = "";

	(void)loop;
	(void)revents;
	rs_info("SIGHUP: reloading %s", d->config_path);
	if (notify_reload(d, false, errs, sizeof(errs))) {
		rs_err("reload refused: nothing changed: %s", errs);
		return;
	}
	rs_info("reload: done");
	daemon_fd_budget(d); /* more backends, other caps */
}

/* -vv: libbpf's own info and debug lines (hundreds at each load). */
static bool libbpf_verbose;

/*
 * libbpf's warnings are ours to show at any level (a map that did not
 * pin, a program the verifier refused); the rest is about libbpf's
 * internals and only asked for with -vv.
 */
static int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap)
{
	if (level == LIBBPF_WARN)
		rs_vlog(RS_LOG_WARN, fmt, ap);
	else if (libbpf_verbose)
		rs_vlog(RS_LOG_DEBUG, fmt, ap);
	return 0;
}

/* --probe: the start-up line, and whether the floor is met. */
static int probe_only(void)
{
	struct rs_kernel_features kf;
	const struct rs_kernel_need *miss;
	char line[512];

	libbpf_set_print(libbpf_log);
	rs_kernel_probe(&kf);
	rs_kernel_format(&kf, line, sizeof(line));
	printf("%s\n", line);
	miss = rs_kernel_missing(&kf);
	if (miss)
		printf("missing: %s (Linux %s)\n", miss->what, miss->since);
	return miss ? 1 : 0;
}

static int run(struct daemon *d)
{
	struct upgrade up;
	int err, have = 0;

	d->loop = EV_DEFAULT;
	d->started = ev_time();
	/* What the kernel can do, before anything is loaded or pinned. */
	err = daemon_kernel_check(&d->st.cfg);
	if (err) {
		notify_failed(err);
		return err;
	}
	/* Before the control socket, the metrics port or any pin. */
	err = guard_lock(d, false);
	if (err) {
		notify_failed(err);
		return err;
	}
	err = upgrade_prepare(d, &up);
	if (err) {
		notify_failed(err);
		return err;
	}
	err = daemon_start(d, &up);
	if (err) {
		notify_failed(err);
		daemon_stop(d);
		upgrade_abort(d, &up);
		return err;
	}
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		have += d->st.bes[i].has_socket;
	rs_info("ringsteerd %s (commit %s): %s sk_lookup link %s/%s; %zu "
		"services, %d/%zu backends with a socket",
		RS_VERSION, RS_COMMIT,
		d->dp.adopted_link ? "updated" : "attached", d->st.cfg.bpffs,
		RS_LINK_PIN_NAME, d->st.cfg.n_services, have,
		d->st.cfg.n_backends);
	if (d->tc.active) {
		int on = 0;

		for (size_t i = 0; i < d->tc.n; i++)
			on += d->tc.ifs[i].ifindex != 0;
		rs_info("steer_tc id %u: attached at TC ingress on %d/%zu "
			"interfaces",
			dp_tc_program_id(&d->dp), on, d->tc.n);
	}
	listen_check(d, true, NULL);
	err = daemon_fd_budget(d);
	if (!err)
		err = control_start(d);
	if (!err)
		err = metrics_start(d);
	if (err) {
		notify_failed(err);
		control_stop(d);
		daemon_stop(d);
		upgrade_abort(d, &up);
		return err;
	}
	/*
	 * Everything of ours is up: the earlier data plane of an upgrade,
	 * attached before ours and deciding so far, can go.
	 */
	upgrade_retire(d, &up);
	ev_signal_init(&d->sig_term, on_stop, SIGTERM);
	ev_signal_init(&d->sig_int, on_stop, SIGINT);
	ev_signal_init(&d->sig_hup, on_reload, SIGHUP);
	d->sig_hup.data = d;
	ev_signal_start(d->loop, &d->sig_term);
	ev_signal_start(d->loop, &d->sig_int);
	ev_signal_start(d->loop, &d->sig_hup);
	signal(SIGPIPE, SIG_IGN);
	/* Attached, pinned, answering: only now may systemd call it started. */
	notify_watchdog_start(d);
	notify_ready(d);
	ev_run(d->loop, 0);
	notify_stopping();
	notify_watchdog_stop(d);
	metrics_stop(d);
	control_stop(d);
	/* After `ringsteer detach` too: the detach itself is done already. */
	daemon_stop(d);
	return 0;
}

int main(int argc, char **argv)
{
	enum { OPT_CHECK = 256, OPT_DETACH, OPT_VERSION, OPT_PROBE };
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check", no_argument, NULL, OPT_CHECK},
		{"detach", no_argument, NULL, OPT_DETACH},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"version", no_argument, NULL, OPT_VERSION},
		{"probe", no_argument, NULL, OPT_PROBE},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct daemon d = {.config_path = DEFAULT_CONFIG};
	bool check = false, detach = false;
	int opt, err, verbose = 0;

	while ((opt = getopt_long(argc, argv, "c:tvqh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			d.config_path = optarg;
			break;
		case 't':
		case OPT_CHECK:
			check = true;
			break;
		case OPT_DETACH:
			detach = true;
			break;
		case 'v':
			rs_log_set_level(RS_LOG_DEBUG);
			libbpf_verbose = ++verbose > 1;
			break;
		case 'q':
			rs_log_set_level(RS_LOG_WARN);
			break;
		case OPT_VERSION:
			puts(RS_VERSION_LINE("ringsteerd"));
			return 0;
		case OPT_PROBE:
			return probe_only();
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
	if (load_config(d.config_path, detach ? RS_CONFIG_ALLOW_EMPTY : 0,
			check, &d.st.cfg))
		return 1;
	/* What --check estimates and probes is what this start makes. */
	dp_size_for(d.st.cfg.fleet.enabled);
	dp_size_flows(d.st.cfg.flow_table);
	if (check) {
		preflight_memory(&d.st.cfg);
		rs_config_empty_services(&d.st.cfg, print_warning);
		rs_config_fleet_ipv6_notes(&d.st.cfg, print_warning);
		rs_listen_not_local(&d.st.cfg, print_warning_arg, NULL);
		check_running_vnodes(&d.st.cfg);
		err = preflight_report(&d.st.cfg, d.config_path);
		if (!err)
			printf("ringsteerd: configuration file %s test is "
			       "successful\n",
			       d.config_path);
		rs_config_free(&d.st.cfg);
		return err ? 1 : 0;
	}
	libbpf_set_print(libbpf_log);
	if (detach) {
		/* The filters first: they are found through the pinned maps. */
		int tc_err;

		if (guard_lock(&d, true)) {
			rs_config_free(&d.st.cfg);
			return 1;
		}
		tc_err = daemon_tc_detach(&d.st.cfg);

		err = dp_detach(d.st.cfg.bpffs);
		if (err)
			rs_err("detach: %s: %s", d.st.cfg.bpffs,
			       strerror(-err));
		else
			rs_info("detached: removed %s", d.st.cfg.bpffs);
		rs_config_free(&d.st.cfg);
		return err || tc_err ? 1 : 0;
	}
	dp_pins_config(d.config_path); /* named in a refusal of the pins */
	err = run(&d);
	rs_config_free(&d.st.cfg);
	return err ? 1 : 0;
}
