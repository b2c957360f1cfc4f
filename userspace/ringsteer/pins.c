// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <jansson.h>

#include <ringsteer/abi.h>

#include "cli.h"
#include "links.h"
#include "pinned_words.h"
#include "pins.h"
#include "pins_found.h"
#include "dataplane.h"

/*
 * The daemon's RS_LINK_PIN_NAME (dataplane.h, out of the CLI's reach):
 * the link is what steers, so its pin is what "still steering" means.
 * tests/e2e/test_status_down.sh fails if the two part.
 */
#define LOOKUP_LINK_PIN "steer_lookup_link"

static int pin_fd(const char *bpffs, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", bpffs, name);
	return bpf_obj_get(path);
}

/* The pins' names, sorted; NULL with errno when the directory is not. */
static json_t *pin_names(const char *bpffs)
{
	struct dirent **list;
	json_t *names;
	int n = scandir(bpffs, &list, NULL, alphasort);

	if (n < 0)
		return NULL;
	names = json_array();
	for (int i = 0; i < n; i++) {
		if (list[i]->d_name[0] != '.')
			json_array_append_new(names,
					      json_string(list[i]->d_name));
		free(list[i]);
	}
	free(list);
	return names;
}

static json_t *link_info(const char *bpffs)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);
	int fd = pin_fd(bpffs, LOOKUP_LINK_PIN);
	json_t *o = json_null();

	if (fd < 0)
		return o;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		o = json_pack("{s:I, s:I, s:I}", "link_id", (json_int_t)info.id,
			      "prog_id", (json_int_t)info.prog_id, "netns_ino",
			      (json_int_t)info.netns.netns_ino);
	close(fd);
	return o;
}

/*
 * A map pinned as @name whose values are @value_size bytes and which has
 * @entries of them; -1 otherwise (another ABI's map is not read).
 */
static int array_fd(const char *bpffs, const char *name, __u32 value_size,
		    __u32 entries)
{
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info);
	int fd = pin_fd(bpffs, name);

	if (fd < 0)
		return -1;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    info.value_size != value_size || info.max_entries != entries) {
		close(fd);
		return -1;
	}
	return fd;
}

static json_t *abi_of(const char *bpffs)
{
	struct rs_meta meta;
	__u32 key = 0;
	int fd = array_fd(bpffs, "rs_meta", sizeof(meta), 1);
	json_t *v = json_null();

	if (fd < 0)
		return v;
	if (!bpf_map_lookup_elem(fd, &key, &meta))
		v = json_integer(meta.abi_version);
	close(fd);
	return v;
}

/* Enabled services by name; @enabled[id] for the backends' count. */
static json_t *services_of(const char *bpffs, bool *enabled)
{
	struct rs_service s;
	json_t *names;
	int fd = array_fd(bpffs, "rs_services", sizeof(s), RS_MAX_SERVICES);

	if (fd < 0)
		return json_null();
	names = json_array();
	for (__u32 id = 0; id < RS_MAX_SERVICES; id++) {
		if (bpf_map_lookup_elem(fd, &id, &s) || !s.enabled)
			continue;
		enabled[id] = true;
		json_array_append_new(
			names,
			json_stringn_nocheck(s.name,
					     strnlen(s.name, sizeof(s.name))));
	}
	close(fd);
	return names;
}

/*
 * Backends of enabled services, by the state the data plane acts on. A
 * word of an id no backend holds is all zeros: it has no points built.
 */
static json_t *backends_of(const char *bpffs, const bool *enabled)
{
	struct rs_backend b;
	json_int_t up = 0, drain = 0, down = 0;
	int fd = array_fd(bpffs, "rs_backends", sizeof(b), RS_MAX_BACKENDS);

	if (fd < 0)
		return json_null();
	for (__u32 id = 0; id < RS_MAX_BACKENDS; id++) {
		if (bpf_map_lookup_elem(fd, &id, &b) ||
		    b.service >= RS_MAX_SERVICES || !enabled[b.service] ||
		    (!b.max_points && !b.weight && b.state == RS_BACKEND_DOWN))
			continue;
		up += b.state == RS_BACKEND_UP;
		drain += b.state == RS_BACKEND_DRAIN;
		down += b.state == RS_BACKEND_DOWN;
	}
	close(fd);
	return json_pack("{s:I, s:I, s:I}", "up", up, "draining", drain, "down",
			 down);
}

/* Backend sockets in the SOCKMAP: what connections can be handed to. */
static json_t *sockets_of(const char *bpffs)
{
	json_int_t n = 0;
	__u64 cookie;
	int fd =
		array_fd(bpffs, "rs_sockets", sizeof(cookie), RS_SOCKMAP_SLOTS);

	if (fd < 0)
		return json_null();
	for (__u32 slot = 0; slot < RS_SOCKMAP_SLOTS; slot++)
		n += !bpf_map_lookup_elem(fd, &slot, &cookie);
	close(fd);
	return json_integer(n);
}

/*
 * What a start of this ringsteer's daemon over these pins does, decided
 * by the daemon's own rule (dp_start_kind(), pins_found.h: the maps
 * sized as the configuration sizes them, their words readable by field
 * name), so `status` and `ringsteerd --check` cannot disagree with it.
 */
