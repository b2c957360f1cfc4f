// SPDX-License-Identifier: MIT
/*
 * What every control command's file uses to read a request and shape a
 * reply; below the command table (control_cmds.c) and the server
 * (control.c), so both call down into it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "control_reply.h"

/*
 * Not cut to a fixed size: a refused reload's list of errors (up to 30
 * lines and a count) arrives whole, and never cut inside a character.
 */
json_t *err_reply(const char *fmt, ...)
{
	json_t *reply;
	va_list ap;
	char *msg;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return json_pack("{s:b, s:s}", "ok", 0, "error",
				 "out of memory");
	reply = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
	free(msg);
	return reply ? reply
		     : json_pack("{s:b, s:s}", "ok", 0, "error",
				 "an error that is not valid UTF-8");
}

const char *req_str(json_t *req, const char *key)
{
	return json_string_value(json_object_get(req, key));
}

const char *backend_name_of(struct daemon *d, uint32_t id)
{
	for (size_t i = 0; i < d->st.cfg.n_backends; i++)
		if (d->st.bes[i].id == id)
			return d->st.cfg.backends[i].name;
	return "?";
}
