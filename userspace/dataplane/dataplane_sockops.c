// SPDX-License-Identifier: MIT
/*
 * steer_sockops on the cgroup2 hierarchy: it counts the connections
 * accepted by the backends' listeners (rs_listen) and writes their sticky
 * entries when the handshake completes. A cgroup-attached program sees the
 * sockets of every cgroup below its own: at the root, every socket of the
 * host, whatever process or network namespace owns it; at the cgroup
 * `[global] sockops_cgroup` names (the slice the caches run in, say), only
 * the sockets created there, which the backends' listeners and so their
 * accepted children must be (an accepted socket has its listener's
 * cgroup). Every other TCP socket of the host then never runs it.
 *
 * The hierarchy is reached through an existing cgroup2 mount; hosts that
 * mount only cgroup v1 have none, so the daemon mounts it for the moment
 * of the attach (in a fresh directory under its run directory) and
 * unmounts it at once: the link holds the cgroup, a mount is only a way to
 * name it. The link is pinned next to steer_lookup's, so steering
 * survives the daemon, a restart swaps the program behind it (or moves it
 * when sockops_cgroup changed), and --detach removes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup2.h"
#include "cgroup_path.h"
#include "dataplane_internal.h"
#include "log.h"
#include "steer_sockops.skel.h"

static int sockops_load(struct rs_dataplane *dp)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts,
		    .pin_root_path = dp->root[0] ? dp->root : NULL);
	int err;

	dp->sockops_skel = steer_sockops_bpf__open_opts(&opts);
	if (!dp->sockops_skel)
		return -errno;
	dp_share_unpinned(dp, dp->sockops_skel->obj);
	err = steer_sockops_bpf__load(dp->sockops_skel);
	if (!err)
		err = dp_check_shared(dp, dp->sockops_skel->obj,
				      "steer_sockops");
	if (err) {
		steer_sockops_bpf__destroy(dp->sockops_skel);
		dp->sockops_skel = NULL;
	}
	return err;
}

/*
 * The cgroup @path names (as /proc/PID/cgroup shows it: "/" is the root)
 * as an fd, and its id (the cgroup2 directory's inode number, which
 * bpf_link_info and sock_diag report). A cgroup that does not exist falls
 * back to the root, logged here (the root covers every socket), and @path
 * becomes "/".
 */
static int cgroup_open(int root_fd, char *path, uint64_t *id)
{
	struct stat st;
	int fd;

	fd = path[1] ? openat(root_fd, path + 1,
			      O_RDONLY | O_DIRECTORY | O_CLOEXEC)
		     : -1;
	if (path[1] && fd < 0) {
		rs_warn("bpf: sockops_cgroup %s: %s under the cgroup2 root; "
			"steer_sockops goes to the root instead, where every "
			"TCP socket of the host runs it",
			path, strerror(errno));
		/* Where it is attached, for status and the scope check. */
		strcpy(path, "/");
	}
	if (fd < 0)
		fd = dup(root_fd);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*id = st.st_ino;
	return fd;
}

/* A new link at the cgroup @cg_fd, pinned as @pin when there are pins. */
static int sockops_link_new(struct rs_dataplane *dp, int cg_fd, const char *pin)
{
	struct bpf_link *link;
	int err;

	link = bpf_program__attach_cgroup(dp->sockops_skel->progs.steer_sockops,
					  cg_fd);
	err = libbpf_get_error(link);
	if (err)
		return err;
	if (pin) {
		err = bpf_link__pin(link, pin);
		if (err) {
			bpf_link__destroy(link);
			return err;
		}
	}
	dp->sockops_link_fd = dup(bpf_link__fd(link));
	/* Pinned (or held by the fd): the kernel object outlives this. */
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	return dp->sockops_link_fd < 0 ? -errno : 0;
}

static uint64_t link_cgroup_id(int link_fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(link_fd, &info, &len) ||
	    info.type != BPF_LINK_TYPE_CGROUP)
		return 0;
	return info.cgroup.cgroup_id;
}

/*
 * A new link at @cg_fd takes the pin (when there are pins) first, then
 * the link @old_fd (attached at cgroup @was) is detached and closed. In
 * between, sockets under both run the program twice, which counts nothing
 * twice (RS_CONN_COUNTED) and writes the same sticky entry.
 */
