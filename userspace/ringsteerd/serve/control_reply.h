/* SPDX-License-Identifier: MIT */
/* Reading a control request and shaping its reply (control_reply.c). */
#ifndef RS_CONTROL_REPLY_H
#define RS_CONTROL_REPLY_H

#include <stdint.h>

#include <jansson.h>

#include "daemon.h"

/* {"ok": false, "error": "<formatted>"}: every error reply looks so. */
json_t *err_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The string member @key of @req; NULL when absent or not a string. */
const char *req_str(json_t *req, const char *key);
/* Name of the backend with id @id, "?" when none has it. */
const char *backend_name_of(struct daemon *d, uint32_t id);

#endif /* RS_CONTROL_REPLY_H */
