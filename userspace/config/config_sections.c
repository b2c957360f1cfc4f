// SPDX-License-Identifier: MIT
/*
 * Section headers. [global] is one struct, services and backends are
 * arrays that grow; each header starts an entry from its defaults and
 * tells the key handler which keys apply. A bad or duplicate header
 * leaves its keys unread rather than filed under the section before it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* reallocarray */
#endif
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

static void *grow(void *arr, size_t *cap, size_t n, size_t size)
{
	size_t new_cap;
	void *q;

	if (n < *cap)
		return arr;
	new_cap = *cap ? *cap * 2 : 8;
	q = reallocarray(arr, new_cap, size);
	if (q) {
		memset((char *)q + *cap * size, 0, (new_cap - *cap) * size);
		*cap = new_cap;
	}
	return q;
}

static void enter(struct parser *p, enum sect_kind kind, void *obj,
		  int *key_line, bool *key_bad, const struct key_def *keys)
{
	p->kind = kind;
	p->obj = obj;
	p->key_line = key_line;
	p->key_bad = key_bad;
	p->keys = keys;
}

static void begin_global(struct parser *p)
{
	if (p->global.line) {
		cfg_report(p, p->line, p->label, NULL,
			   "duplicate global section (first defined at %s:%d)",
			   p->file, p->global.line);
		return;
	}
	p->global.line = p->line;
	enter(p, SECT_GLOBAL, &p->global, p->global.key_line, p->global.key_bad,
	      cfg_global_keys);
}

/*
 * A named section type, [service NAME] or [backend NAME]: what
 * begin_entry() needs to know of its entries (svc_entry, be_entry).
 */
struct entry_type {
	enum sect_kind kind;
	const char *noun; /* for messages */
	const struct key_def *keys;
	const void *defaults; /* a new entry, but for its name and line */
	size_t size;	      /* of one entry */
	size_t max;	      /* entries the data plane has room for */
	/* where an entry has conf.name, conf.line, key_line[] and key_bad[] */
	size_t name, line, key_line, key_bad;
};

#define ENTRY_TYPE(type, sect, what, key_defs, initial, limit)                 \
	{                                                                      \
		.kind = sect, .noun = what, .keys = key_defs,                  \
		.defaults = &initial, .size = sizeof(struct type),             \
		.max = limit, .name = offsetof(struct type, conf.name),        \
		.line = offsetof(struct type, conf.line),                      \
		.key_line = offsetof(struct type, key_line),                   \
		.key_bad = offsetof(struct type, key_bad),                     \
	}

static const struct entry_type service_entry =
	ENTRY_TYPE(svc_entry, SECT_SERVICE, "service", cfg_service_keys,
		   cfg_service_defaults, RS_MAX_SERVICES);
static const struct entry_type backend_entry =
	ENTRY_TYPE(be_entry, SECT_BACKEND, "backend", cfg_backend_keys,
		   cfg_backend_defaults, RS_MAX_BACKENDS);

/*
 * Starts the section [@t->noun @name] as a new last entry of @arr, which
 * has *@n entries and room for *@cap: refuses a name an earlier entry has,
 * grows the array as needed, fills the new entry (@t->defaults, the name
 * and the header line) and enters the section. Returns the array, which
 * may have moved; NULL, with nothing changed, when the name is taken or
 * there are @t->max entries already (reported), or memory runs out
 * (p->nomem).
 */
static void *begin_entry(struct parser *p, const struct entry_type *t,
			 const char *name, void *arr, size_t *n, size_t *cap)
{
	char *e;
	size_t i;

	for (i = 0; i < *n; i++) {
		e = (char *)arr + i * t->size;
		if (strcmp(e + t->name, name) == 0) {
			cfg_report(p, p->line, p->label, NULL,
				   "duplicate %s '%s' (first defined at %s:%d)",
				   t->noun, name, p->file,
				   *(int *)(e + t->line));
			return NULL;
		}
	}
	/*
	 * Refused here, not after the last line: entries past the limit are
	 * never stored, so a file of headers cannot grow the parser without
	 * bound.
	 */
	if (*n == t->max) {
		cfg_report(p, p->line, p->label, NULL, "too many %ss (max %zu)",
			   t->noun, t->max);
		return NULL;
	}
	arr = grow(arr, cap, *n, t->size);
	if (!arr) {
		p->nomem = true;
		return NULL;
	}
	e = (char *)arr + (*n)++ * t->size;
	memcpy(e, t->defaults, t->size);
	strcpy(e + t->name, name);
	*(int *)(e + t->line) = p->line;
	enter(p, t->kind, e, (int *)(e + t->key_line), (bool *)(e + t->key_bad),
	      t->keys);
	return arr;
}

static void begin_service(struct parser *p, const char *name)
{
	struct svc_entry *svcs = begin_entry(p, &service_entry, name, p->svcs,
					     &p->n_svcs, &p->cap_svcs);

	if (svcs)
		p->svcs = svcs;
}

static void begin_backend(struct parser *p, const char *name)
{
	struct be_entry *bes = begin_entry(p, &backend_entry, name, p->bes,
					   &p->n_bes, &p->cap_bes);

	if (bes)
		p->bes = bes;
}

/* @s is a whole trimmed line starting with '['. */
void cfg_begin_section(struct parser *p, char *s)
{
	char *end = strchr(s, ']');
	char *type, *name, *rest;

	enter(p, SECT_SKIP, NULL, NULL, NULL, NULL);
	snprintf(p->label, sizeof(p->label), "%s", s + 1);
	if (!end) {
		cfg_report(p, p->line, NULL, NULL,
			   "section header without closing ']'");
		return;
	}
	*end = '\0';
	rest = cfg_trim(end + 1);
	type = cfg_trim(s + 1);
	snprintf(p->label, sizeof(p->label), "%s", type);
	if (*rest && *rest != ';' && *rest != '#') {
		cfg_report(p, p->line, p->label, NULL,
			   "unexpected text after ']': '%s'", rest);
		return;
	}
	name = type + strcspn(type, " \t");
	if (*name) {
		*name = '\0';
		name = cfg_trim(name + 1);
	}
	if (*name)
		snprintf(p->label, sizeof(p->label), "%s %s", type, name);

	if (strcmp(type, "global") == 0) {
		if (*name)
			cfg_report(p, p->line, p->label, NULL,
				   "the global section takes no name");
		else
			begin_global(p);
		return;
	}
	if (strcmp(type, "service") && strcmp(type, "backend")) {
		cfg_report(
			p, p->line, p->label, NULL,
			"unknown section type '%s' (expected global, service "
			"or backend)",
			type);
		return;
	}
	if (!cfg_valid_name(name)) {
		cfg_report(p, p->line, p->label, NULL, "bad %s name '%s': %s",
			   type, name, NAME_RULE);
		return;
	}
	if (type[0] == 's')
		begin_service(p, name);
	else
		begin_backend(p, name);
}
