// SPDX-License-Identifier: MIT
/*
 * The reader's events into entries. [global] is one struct, services and
 * backends are arrays that grow; each header starts an entry from its
 * defaults and says which keys apply, and each key goes to its setter
 * (config_global.c, config_service.c, config_backend.c). A bad or
 * duplicate header leaves its keys unread rather than filed under the
 * section before it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* reallocarray */
#endif
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"
#include "config_reader.h"
#include "config_sections.h"

enum sect_kind {
	SECT_NONE, /* before the first header */
	SECT_SKIP, /* bad or duplicate header: its keys are not looked at */
	SECT_GLOBAL,
	SECT_SERVICE,
	SECT_BACKEND,
	SECT_FLEET,
};

/* What filling the entries needs between two events. */
struct sections {
	struct cfg_entries *out;
	struct cfg_report *report;
	int line; /* of the event being handled */

	/* the section the reader saw last */
	enum sect_kind kind;
	void *obj;
	int *key_line;
	bool *key_bad;
	const struct key_def *keys;
	char label[LABEL_MAX];
	unsigned int over_said; /* 1 << kind: "too many" said for that kind */
};

/*
 * Room for one more. Not realloc(): a service holds its QUIC-LB keys, and
 * the old array is wiped before it is freed, so no copy of a key is left
 * behind in the heap. NULL when out of memory (@arr is then untouched).
 */
static void *grow(void *arr, size_t *cap, size_t n, size_t size)
{
	size_t new_cap;
	void *q;

	if (n < *cap)
		return arr;
	new_cap = *cap ? *cap * 2 : 8;
	q = calloc(new_cap, size);
	if (!q)
		return NULL;
	if (arr) {
		memcpy(q, arr, *cap * size);
		explicit_bzero(arr, *cap * size);
		free(arr);
	}
	*cap = new_cap;
	return q;
}

static void enter(struct sections *p, enum sect_kind kind, void *obj,
		  int *key_line, bool *key_bad, const struct key_def *keys)
{
	p->kind = kind;
	p->obj = obj;
	p->key_line = key_line;
	p->key_bad = key_bad;
	p->keys = keys;
}

static void begin_global(struct sections *p)
{
	struct global_entry *g = &p->out->global;

	if (g->line) {
		cfg_report(p->report, p->line, p->label, NULL,
			   "duplicate global section (first defined at %s:%d)",
			   p->report->file, g->line);
		return;
	}
	g->line = p->line;
	enter(p, SECT_GLOBAL, g, g->key_line, g->key_bad, cfg_global_keys);
}

