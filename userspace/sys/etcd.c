// SPDX-License-Identifier: MIT
/*
 * etcd's gateway speaks protobuf JSON: 64-bit integers are strings,
 * bytes are base64, and streaming calls (watch, keepalive) answer with
 * one {"result": ...} object per message on one connection.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "etcd.h"
#include "log.h"
#include "secret_file.h"

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const uint8_t *in, size_t n)
{
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		*o++ = b64chars[(v >> 18) & 63];
		*o++ = b64chars[(v >> 12) & 63];
		*o++ = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? b64chars[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* NUL-terminated result; NULL on bad input. */
static char *b64_decode(const char *in)
{
	size_t n = strlen(in), k = 0;
	char *out = malloc(n / 4 * 3 + 1);
	uint32_t v = 0;
	int bits = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n && in[i] != '='; i++) {
		const char *p = strchr(b64chars, in[i]);

		if (!p || !in[i]) {
			free(out);
			return NULL;
		}
		v = (v << 6) | (uint32_t)(p - b64chars);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (char)((v >> bits) & 0xff);
		}
	}
	out[k] = '\0';
	return out;
}

static char *b64_str(const char *s)
{
	return b64_encode((const uint8_t *)s, strlen(s));
}

/* The key after every key that starts with @prefix (etcd's range_end). */
static char *prefix_end(const char *prefix)
{
	size_t n = strlen(prefix);
	uint8_t *end = malloc(n + 1);
	char *out;

	if (!end)
		return NULL;
	memcpy(end, prefix, n);
	/* The prefixes here are printable ASCII: the last byte never wraps. */
	end[n - 1]++;
	out = b64_encode(end, n);
	free(end);
	return out;
}

/*
 * The first line of @path into @out (rs_secret_file_read(): a regular
 * file only its owner can read, and never more than a password file
 * holds, whatever the path became since the configuration was checked).
 */
static int read_password(const char *path, char *out, size_t len, char *why,
			 size_t why_len)
{
	char *text;
	size_t size, n;
	int err = rs_secret_file_read(path, RS_SECRET_FILE_MAX, &text, &size,
				      why, why_len);

	if (err)
		return err;
	n = strcspn(text, "\r\n");
	if (!n) {
		snprintf(why, why_len, "%.300s: no password on its first line",
			 path);
		err = -ENODATA;
	} else if (n >= len) {
		snprintf(why, why_len,
			 "%.300s: a password of %zu bytes or more", path, len);
		err = -ENAMETOOLONG;
	} else {
		memcpy(out, text, n);
		out[n] = '\0';
	}
	explicit_bzero(text, size);
	free(text);
	return err;
}

int etcd_open(struct rs_etcd *e, const struct rs_fleet_conf *fc,
	      long timeout_ms)
{
	int err;

	memset(e, 0, sizeof(*e));
	e->n = fc->n_etcd;
	memcpy(e->endpoints, fc->etcd, sizeof(e->endpoints));
	e->timeout_ms = timeout_ms;
	e->ca = fc->etcd_ca;
	e->cert = fc->etcd_cert;
	e->key = fc->etcd_key;
	snprintf(e->user, sizeof(e->user), "%s", fc->etcd_user);
	if (e->user[0]) {
		char why[sizeof(e->error) - 32];

		err = read_password(fc->etcd_password_file, e->password,
				    sizeof(e->password), why, sizeof(why));
		if (err) {
			snprintf(e->error, sizeof(e->error),
				 "etcd_password_file %s", why);
			return -EACCES;
		}
	}
	e->curl = curl_easy_init();
	return e->curl ? 0 : -ENOMEM;
}

void etcd_close(struct rs_etcd *e)
{
	explicit_bzero(e->password, sizeof(e->password));
	explicit_bzero(e->auth_header, sizeof(e->auth_header));
	if (e->curl)
		curl_easy_cleanup(e->curl);
	e->curl = NULL;
}

