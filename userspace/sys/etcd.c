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

int etcd_open(struct rs_etcd *e, const struct rs_fleet_conf *fc,
	      long timeout_ms)
{
	memset(e, 0, sizeof(*e));
	e->n = fc->n_etcd;
	memcpy(e->endpoints, fc->etcd, sizeof(e->endpoints));
	e->timeout_ms = timeout_ms;
	e->curl = curl_easy_init();
	return e->curl ? 0 : -ENOMEM;
}

void etcd_close(struct rs_etcd *e)
{
	if (e->curl)
		curl_easy_cleanup(e->curl);
	e->curl = NULL;
}

struct reply_buf {
	char *data;
	size_t len;
	size_t max;
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
	q = realloc(b->data, b->len + n + 1);
	if (!q)
		return 0;
	b->data = q;
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
 * reply (NULL for a watch that was stopped or timed out).
 */
static int call(struct rs_etcd *e, const char *path, json_t *body,
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
	json_decref(body);
	return ret;
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

int etcd_range(struct rs_etcd *e, const char *prefix, struct rs_etcd_kv **kvs,
	       size_t *n, int64_t *revision)
{
	char *k = b64_str(prefix), *end = prefix_end(prefix);
	json_t *r = NULL, *arr, *kv;
	size_t i;
	int err = -ENOMEM;

	*kvs = NULL;
	*n = 0;
	if (k && end)
		err = call(e, "/v3/kv/range",
			   json_pack("{s:s, s:s}", "key", k, "range_end", end),
			   e->timeout_ms, NULL, &r);
	free(k);
	free(end);
	if (err)
		return err;
	*revision = json_i64(
		json_object_get(json_object_get(r, "header"), "revision"));
	arr = json_object_get(r, "kvs");
	if (json_array_size(arr)) {
		*kvs = calloc(json_array_size(arr), sizeof(**kvs));
		if (!*kvs) {
			json_decref(r);
			return -ENOMEM;
		}
	}
	json_array_foreach(arr, i, kv)
	{
		const char *kk = json_string_value(json_object_get(kv, "key"));
		const char *vv =
			json_string_value(json_object_get(kv, "value"));

		(*kvs)[*n].key = kk ? b64_decode(kk) : NULL;
		(*kvs)[*n].value = b64_decode(vv ? vv : "");
		if ((*kvs)[*n].key && (*kvs)[*n].value)
			(*n)++;
		else {
			free((*kvs)[*n].key);
			free((*kvs)[*n].value);
		}
	}
	json_decref(r);
	if (*revision <= 0) {
		snprintf(e->error, sizeof(e->error), "range: no revision");
		return -EPROTO;
	}
	return 0;
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