static void begin_fleet(struct sections *p)
{
	struct fleet_entry *f = &p->out->fleet;

	if (f->line) {
		cfg_report(p->report, p->line, p->label, NULL,
			   "duplicate fleet section (first defined at %s:%d)",
			   p->report->file, f->line);
		return;
	}
	f->line = p->line;
	f->conf.enabled = true;
	enter(p, SECT_FLEET, f, f->key_line, f->key_bad, cfg_fleet_keys);
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
 * (the report's nomem).
 */
static void *begin_entry(struct sections *p, const struct entry_type *t,
			 const char *name, void *arr, size_t *n, size_t *cap)
{
	char *e;
	size_t i;

	for (i = 0; i < *n; i++) {
		e = (char *)arr + i * t->size;
		if (strcmp(e + t->name, name) == 0) {
			cfg_report(p->report, p->line, p->label, NULL,
				   "duplicate %s '%s' (first defined at %s:%d)",
				   t->noun, name, p->report->file,
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
		/* Once: a file of 10,000 backends is one mistake. */
		if (!(p->over_said & 1u << t->kind))
			cfg_report(p->report, p->line, p->label, NULL,
				   "too many %ss (max %zu): this [%s] and "
				   "every later one are refused",
				   t->noun, t->max, t->noun);
		p->over_said |= 1u << t->kind;
		return NULL;
	}
	arr = grow(arr, cap, *n, t->size);
	if (!arr) {
		p->report->nomem = true;
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

static void begin_service(struct sections *p, const char *name)
{
	struct cfg_entries *e = p->out;
	struct svc_entry *svcs = begin_entry(p, &service_entry, name, e->svcs,
					     &e->n_svcs, &e->cap_svcs);

	if (svcs)
		e->svcs = svcs;
}

static void begin_backend(struct sections *p, const char *name)
{
	struct cfg_entries *e = p->out;
	struct be_entry *bes = begin_entry(p, &backend_entry, name, e->bes,
					   &e->n_bes, &e->cap_bes);

	if (bes)
		e->bes = bes;
}

/* @s is a whole trimmed line starting with '['. */
static void begin_section(struct sections *p, char *s)
{
	char *end = strchr(s, ']');
	char *type, *name, *rest;

	enter(p, SECT_SKIP, NULL, NULL, NULL, NULL);
	snprintf(p->label, sizeof(p->label), "%s", s + 1);
	if (!end) {
		cfg_report(p->report, p->line, NULL, NULL,
			   "section header without closing ']'");
		return;
	}
	*end = '\0';
	rest = cfg_trim(end + 1);
	type = cfg_trim(s + 1);
	snprintf(p->label, sizeof(p->label), "%s", type);
	if (*rest && *rest != ';' && *rest != '#') {
		cfg_report(p->report, p->line, p->label, NULL,
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
			cfg_report(p->report, p->line, p->label, NULL,
				   "the global section takes no name");
		else
			begin_global(p);
		return;
	}
	if (strcmp(type, "fleet") == 0) {
		if (*name)
			cfg_report(p->report, p->line, p->label, NULL,
				   "the fleet section takes no name");
		else
			begin_fleet(p);
		return;
	}
	if (strcmp(type, "service") && strcmp(type, "backend")) {
		cfg_report(p->report, p->line, p->label, NULL,
			   "unknown section type '%s' (expected global, fleet, "
			   "service or backend)",
			   type);
		return;
	}
	if (!cfg_valid_name(name)) {
		cfg_report(p->report, p->line, p->label, NULL,
			   "bad %s name '%s': %s", type, name, NAME_RULE);
		return;
	}
	if (type[0] == 's')
		begin_service(p, name);
	else
		begin_backend(p, name);
}

/* The key on the current line, in the current section. */
static void set_key(struct sections *p, const char *name, const char *value)
{
	struct cfg_key k = {
		.report = p->report,
		.line = p->line,
		.label = p->label,
		.value = value,
	};
	const struct key_def *def;
	size_t n_reported;
	int i;

	if (p->kind == SECT_SKIP)
		return;
	if (p->kind == SECT_NONE) {
		cfg_report(p->report, p->line, NULL, name,
			   "key outside of any section");
		return;
	}
	for (def = p->keys; def->name; def++)
		if (strcmp(def->name, name) == 0)
			break;
	if (!def->name) {
		cfg_report(p->report, p->line, p->label, name, "unknown key");
		return;
	}
	k.def = def;
	i = (int)(def - p->keys);
	if (p->key_line[i] && !def->repeatable) {
		cfg_key_error(&k, "duplicate key (first set at %s:%d)",
			      p->report->file, p->key_line[i]);
		return;
	}
	if (!p->key_line[i])
		p->key_line[i] = p->line;
	if (*value == '\0') {
		cfg_key_error(&k, "empty value");
		p->key_bad[i] = true;
		return;
	}
	n_reported = p->report->n_reported;
	def->set(&k, p->obj, value);
	if (p->report->n_reported != n_reported)
		p->key_bad[i] = true;
}

static void on_event(void *user, struct cfg_event *ev)
{
	struct sections *p = user;

	p->line = ev->line;
	switch (ev->kind) {
	case CFG_EV_SECTION:
		begin_section(p, ev->text);
		break;
	case CFG_EV_KEY:
		set_key(p, ev->key, ev->value);
		break;
	case CFG_EV_BAD_LINE:
		/* Named after its section only when that one is being read. */
		cfg_report(p->report, p->line,
			   p->kind > SECT_SKIP ? p->label : NULL, NULL, "%s",
			   ev->text);
		break;
	}
}

int cfg_collect(const char *text, size_t len, struct cfg_report *r,
		struct cfg_entries *out)
{
	struct sections p = {.out = out, .report = r};

	return cfg_read(text, len, r, on_event, &p);
}

void cfg_entries_free(struct cfg_entries *e)
{
	free(e->svcs);
	free(e->bes);
	e->svcs = NULL;
	e->bes = NULL;
	e->n_svcs = e->n_bes = e->cap_svcs = e->cap_bes = 0;
}