struct reply_buf {
	char *data;
	size_t len;
	size_t max;
	size_t alloc;	     /* bytes allocated at data */
	const char *stop_at; /* watch: stop reading once this shows up */
	int stopped;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct reply_buf *b = arg;
	size_t n = size * nmemb;
	char *q;

	if (b->len + n > b->max)
		return 0;
	/*
	 * Doubled, up to max + 1: a reply of megabytes comes in 16 KiB
	 * writes, and an allocator that cannot grow a block in place
	 * (ThreadSanitizer's) copied the whole reply at each one.
	 */
	if (b->len + n + 1 > b->alloc) {
		size_t want = b->alloc ? b->alloc : 16384;

		while (want < b->len + n + 1)
			want *= 2;
		if (want > b->max + 1)
			want = b->max + 1;
		q = realloc(b->data, want);
		if (!q)
			return 0;
		b->data = q;
		b->alloc = want;
	}
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	if (b->stop_at && strstr(b->data, b->stop_at)) {
		b->stopped = 1;
		return 0;
	}
	return n;
}

/*
 * POST @body to @path on the first endpoint that answers. *@out gets the
 * reply (NULL for a watch that was stopped or timed out). -EACCES: etcd
 * refused our token or credentials (HTTP 401, or its "invalid auth
 * token" / "user name is empty" answers).
 */
static int call_once(struct rs_etcd *e, const char *path, json_t *body,
		     long timeout_ms, const char *stop_at, json_t **out)
{
	char *text = json_dumps(body, JSON_COMPACT),
	     url[RS_FLEET_ENDPOINT_MAX + 64];
	struct curl_slist *hdrs = NULL;
	int ret = -EIO;

	*out = NULL;
	if (!text)
		return -ENOMEM;
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	if (e->auth_header[0])
		hdrs = curl_slist_append(hdrs, e->auth_header);
	for (size_t t = 0; t < e->n; t++) {
		size_t i = (e->cur + t) % e->n;
		struct reply_buf b = {.max = 4u << 20, .stop_at = stop_at};
		long status = 0;
		CURLcode rc;

		snprintf(url, sizeof(url), "%s%s", e->endpoints[i], path);
		curl_easy_reset(e->curl);
		curl_easy_setopt(e->curl, CURLOPT_URL, url);
		curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
		curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS,
				 e->timeout_ms < timeout_ms ? e->timeout_ms
							    : timeout_ms);
		curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
		if (e->ca && e->ca[0])
			curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->ca);
		if (e->cert && e->cert[0]) {
			curl_easy_setopt(e->curl, CURLOPT_SSLCERT, e->cert);
			curl_easy_setopt(e->curl, CURLOPT_SSLKEY, e->key);
		}
		curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
		rc = curl_easy_perform(e->curl);
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
		if (stop_at && (b.stopped || (rc == CURLE_OPERATION_TIMEDOUT &&
					      status == 200))) {
			e->cur = i;
			ret = b.stopped ? 1 : 0;
			free(b.data);
			break;
		}
		if (rc == CURLE_WRITE_ERROR &&
		    b.len + CURL_MAX_WRITE_SIZE > b.max) {
			/* The endpoint answered; the reply is over the cap. */
			snprintf(e->error, sizeof(e->error),
				 "%.320s: reply over %zu bytes", url, b.max);
			e->cur = i;
			free(b.data);
			ret = -EFBIG;
			break;
		}
		if (rc == CURLE_OK &&
		    (status == 401 ||
		     (b.data && (strstr(b.data, "invalid auth token") ||
				 strstr(b.data, "user name is empty") ||
				 strstr(b.data, "authentication failed"))))) {
			snprintf(e->error, sizeof(e->error),
				 "%.320s: HTTP %ld: %.120s", url, status,
				 b.data ? b.data : "");
			e->cur = i;
			free(b.data);
			ret = -EACCES;
			break;
		}
		/*
		 * etcd answered, and said the lease is gone (revoked, or
		 * expired while etcd was away): not a reason to try another
		 * endpoint, nor an outage. The caller joins again.
		 */
		if (rc == CURLE_OK && b.data &&
		    strstr(b.data, "requested lease not found")) {
			snprintf(e->error, sizeof(e->error),
				 "%.320s: the lease is gone", url);
			e->cur = i;
			free(b.data);
			ret = -ENOENT;
			break;
		}
		if (rc != CURLE_OK || status != 200) {
			snprintf(e->error, sizeof(e->error), "%.320s: %s", url,
				 rc != CURLE_OK ? curl_easy_strerror(rc)
						: "HTTP error");
			if (rc == CURLE_OK)
				snprintf(e->error, sizeof(e->error),
					 "%.320s: HTTP %ld: %.120s", url,
					 status, b.data ? b.data : "");
			free(b.data);
			continue;
		}
		e->cur = i;
		*out = b.data ? json_loads(b.data, 0, NULL) : NULL;
		free(b.data);
		if (!*out) {
			snprintf(e->error, sizeof(e->error),
				 "%.320s: reply is not JSON", url);
			ret = -EPROTO;
		} else {
			ret = 0;
		}
		break;
	}
	curl_slist_free_all(hdrs);
	free(text);
	return ret;
}

