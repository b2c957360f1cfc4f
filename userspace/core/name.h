/* SPDX-License-Identifier: MIT */
/*
 * The one rule for names: services, backends and fleet members, whether
 * from the configuration or read from etcd. 1..RS_NAME_MAX-1 characters
 * of letters, digits, '.', '_' and '-', not beginning with '-', so a name
 * is safe in a log line, a metric label, an etcd key, a bpftool dump and a
 * command line alike.
 */
#ifndef RS_NAME_H
#define RS_NAME_H

#include <stdbool.h>

bool rs_name_ok(const char *s);

#endif /* RS_NAME_H */
