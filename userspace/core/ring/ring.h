/* SPDX-License-Identifier: MIT */
/*
 * Consistent-hash vnode ring. Built in userspace only; the data plane
 * searches it. Point positions depend on the backend's name, never on its
 * index, so adding a backend moves no other backend's points.
 */
#ifndef RS_RING_H
#define RS_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ringsteer/abi.h>

struct rs_ring_member {
	const char *name;
	uint32_t backend; /* backend id (< RS_MAX_BACKENDS), in each point */
	uint32_t points;  /* weight * vnodes at the built (maximum) weight */
};

struct rs_ring {
	struct rs_point *points; /* sorted by pos, then name, then ordinal */
	uint32_t npoints;
	/* What the ring header carries beside the points (rs_ring_header). */
	uint64_t seed;
	uint8_t key_policy, prefix4, prefix6;
	/*
	 * Points read in place from a mapping of the map that holds them
	 * (the installed ring: no 13 MB copy of it), which ring_free()
	 * unmaps; NULL when they are malloc'd.
	 */
	void *mapping;
	size_t mapping_len;
};

/*
 * Returns 0, -EINVAL (too many points), or -ENOMEM. The key parameters
 * are those of a default service (src-ip, /32, /64) until ring_set_key().
 */
int ring_build(const struct rs_ring_member *members, size_t n, uint64_t seed,
	       struct rs_ring *ring);
/*
 * The same, with room for @room points more in the ring's buffer, and
 * *@spare (free() it) the buffer of as many points the points were
 * hashed into: written already, so a merge into it touches no fresh
 * memory (ring_cache.c; at 200 backends fresh pages cost a weight change
 * more than the merge itself).
 */
int ring_build_spare(const struct rs_ring_member *members, size_t n,
		     uint64_t seed, uint32_t room, struct rs_ring *ring,
		     struct rs_point **spare);
/*
 * The pieces of ring_build(), for ring_cache.c. The ring's order of two
 * points (position, then name, then ordinal), with @names the name of
 * each backend id in the ring:
 */
int ring_point_cmp(const struct rs_point *a, const struct rs_point *b,
		   const char *const *names);
/* Sort *@pts (which may be replaced) into that order; 0 or -ENOMEM. */
int ring_sort_points(struct rs_point **pts, size_t n, const char *const *names);
/* The name of each member's backend id, by id (calloc'd), or NULL. */
const char **ring_names_by_id(const struct rs_ring_member *members, size_t n);
/* @m's points from ordinal @from on, into @pts. */
void ring_add_points(struct rs_point *pts, const struct rs_ring_member *m,
		     uint32_t from, uint64_t seed);
/* The key the data plane builds for @ring: @svc's policy and prefixes. */
void ring_set_key(struct rs_ring *ring, const struct rs_service *svc);
void ring_free(struct rs_ring *ring);
/* @dst: a copy of @src with points of its own; on -ENOMEM it is empty. */
int ring_dup(struct rs_ring *dst, const struct rs_ring *src);

/* Index (0-based) of the first point with pos >= hash, wrapping to 0. */
uint32_t ring_lower_bound(const struct rs_ring *ring, uint64_t hash);

/*
 * What the data plane may use, per backend: mirrors struct rs_backend plus
 * whether its SOCKMAP slot holds a socket.
 */
struct rs_ring_view {
	const struct rs_backend *backends; /* indexed by backend id */
	const bool *has_socket;		   /* indexed by backend id, or NULL */
	uint32_t nbackends;
	/*
	 * The load gauge (rs_backend_load by backend id, rs_service_load of
	 * the service), or NULL: then no backend is ever at its bound, as
	 * for ring statistics, which are about the mapping alone.
	 */
	const int64_t *load;
	int64_t service_active;
};

struct rs_ring_choice {
	uint32_t backend;  /* chosen backend id */
	uint32_t primary;  /* owner if every backend were UP */
	uint32_t walked;   /* points visited before the chosen one */
	bool primary_over; /* the primary was UP but at its bound */
	/* Every backend that could take it was at its bound: least loaded. */
	bool all_at_bound;
};

/*
 * Why the walk passes over a point: the data plane's rule (walk_point in
 * bpf/steer_lookup.bpf.c), in the order it applies it.
 */
enum rs_ring_skip {
	RS_RING_USABLE = 0,	/* not skipped: its backend takes the key */
	RS_RING_SKIP_UNKNOWN,	/* backend id outside the view */
	RS_RING_SKIP_INACTIVE,	/* ordinal >= the backend's active_points */
	RS_RING_SKIP_NOT_UP,	/* the backend is DOWN or DRAIN */
	RS_RING_SKIP_NO_SOCKET, /* no socket for the client's family */
	RS_RING_SKIP_REJECTED,	/* another point of the backend rejected last */
	RS_RING_SKIP_AT_BOUND,	/* UP, but at its bound (balance_factor) */
};