/* A token for e->user: "Authorization: TOKEN" in e->auth_header. */
static int authenticate(struct rs_etcd *e)
{
	json_t *req = json_pack("{s:s, s:s}", "name", e->user, "password",
				e->password),
	       *r = NULL;
	const char *token;
	int err;

	if (!req)
		return -ENOMEM;
	e->auth_header[0] = '\0';
	err = call_once(e, "/v3/auth/authenticate", req, e->timeout_ms, NULL,
			&r);
	/* The request held the password: wipe it before it is freed. */
	json_object_set_new(req, "password", json_string(""));
	json_decref(req);
	if (err) {
		char why[sizeof(e->error)];

		snprintf(why, sizeof(why), "%s", e->error);
		snprintf(e->error, sizeof(e->error),
			 "authenticating as etcd user %.100s: %.380s", e->user,
			 why);
		return err;
	}
	token = json_string_value(json_object_get(r, "token"));
	if (!token || !*token || strlen(token) + 16 >= sizeof(e->auth_header)) {
		snprintf(e->error, sizeof(e->error),
			 "authenticating as etcd user %s: no token in the "
			 "reply",
			 e->user);
		json_decref(r);
		return -EPROTO;
	}
	snprintf(e->auth_header, sizeof(e->auth_header), "Authorization: %s",
		 token);
	e->authentications++;
	json_decref(r);
	return 0;
}

/*
 * call_once() as the etcd user when there is one: authenticated first if
 * there is no token yet, and once more when etcd refuses the token (it
 * expires: --auth-token-ttl, 5 minutes by default).
 */
static int call(struct rs_etcd *e, const char *path, json_t *body,
		long timeout_ms, const char *stop_at, json_t **out)
{
	int err = 0;

	*out = NULL;
	if (e->user[0] && !e->auth_header[0])
		err = authenticate(e);
	if (!err)
		err = call_once(e, path, body, timeout_ms, stop_at, out);
	if (err == -EACCES && e->user[0]) {
		err = authenticate(e);
		if (!err)
			err = call_once(e, path, body, timeout_ms, stop_at,
					out);
	}
	json_decref(body);
	return err;
}

