// SPDX-License-Identifier: MIT
#include "daemon.h"
#include "listen_check.h"
#include "local_route.h"
#include "log.h"

struct collect {
	bool log;
	json_t *into;
};

static void one(const char *line, void *arg)
{
	struct collect *c = arg;

	if (c->log)
		rs_warn("%s", line);
	if (c->into)
		json_array_append_new(c->into, json_string(line));
}

size_t listen_check(const struct daemon *d, bool log, json_t *into)
{
	struct collect c = {.log = log, .into = into};

	return rs_listen_not_local(&d->st.cfg, one, &c);
}