/* The one point rule (without the walk's memory of rejected backends). */
enum rs_ring_skip ring_point_skip(const struct rs_point *p,
				  const struct rs_ring_view *view);
const char *ring_skip_name(enum rs_ring_skip why);

struct rs_ring_step {
	uint32_t backend, ordinal;
	enum rs_ring_skip why;
};

/* Points a walk passed over, in walk order: the first @cap of them. */
struct rs_ring_trace {
	struct rs_ring_step *steps;
	uint32_t cap, n;
};

/* Whether backend @b of @view is at its bound (never without view->load). */
bool ring_at_bound(const struct rs_ring_view *view, uint32_t b);

/*
 * The data plane's walk, replicated: returns 0 and fills @choice, or
 * -ENOENT when no point of the ring has a backend that may take the key.
 * With @trace (may be NULL), also why each point before the chosen one
 * was skipped.
 */
int ring_lookup(const struct rs_ring *ring, const struct rs_ring_view *view,
		uint64_t hash, struct rs_ring_choice *choice,
		struct rs_ring_trace *trace);

/*
 * Longest run of consecutive points (around the ring) that the walk would
 * skip under @view. Walks past RS_WALK_MAX points are slow (and counted),
 * so the daemon rebuilds before a run gets near that.
 */
uint32_t ring_max_skip_run(const struct rs_ring *ring,
			   const struct rs_ring_view *view);

/*
 * @ring without the points the walk skips under @view: those at or past
 * their backend's active_points and, with @usable_only, every point of a
 * backend that cannot take new clients (not UP, or no socket). Since a
 * point depends only on its backend's name and ordinal, the result maps
 * every key exactly as @ring does under @view, and as it does under any
 * view with the same states and at least as many active points. Returns
 * 0 or -ENOMEM.
 */
int ring_trim(const struct rs_ring *ring, const struct rs_ring_view *view,
	      bool usable_only, struct rs_ring *out);
/*
 * Whether ring_trim() would keep every point: then the trimmed ring is
 * @ring itself, and neither needs to be made nor compared.
 */
bool ring_trim_keeps_all(const struct rs_ring *ring,
			 const struct rs_ring_view *view, bool usable_only);

bool ring_equal(const struct rs_ring *a, const struct rs_ring *b);

/*
 * Buckets per point in the flat table: a key's bucket holds a point (and
 * its lookup searches) with probability about 1 - e^(-1/4) = 22%.
 */
#define RING_FLAT_PER_POINT 4

/* Flat table size for a ring of @npoints (rs_ring_header.bucket_bits). */
uint8_t ring_bucket_bits(uint32_t npoints);

/*
 * Slots of the ring map of @npoints points with a flat table of @bits:
 * the header, the points, the table (two entries per slot, see struct
 * rs_ring_flat), then the trailer.
 */
uint32_t ring_map_slots(uint32_t npoints, uint8_t bits);

/*
 * Slots a fresh ring map for a ring of @slots is created with: 1/16 more,
 * rounded up to whole 4 KiB pages (the kernel allocates those anyway).
 * The map a swap replaces is kept and the ring after next written into
 * it (dataplane_rings.c): a weight raised step by step must still fit
 * there two rings later. A share of the ring, not a fixed amount, so the
 * room grows with what one backend's step adds to it (at 200 backends
 * 84,224 slots, twenty steps of 4,096 points; 6.25% more memory).
 */
uint32_t ring_map_capacity(uint32_t slots);

/*
 * Whether a ring map of @cap slots takes a ring of @slots: it fits, and
 * is at most twice the ring, so that a ring much smaller than before
 * (weights lowered, backends removed) gets a map of its own size and the
 * large one is let go instead of held on to.
 */
bool ring_map_fits(uint32_t cap, uint32_t slots);

/* The data plane's flat table of 2^@bits entries for @ring, into @flat. */
void ring_flat(const struct rs_ring *ring, uint8_t bits,
	       struct rs_ring_flat *flat);

/*
 * ring_lower_bound() the way the data plane finds it, through @flat:
 * @direct says whether the entry named the point without a search.
 */
uint32_t ring_flat_lower_bound(const struct rs_ring *ring, uint8_t bits,
			       const struct rs_ring_flat *flat, uint64_t hash,
			       bool *direct);

#endif /* RS_RING_H */