/* An int64 as the gateway writes it: a string, or a number. */
static int64_t json_i64(json_t *v)
{
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

int etcd_lease_grant(struct rs_etcd *e, int64_t ttl, int64_t *id)
{
	json_t *r;
	int err = call(e, "/v3/lease/grant",
		       json_pack("{s:I}", "TTL", (json_int_t)ttl),
		       e->timeout_ms, NULL, &r);

	if (err)
		return err;
	*id = json_i64(json_object_get(r, "ID"));
	json_decref(r);
	if (*id == 0) {
		snprintf(e->error, sizeof(e->error), "lease grant: no ID");
		return -EPROTO;
	}
	return 0;
}

int etcd_lease_keepalive(struct rs_etcd *e, int64_t id)
{
	json_t *r, *res;
	int64_t ttl;
	int err = call(e, "/v3/lease/keepalive",
		       json_pack("{s:I}", "ID", (json_int_t)id), e->timeout_ms,
		       NULL, &r);

	if (err)
		return err;
	res = json_object_get(r, "result");
	ttl = json_i64(json_object_get(res ? res : r, "TTL"));
	json_decref(r);
	return ttl > 0 ? 0 : -ENOENT;
}

int etcd_put(struct rs_etcd *e, const char *key, const char *value,
	     int64_t lease)
{
	char *k = b64_str(key), *v = b64_str(value);
	json_t *body, *r;
	int err;

	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	body = json_pack("{s:s, s:s}", "key", k, "value", v);
	if (body && lease)
		json_object_set_new(body, "lease", json_integer(lease));
	free(k);
	free(v);
	err = call(e, "/v3/kv/put", body, e->timeout_ms, NULL, &r);
	json_decref(r);
	return err;
}

int etcd_delete(struct rs_etcd *e, const char *key)
{
	char *k = b64_str(key);
	json_t *r;
	int err;

	if (!k)
		return -ENOMEM;
	err = call(e, "/v3/kv/deleterange", json_pack("{s:s}", "key", k),
		   e->timeout_ms, NULL, &r);
	free(k);
	json_decref(r);
	return err;
}

void etcd_kvs_free(struct rs_etcd_kv *kvs, size_t n)
{
	for (size_t i = 0; kvs && i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].value);
	}
	free(kvs);
}

/* One kv of a range reply into @out; false when it cannot be decoded. */
static bool kv_take(json_t *kv, struct rs_etcd_kv *out)
{
	const char *kk = json_string_value(json_object_get(kv, "key"));
	const char *vv = json_string_value(json_object_get(kv, "value"));

	memset(out, 0, sizeof(*out));
	out->key = kk ? b64_decode(kk) : NULL;
	if (!out->key)
		return false;
	out->created = json_i64(json_object_get(kv, "create_revision"));
	out->lease = json_i64(json_object_get(kv, "lease"));
	/* The decoded length, from the base64: 3 bytes per 4, less padding. */
	if (vv) {
		size_t b = strlen(vv);

		out->size = b / 4 * 3;
		for (size_t k = 0; k < 2 && b > k && vv[b - 1 - k] == '='; k++)
			out->size--;
	}
	if (out->size > RS_ETCD_VALUE_MAX)
		return true;
	out->value = b64_decode(vv ? vv : "");
	if (!out->value) {
		free(out->key);
		return false;
	}
	out->size = strlen(out->value);
	return true;
}

/*
 * One page from @from (base64) to @end at @rev (0: now): up to @limit
 * kvs appended to @kvs. *@more: keys follow; *@last: the last key read.
 */
static int range_page(struct rs_etcd *e, const char *from, const char *end,
		      int64_t *rev, long limit, bool keys_only,
		      struct rs_etcd_kv *kvs, size_t *n, bool *more)
{
	json_t *req = json_pack("{s:s, s:s, s:I, s:I, s:b}", "key", from,
				"range_end", end, "limit", (json_int_t)limit,
				"revision", (json_int_t)*rev, "keys_only",
				keys_only),
	       *r = NULL, *kv;
	size_t i;
	int err;

	if (!req)
		return -ENOMEM;
	err = call(e, "/v3/kv/range", req, e->timeout_ms, NULL, &r);
	if (err)
		return err;
	if (!*rev)
		*rev = json_i64(json_object_get(json_object_get(r, "header"),
						"revision"));
	*more = json_is_true(json_object_get(r, "more"));
	json_array_foreach(json_object_get(r, "kvs"), i, kv)
	{
		if (i >= (size_t)limit)
			break;
		if (kv_take(kv, &kvs[*n])) {
			if (keys_only) {
				free(kvs[*n].value);
				kvs[*n].value = NULL;
			}
			(*n)++;
		}
	}
	json_decref(r);
	return 0;
}