static int sockops_link_move(struct rs_dataplane *dp, int old_fd, uint64_t was,
			     int cg_fd, uint64_t cg_id, const char *cg_path)
{
	char pin[PATH_MAX + 32], next[PATH_MAX + 40];
	int err;

	dp->sockops_link_fd = -1;
	if (dp->root[0]) {
		snprintf(pin, sizeof(pin), "%s/%s", dp->root,
			 RS_SOCKOPS_LINK_PIN_NAME);
		/* bpffs refuses names with a dot (EPERM). */
		snprintf(next, sizeof(next), "%s_next", pin);
		unlink(next);
	}
	err = sockops_link_new(dp, cg_fd, dp->root[0] ? next : NULL);
	if (!err && dp->root[0] && rename(next, pin)) {
		err = -errno;
		unlink(next);
	}
	if (err) {
		if (dp->sockops_link_fd >= 0) {
			bpf_link_detach(dp->sockops_link_fd);
			close(dp->sockops_link_fd);
		}
		dp->sockops_link_fd = old_fd;
		return err == -ENOENT ? -EINVAL : err;
	}
	bpf_link_detach(old_fd);
	close(old_fd);
	rs_info("bpf: steer_sockops moved to cgroup %s (id %llu) from cgroup "
		"id %llu",
		cg_path, (unsigned long long)cg_id, (unsigned long long)was);
	return 0;
}

/*
 * The pinned link: our program swapped in behind it when it is attached
 * at the cgroup @cg_id; when it is attached elsewhere (sockops_cgroup was
 * changed), it moves to @cg_fd. -ENOENT if no pin.
 */
static int sockops_link_adopt(struct rs_dataplane *dp, int cg_fd,
			      uint64_t cg_id, const char *cg_path)
{
	char pin[PATH_MAX + 32];
	uint64_t was;
	int fd, err;

	if (!dp->root[0])
		return -ENOENT;
	snprintf(pin, sizeof(pin), "%s/%s", dp->root, RS_SOCKOPS_LINK_PIN_NAME);
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return -errno;
	was = link_cgroup_id(fd);
	if (was && was != cg_id) {
		err = sockops_link_move(dp, fd, was, cg_fd, cg_id, cg_path);
		if (err) {
			close(fd);
			dp->sockops_link_fd = -1;
			return err;
		}
		dp->adopted_sockops_link = false;
		return 0;
	}
	if (bpf_link_update(
		    fd, bpf_program__fd(dp->sockops_skel->progs.steer_sockops),
		    NULL)) {
		err = -errno;
		close(fd);
		/* Not -ENOENT: a pin we cannot update must not be replaced. */
		return err == -ENOENT ? -EINVAL : err;
	}
	dp->sockops_link_fd = fd;
	dp->adopted_sockops_link = true;
	return 0;
}

/* The paths of the cgroups whose ids a walk is asked for, cut to one. */
struct common_of {
	const uint64_t *ids; /* sorted, distinct */
	size_t n, found;
	char common[PATH_MAX];
};

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int on_cgroup_common(uint64_t id, const char *path, void *arg)
{
	struct common_of *c = arg;

	if (bsearch(&id, c->ids, c->n, sizeof(id), cmp_id)) {
		rs_cgroup_common(c->common, path);
		c->found++;
	}
	return 0;
}

/*
 * The deepest cgroup that holds @start (a path, "" for none) and each
 * cgroup of @ids, into @out. An id of 0 (a kernel that does not say) or
 * one the walk does not find (gone since) gives the root: it covers
 * every socket. "" when both are empty.
 */
static int cgroups_common(int root_fd, const char *start, const uint64_t *ids,
			  size_t n, char *out, size_t len)
{
	struct common_of c = {.n = 0};
	uint64_t *set = n ? calloc(n, sizeof(*set)) : NULL;
	int err = 0;

	if (n && !set)
		return -ENOMEM;
	snprintf(c.common, sizeof(c.common), "%s", start);
	if (n)
		memcpy(set, ids, n * sizeof(*set));
	qsort(set, n, sizeof(*set), cmp_id);
	for (size_t i = 0; i < n; i++)
		if (!c.n || set[c.n - 1] != set[i])
			set[c.n++] = set[i];
	c.ids = set;
	if (c.n && !set[0]) /* sorted: an unknown id comes first */
		snprintf(c.common, sizeof(c.common), "/");
	else if (c.n)
		err = cgroup2_walk(root_fd, "/", on_cgroup_common, &c);
	if (!err && c.n && set[0] && c.found < c.n)
		snprintf(c.common, sizeof(c.common), "/");
	free(set);
	if (!err)
		snprintf(out, len, "%s", c.common);
	return err;
}

static int on_cgroup_path(uint64_t id, const char *path, void *arg)
{
	struct common_of *c = arg;

	if (id != c->ids[0])
		return 0;
	snprintf(c->common, sizeof(c->common), "%s", path);
	return 1;
}