static json_t *start_of(const char *bpffs, json_t *links, const char *config,
			bool fleet)
{
	char why[2 * PATH_MAX + 512];
	json_t *other = links_foreign(links);
	struct dp_pins_found f;
	const char *action = "refuse";
	enum dp_start_kind kind;

	dp_size_for(fleet);
	kind = dp_start_kind(bpffs, &f);
	switch (kind) {
	case DP_START_CREATE:
	case DP_START_ADOPT:
		action = "adopt";
		snprintf(why, sizeof(why),
			 "the pins are of this build's ABI and layout");
		break;
	case DP_START_RESIZE:
	case DP_START_UPGRADE:
		action = "upgrade";
		dp_start_beside(kind, &f, bpffs, why, sizeof(why));
		break;
	case DP_START_REFUSE:
		dp_pins_refusal(&f, bpffs, config, why, sizeof(why));
		break;
	default:
		action = "unchecked";
		snprintf(why, sizeof(why),
			 "this ringsteer cannot read what is pinned under %s "
			 "(run as root)",
			 bpffs);
	}
	/* One data plane per netns: a start refuses beside another. */
	if (other && strcmp(action, "refuse")) {
		action = "refuse";
		snprintf(why, sizeof(why),
			 "another ringsteer data plane is attached to this "
			 "network namespace (link %lld): a start refuses to "
			 "run a second one beside it. Remove it with "
			 "`ringsteerd --detach -c FILE` (FILE with its bpffs) "
			 "or `bpftool link detach id %lld`",
			 jint(other, "link_id"), jint(other, "link_id"));
	}
	return json_pack("{s:s, s:s}", "action", action, "why", why);
}

json_t *pins_read(const char *bpffs, const char *config, bool fleet)
{
	bool enabled[RS_MAX_SERVICES] = {false};
	json_t *names = pin_names(bpffs), *p, *link, *links;
	int fd;

	if (!names)
		return NULL;
	if (!json_array_size(names)) {
		json_decref(names);
		errno = ENOENT;
		return NULL;
	}
	/* A pin we may list but not open: say so, rather than "none". */
	fd = pin_fd(bpffs, "rs_meta");
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		json_decref(names);
		return NULL;
	}
	if (fd >= 0)
		close(fd);
	p = json_pack("{s:s, s:o, s:o, s:o}", "bpffs", bpffs, "pins", names,
		      "link", link_info(bpffs), "abi", abi_of(bpffs));
	json_object_set_new(p, "services", services_of(bpffs, enabled));
	json_object_set_new(p, "backends", backends_of(bpffs, enabled));
	json_object_set_new(p, "sockets", sockets_of(bpffs));
	link = json_object_get(p, "link");
	links = links_json(
		json_integer_value(json_object_get(link, "netns_ino")),
		(uint32_t)json_integer_value(json_object_get(link, "link_id")));
	json_object_set_new(p, "sk_lookup", links);
	json_object_set_new(p, "start", start_of(bpffs, links, config, fleet));
	return p;
}

void pins_print(const json_t *p)
{
	const json_t *link = json_object_get(p, "link");
	const json_t *svcs = json_object_get(p, "services");
	const json_t *bes = json_object_get(p, "backends");
	const json_t *abi = json_object_get(p, "abi"), *v;
	json_t *start = json_object_get(p, "start");
	const char *bpffs = json_string_value(json_object_get(p, "bpffs"));
	size_t i;

	if (json_is_object(link))
		printf("ringsteerd is not running, but the data plane pinned "
		       "under %s still steers new connections with the last "
		       "state it was given:\n",
		       bpffs);
	else
		printf("ringsteerd is not running, and nothing under %s "
		       "steers: the sk_lookup link is not pinned there\n",
		       bpffs);
	if (json_is_object(link))
		printf("  sk_lookup link: program id %lld in netns %lld\n",
		       json_integer_value(json_object_get(link, "prog_id")),
		       json_integer_value(json_object_get(link, "netns_ino")));
	if (json_is_integer(abi) && json_integer_value(abi) != RS_ABI_VERSION)
		printf("  abi %lld (this ringsteer's is %d: counts of another "
		       "layout are left out)\n",
		       json_integer_value(abi), RS_ABI_VERSION);
	if (json_is_array(svcs)) {
		printf("  %zu services:", json_array_size(svcs));
		json_array_foreach(svcs, i, v)
			printf(" %s", json_string_value(v));
		putchar('\n');
	}
	if (json_is_object(bes))
		printf("  backends: %lld up, %lld draining, %lld down; %lld "
		       "sockets in the SOCKMAP\n",
		       json_integer_value(json_object_get(bes, "up")),
		       json_integer_value(json_object_get(bes, "draining")),
		       json_integer_value(json_object_get(bes, "down")),
		       json_integer_value(json_object_get(p, "sockets")));
	printf("  pins:");
	json_array_foreach(json_object_get(p, "pins"), i, v)
		printf(" %s", json_string_value(v));
	putchar('\n');
	links_print(json_object_get(p, "sk_lookup"));
	printf("Without the daemon there are no health checks, reloads or "
	       "socket re-acquisition: a backend restarted meanwhile gets no "
	       "new client until ringsteerd runs again. ");
	if (!strcmp(jstr(start, "action"), "adopt"))
		printf("Starting it (systemctl start ringsteerd) adopts this "
		       "state and moves no client; `ringsteerd --detach` "
		       "removes it.\n");
	else if (!strcmp(jstr(start, "action"), "upgrade"))
		printf("Starting this ringsteer's daemon upgrades: %s.\n",
		       jstr(start, "why"));
	else
		printf("Starting this ringsteer's daemon refuses: %s.\n",
		       jstr(start, "why"));
}