/* The key just after @key, base64: where the next page starts. */
static char *key_after(const char *key)
{
	size_t len = strlen(key);
	uint8_t *k = malloc(len + 1);
	char *out;

	if (!k)
		return NULL;
	memcpy(k, key, len);
	k[len] = 0;
	out = b64_encode(k, len + 1);
	free(k);
	return out;
}

/*
 * A page over the read cap, again one key at a time: its keys first
 * (keys only), then each value on its own.
 */
static int range_page_by_key(struct rs_etcd *e, const char *from,
			     const char *end, int64_t *rev,
			     struct rs_etcd_kv *kvs, size_t *n, bool *more)
{
	size_t first = *n;
	int err =
		range_page(e, from, end, rev, RS_ETCD_PAGE, true, kvs, n, more);

	for (size_t i = first; i < *n && !err; i++) {
		char *k = b64_str(kvs[i].key), *k_end = key_after(kvs[i].key);
		struct rs_etcd_kv one[1];
		size_t got = 0;
		bool m;

		err = k && k_end ? range_page(e, k, k_end, rev, 1, false, one,
					      &got, &m)
				 : -ENOMEM;
		free(k);
		free(k_end);
		if (err == -EFBIG) {
			/* Over the cap on its own: known by name only. */
			kvs[i].size = SIZE_MAX;
			err = 0;
			continue;
		}
		if (!err && got == 1) {
			kvs[i].value = one[0].value;
			kvs[i].size = one[0].size;
			kvs[i].created = one[0].created;
			kvs[i].lease = one[0].lease;
			free(one[0].key);
		}
	}
	return err;
}

int etcd_range(struct rs_etcd *e, const char *prefix, struct rs_etcd_kv **kvs,
	       size_t *n, int64_t *revision, bool *truncated)
{
	*revision = 0;
	return etcd_range_at(e, prefix, RS_ETCD_RANGE_KEYS_MAX, kvs, n,
			     revision, truncated);
}

int etcd_range_at(struct rs_etcd *e, const char *prefix, size_t max_keys,
		  struct rs_etcd_kv **kvs, size_t *n, int64_t *revision,
		  bool *truncated)
{
	char *from = b64_str(prefix), *end = prefix_end(prefix);
	bool more = true;
	int err = 0;

	if (max_keys < RS_ETCD_PAGE || max_keys > RS_ETCD_RANGE_KEYS_MAX)
		max_keys = RS_ETCD_RANGE_KEYS_MAX;
	*kvs = calloc(max_keys, sizeof(**kvs));
	*n = 0;
	*truncated = false;
	if (!from || !end || !*kvs) {
		err = -ENOMEM;
		goto out;
	}
	while (more && !err) {
		size_t first = *n;
		char *next;

		if (*n + RS_ETCD_PAGE > max_keys) {
			*truncated = true;
			break;
		}
		err = range_page(e, from, end, revision, RS_ETCD_PAGE, false,
				 *kvs, n, &more);
		if (err == -EFBIG)
			err = range_page_by_key(e, from, end, revision, *kvs, n,
						&more);
		if (err || *n == first)
			break;
		next = key_after((*kvs)[*n - 1].key);
		if (!next) {
			err = -ENOMEM;
			break;
		}
		free(from);
		from = next;
	}
	if (!err && *revision <= 0) {
		snprintf(e->error, sizeof(e->error), "range: no revision");
		err = -EPROTO;
	}
out:
	free(from);
	free(end);
	if (err) {
		etcd_kvs_free(*kvs, *n);
		*kvs = NULL;
		*n = 0;
	}
	return err;
}

int etcd_watch(struct rs_etcd *e, const char *prefix, int64_t from,
	       long timeout_ms)
{
	char *k = b64_str(prefix), *end = prefix_end(prefix);
	json_t *r = NULL;
	int ret = -ENOMEM;

	if (k && end)
		ret = call(e, "/v3/watch",
			   json_pack("{s:{s:s, s:s, s:I}}", "create_request",
				     "key", k, "range_end", end,
				     "start_revision", (json_int_t)from),
			   timeout_ms, "\"events\"", &r);
	free(k);
	free(end);
	json_decref(r);
	return ret;
}