/* The path of the cgroup the pinned link is attached at, "" if none. */
static void pinned_link_cgroup(const struct rs_dataplane *dp, int root_fd,
			       char *out, size_t len)
{
	char pin[PATH_MAX + 32];
	struct common_of c = {.n = 1};
	uint64_t id = 0;
	int fd;

	out[0] = '\0';
	if (!dp->root[0])
		return;
	snprintf(pin, sizeof(pin), "%s/%s", dp->root, RS_SOCKOPS_LINK_PIN_NAME);
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return;
	id = link_cgroup_id(fd);
	close(fd);
	c.ids = &id;
	if (id && cgroup2_walk(root_fd, "/", on_cgroup_path, &c) == 1)
		snprintf(out, len, "%s", c.common);
}

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

/*
 * The cookie of the caller's network namespace, the one steer_lookup is
 * attached to (Linux 5.14); 0 when the kernel cannot say.
 */
static uint64_t own_netns_cookie(void)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len))
		cookie = 0;
	close(fd);
	return cookie;
}

/*
 * sockops_cgroup = auto: where the pinned link is (a restart moves
 * nothing), widened to hold the cgroups @ids of the backends' listeners;
 * without a pin, just those; without either, the root.
 */
static void auto_cgroup(struct rs_dataplane *dp, int root_fd,
			const uint64_t *ids, size_t n)
{
	char start[PATH_MAX];

	pinned_link_cgroup(dp, root_fd, start, sizeof(start));
	if (cgroups_common(root_fd, start, ids, n, dp->sockops_cgroup,
			   sizeof(dp->sockops_cgroup)) ||
	    !dp->sockops_cgroup[0])
		strcpy(dp->sockops_cgroup, "/");
}

int dp_sockops_attach(struct rs_dataplane *dp, const char *near,
		      const char *cgroup, const uint64_t *ids, size_t n)
{
	char tmp[PATH_MAX], pin[PATH_MAX + 32];
	int root_fd, cg_fd = -1, err;
	uint64_t cg_id = 0;

	if (dp->sockops_link_fd >= 0)
		return 0;
	snprintf(dp->sockops_run_dir, sizeof(dp->sockops_run_dir), "%s", near);
	dirname(dp->sockops_run_dir);
	dp->sockops_auto = cgroup && !strcmp(cgroup, "auto");
	snprintf(dp->sockops_cgroup, sizeof(dp->sockops_cgroup), "%s",
		 cgroup && cgroup[0] && !dp->sockops_auto ? cgroup : "/");
	root_fd = cgroup2_root(dp->sockops_run_dir, tmp, sizeof(tmp));
	err = root_fd < 0 ? root_fd : 0;
	if (!err && dp->sockops_auto)
		auto_cgroup(dp, root_fd, ids, n);
	if (!err) {
		cg_fd = cgroup_open(root_fd, dp->sockops_cgroup, &cg_id);
		err = cg_fd < 0 ? cg_fd : 0;
	}
	if (!err)
		err = sockops_load(dp);
	if (!err && dp->root[0]) {
		/*
		 * A move cut short (a daemon killed between pinning the new
		 * link and renaming it over the old) leaves a second link
		 * attached: its pin is its only hold.
		 */
		snprintf(pin, sizeof(pin), "%s/%s_next", dp->root,
			 RS_SOCKOPS_LINK_PIN_NAME);
		if (!unlink(pin))
			rs_warn("bpf: removed %s, a steer_sockops link left by "
				"a move that did not finish",
				pin);
	}
	if (!err) {
		err = sockops_link_adopt(dp, cg_fd, cg_id, dp->sockops_cgroup);
		if (err == -ENOENT) {
			snprintf(pin, sizeof(pin), "%s/%s", dp->root,
				 RS_SOCKOPS_LINK_PIN_NAME);
			err = sockops_link_new(dp, cg_fd,
					       dp->root[0] ? pin : NULL);
		}
	}
	if (cg_fd >= 0)
		close(cg_fd);
	cgroup2_done(root_fd, tmp);
	dp->sockops_cgroup_id = err ? 0 : cg_id;
	if (err) {
		rs_warn("bpf: steer_sockops not attached at cgroup %s (%s): "
			"TCP sticky entries are written at the SYN, where SYNs "
			"from forged addresses can evict real clients",
			dp->sockops_cgroup, strerror(-err));
		dp_sockops_close(dp);
		dp_meta_set(dp, offsetof(struct rs_meta, handoff), 0);
		return err;
	}
	/* Before hand-offs are read: only this namespace's connections. */
	dp_meta_set_netns(dp, own_netns_cookie());
	err = dp_meta_set(dp, offsetof(struct rs_meta, handoff), 1);
	if (!err)
		rs_info("bpf: steer_sockops %s at %s%s%s (%s/%s): TCP sticky "
			"entries are written at establishment",
			dp->adopted_sockops_link ? "swapped in" : "attached",
			strcmp(dp->sockops_cgroup, "/") ? "cgroup "
							: "the cgroup2 root",
			strcmp(dp->sockops_cgroup, "/") ? dp->sockops_cgroup
							: "",
			dp->sockops_auto ? " (auto: the backends' listeners)"
					 : "",
			dp->root[0] ? dp->root : "(unpinned)",
			RS_SOCKOPS_LINK_PIN_NAME);
	return err;
}

