/* SPDX-License-Identifier: MIT */
/*
 * A small etcd v3 client over the JSON gateway (/v3/...), libcurl and
 * jansson: leases, put, delete, prefix range and a watch that waits for
 * the next change. Blocking calls with a timeout; ringsteerd makes them
 * from its fleet thread (and the two operator commands), never from the
 * event loop's hot paths. Keys and values are base64 on the wire, as the
 * gateway wants.
 */
#ifndef RS_ETCD_H
#define RS_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct rs_etcd {
	char endpoints[RS_FLEET_MAX_ENDPOINTS][RS_FLEET_ENDPOINT_MAX];
	size_t n, cur; /* the endpoint tried first: the last that answered */
	void *curl;    /* CURL * */
	long timeout_ms;
	char error[512]; /* the last failure, for status */
	/* TLS files ("" when not set) and the RBAC user, from [fleet]. */
	const char *ca, *cert, *key;
	char user[RS_NAME_MAX * 2];
	char password[256];	/* read from etcd_password_file; never logged */
	char auth_header[1024]; /* "Authorization: TOKEN", "" before auth */
	uint64_t authentications; /* tokens obtained (renewals included) */
};

struct rs_etcd_kv {
	char *key;
	char *value;	 /* NULL when over RS_ETCD_VALUE_MAX: see size */
	size_t size;	 /* the value's length in bytes */
	int64_t created; /* create_revision: older keys have lower ones */
	int64_t lease;	 /* 0: the key has no lease */
};

/*
 * Bounds of a range read: values longer than this are not kept (the kv
 * has value NULL and its size), keys past RS_ETCD_RANGE_KEYS_MAX are not
 * read; the range says so in *truncated. Pages of RS_ETCD_PAGE keys at one
 * revision; a page whose reply is over the read cap is read again one key
 * at a time, so one huge value never hides the others.
 */
#define RS_ETCD_VALUE_MAX      (64u << 10)
#define RS_ETCD_RANGE_KEYS_MAX 8192
#define RS_ETCD_PAGE	       32

/*
 * 0, -ENOMEM, or -EACCES when the password file cannot be read (said in
 * e->error). @timeout_ms bounds every call but watch. With a user, the
 * first call authenticates (/v3/auth/authenticate) and every call sends
 * the token; a call refused for an expired or invalid token gets a new
 * one and is tried again once.
 */
int etcd_open(struct rs_etcd *e, const struct rs_fleet_conf *fc,
	      long timeout_ms);
void etcd_close(struct rs_etcd *e);

/* Failures return -EIO (unreachable, HTTP error) or -EPROTO (bad reply). */
int etcd_lease_grant(struct rs_etcd *e, int64_t ttl, int64_t *id);
/* -ENOENT when the lease has expired. */
int etcd_lease_keepalive(struct rs_etcd *e, int64_t id);
/* @lease 0: no lease. */
int etcd_put(struct rs_etcd *e, const char *key, const char *value,
	     int64_t lease);
int etcd_delete(struct rs_etcd *e, const char *key);
/*
 * Every key under @prefix, sorted by key, at one revision, within the
 * bounds above (@truncated: keys were left out); free with
 * etcd_kvs_free().
 */
int etcd_range(struct rs_etcd *e, const char *prefix, struct rs_etcd_kv **kvs,
	       size_t *n, int64_t *revision, bool *truncated);
/*
 * The same at revision *@revision (0: the newest, then set to it), so
 * that two ranges read one state of the store, and up to @max_keys keys
 * (RS_ETCD_PAGE..RS_ETCD_RANGE_KEYS_MAX; out of it: the maximum).
 */
int etcd_range_at(struct rs_etcd *e, const char *prefix, size_t max_keys,
		  struct rs_etcd_kv **kvs, size_t *n, int64_t *revision,
		  bool *truncated);
void etcd_kvs_free(struct rs_etcd_kv *kvs, size_t n);
/*
 * Wait up to @timeout_ms for a change under @prefix at or after revision
 * @from: 1 when one came, 0 on timeout, negative on failure.
 */
int etcd_watch(struct rs_etcd *e, const char *prefix, int64_t from,
	       long timeout_ms);

#endif /* RS_ETCD_H */