int dp_sockops_cover(struct rs_dataplane *dp, const uint64_t *ids, size_t n,
		     bool exact)
{
	char tmp[PATH_MAX], want[PATH_MAX];
	int root_fd, cg_fd, err;
	uint64_t cg_id;

	if (!dp->sockops_auto || dp->sockops_link_fd < 0 || !n)
		return 0;
	/* Widening only, and already at the root or at the one cgroup. */
	if (!exact && (!strcmp(dp->sockops_cgroup, "/") ||
		       (n == 1 && ids[0] == dp->sockops_cgroup_id)))
		return 0;
	root_fd = cgroup2_root(dp->sockops_run_dir, tmp, sizeof(tmp));
	if (root_fd < 0)
		return root_fd;
	err = cgroups_common(root_fd, exact ? "" : dp->sockops_cgroup, ids, n,
			     want, sizeof(want));
	if (err || !want[0] || !strcmp(want, dp->sockops_cgroup)) {
		cgroup2_done(root_fd, tmp);
		return err;
	}
	cg_fd = cgroup_open(root_fd, want, &cg_id);
	err = cg_fd < 0 ? cg_fd : 0;
	if (!err && cg_id != dp->sockops_cgroup_id) {
		err = sockops_link_move(dp, dp->sockops_link_fd,
					dp->sockops_cgroup_id, cg_fd, cg_id,
					want);
		if (!err) {
			rs_info("bpf: steer_sockops follows the backends' "
				"listeners (sockops_cgroup = auto): cgroup %s, "
				"was %s",
				want, dp->sockops_cgroup);
			snprintf(dp->sockops_cgroup, sizeof(dp->sockops_cgroup),
				 "%s", want);
			dp->sockops_cgroup_id = cg_id;
		}
	}
	if (cg_fd >= 0)
		close(cg_fd);
	cgroup2_done(root_fd, tmp);
	if (err)
		rs_warn("bpf: steer_sockops cannot move to cgroup %s (%s): it "
			"stays at %s",
			want, strerror(-err), dp->sockops_cgroup);
	return err;
}

struct scope_ids {
	uint64_t *ids;
	size_t n, cap;
};

static int on_scope_id(uint64_t id, const char *path, void *arg)
{
	struct scope_ids *s = arg;

	(void)path;
	if (s->n == s->cap) {
		size_t c = s->cap ? s->cap * 2 : 64;
		uint64_t *q = reallocarray(s->ids, c, sizeof(*q));

		if (!q)
			return -ENOMEM;
		s->ids = q;
		s->cap = c;
	}
	s->ids[s->n++] = id;
	return 0;
}

int dp_sockops_scope(struct rs_dataplane *dp, uint64_t **ids, size_t *n)
{
	struct scope_ids s = {0};
	char tmp[PATH_MAX];
	int root_fd, fd, err;

	*ids = NULL;
	*n = 0;
	if (!dp->sockops_cgroup_id || !strcmp(dp->sockops_cgroup, "/"))
		return 0;
	root_fd = cgroup2_root(dp->sockops_run_dir, tmp, sizeof(tmp));
	if (root_fd < 0)
		return root_fd;
	fd = openat(root_fd, dp->sockops_cgroup + 1,
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	err = fd < 0 ? -errno
		     : cgroup2_walk(fd, dp->sockops_cgroup, on_scope_id, &s);
	if (fd >= 0)
		close(fd);
	cgroup2_done(root_fd, tmp);
	if (!err && (!s.n || s.ids[0] != dp->sockops_cgroup_id))
		err = -ESTALE; /* not the cgroup the link is attached at */
	if (err) {
		free(s.ids);
		return err;
	}
	*ids = s.ids;
	*n = s.n;
	return 0;
}

void dp_sockops_close(struct rs_dataplane *dp)
{
	if (dp->sockops_link_fd >= 0)
		close(dp->sockops_link_fd);
	dp->sockops_link_fd = -1;
	if (dp->sockops_skel)
		steer_sockops_bpf__destroy(dp->sockops_skel);
	dp->sockops_skel = NULL;
}

uint32_t dp_sockops_program_id(struct rs_dataplane *dp)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (dp->sockops_link_fd < 0 || !dp->sockops_skel ||
	    bpf_obj_get_info_by_fd(
		    bpf_program__fd(dp->sockops_skel->progs.steer_sockops),
		    &info, &len))
		return 0;
	return info.id;
}
