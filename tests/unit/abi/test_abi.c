// SPDX-License-Identifier: MIT
/*
 * Every change of what a pinned value means bumps the ABI. The layout of
 * include/ringsteer/abi.h (each struct's size and every member's offset
 * and type, each enum's values, each constant's value) is printed from
 * the BTF of a test object that holds one of each, and must equal
 * tests/unit/abi/<RS_ABI_VERSION>.txt. A layout, flag or limit changed
 * without a new ABI fails here, before a daemon of the old ABI misreads
 * the new one's pins (issue 37: a flag added to rs_conn without a bump
 * made a rollback count connections against a service that does not
 * exist). How to bump: docs/architecture.md "The ABI".
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <bpf/btf.h>
#include <xxhash.h>

#include <ringsteer/abi.h>

#include "test_abi_layout.skel.h"

#define ABI_H "include/ringsteer/abi.h"
/* abi.h and the themed headers it includes: what test_complete reads. */
static const char *const abi_headers[] = {
	ABI_H,
	"include/ringsteer/abi_base.h",
	"include/ringsteer/abi_maps.h",
	"include/ringsteer/abi_fleet.h",
	"include/ringsteer/abi_trace.h",
};
#define ABI_DIR "tests/unit/abi"

/*
 * One row per ABI ever released: XXH64 (seed 0) of its layout file. A
 * row is never changed: the files are the record of what each ABI's pins
 * hold, which an upgrade or a rollback meets on a host.
 */
static const struct {
	unsigned int abi;
	unsigned long long hash;
} abi_rows[] = {
	{8, 0x942440b4d05b9311ull},  {9, 0x8e62fa2c24efee14ull},
	{10, 0x49c14ccc254a6e6cull}, {11, 0xacae6d98627a9bd1ull},
	{12, 0x2069ac3c2f674cefull},
};

/* Every object-like macro of abi.h but RS_ABI_VERSION (the row's key). */
#define C(name)                                                                \
	{                                                                      \
#name, (unsigned long long)(name)                              \
	}
static const struct {
	const char *name;
	unsigned long long value;
} abi_consts[] = {
	C(RS_NONE),
	C(RS_NAME_MAX),
	C(RS_MAX_SERVICES),
	C(RS_AF_INET),
	C(RS_AF_INET6),
	C(RS_MAX_BACKENDS),
	C(RS_MAX_BINDS),
	C(RS_MAX_RING_POINTS),
	C(RS_RING_MAP_FLAGS),
	C(RS_SEARCH_STEPS),
	C(RS_WALK_MAX),
	C(RS_MAX_BUCKET_BITS),
	C(RS_RING_FLAT),
	C(RS_RING_BITS_MASK),
	C(RS_PORT_WORDS),
	C(RS_SOCKMAP_SLOTS),
	C(RS_QUIC_MAX_SERVER_ID),
	C(RS_QUIC_LB_CONFIGS),
	C(RS_CONN_COUNTED),
	C(RS_CONN_STATE_CB),
	C(RS_CONN_FLAGS),
	C(RS_LOAD_TCP_STATES),
	C(RS_LOAD_CLAMP),
	C(RS_LOAD_UNBOUNDED),
	C(RS_GEN_SOCKETS_MAX),
	C(RS_GEN_FLOWS_DEFAULT),
	C(RS_FLAT_SPLIT),
	C(RS_FLAT_BACKEND_SHIFT),
	C(RS_FLAT_ORDINAL_MASK),
	C(RS_FLAT_BACKEND_MASK),
	C(RS_FLEET_MAX_MEMBERS),
	C(RS_FLEET_BUCKET_BITS),
	C(RS_FLEET_BUCKETS),
	C(RS_FLEET_ROW_OWNERS),
	C(RS_FLEET_ROWS),
	C(RS_FLEET_SLOT_ADDR6),
	C(RS_FLEET_SLOT_SERVICES),
	C(RS_FLEET_SLOT_ROWS),
	C(RS_FLEET_SLOT_CIDS),
	C(RS_FLEET_CID_SLOTS),
	C(RS_FLEET_CID_PROBES),
	C(RS_FLEET_CID_SEED),
	C(RS_FLEET_SLOT_KEYS),
	C(RS_FLEET_AUTH_KEYS),
	C(RS_FLEET_SLOTS),
	C(RS_FLEET_CURRENT),
	C(RS_FLEET_PREVIOUS),
	C(RS_FLEET_MAP_SLOTS),
	C(RS_FLEET_NO_OWNER),
	C(RS_FLEET_MAX_HOPS),
	C(RS_FLEET_DEFAULT_PORT),
	C(RS_FLEET_MAGIC),
	C(RS_FLEET_WIRE_VERSION),
	C(RS_FLEET_WIRE_MAX),
	C(RS_FLEET_ENCAP_LEN),
	C(RS_FLEET_ENCAP6_LEN),
	C(RS_FLEET_MEMBER_DRAINED),
	C(RS_FLEET_MEMBER_WIRE3),
	C(RS_FLEET_CID_CONFLICT),
	C(RS_FLEET_TAG_INNER4),
	C(RS_FLEET_TAG_INNER6),
	C(RS_FLEET_TAG3_INNER6),
	C(RS_FLEET_TAG_HEAD4),
	C(RS_FLEET_TAG_HEAD6),
	C(RS_FLEET_SIP_KEYS),
	C(RS_FLEET_SIP_HALF),
	C(RS_FLEET_SIP_ENTRIES),
	C(RS_FLEET_FLOWS_MAX),
	C(RS_FLEET_SYN_RETRY_NS),
	C(RS_TRACE_RING_BYTES),
	C(RS_TRACE_F_STICKY_OVER),
	C(RS_TRACE_F_COUNTED),
	C(RS_TRACE_F_STICKY_SET),
	C(RS_TRACE_F_ASSIGNED),
};
#undef C

#define N_ROWS	 (sizeof(abi_rows) / sizeof(abi_rows[0]))
#define N_CONSTS (sizeof(abi_consts) / sizeof(abi_consts[0]))

struct text {
	char *buf;
	size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		t->buf = realloc(t->buf, t->cap);
	}
	va_start(ap, fmt);
	vsnprintf(t->buf + t->len, n + 1, fmt, ap);
	va_end(ap);
	t->len += n;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return NULL;
	n = getdelim(&buf, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	if (len)
		*len = (size_t)n;
	return buf;
}

/* The type behind typedefs and qualifiers. */
static const struct btf_type *resolve(const struct btf *btf, __u32 *id)
{
	const struct btf_type *t = btf__type_by_id(btf, *id);

	while (t && (btf_is_typedef(t) || btf_is_mod(t))) {
		*id = t->type;
		t = btf__type_by_id(btf, *id);
	}
	return t;
}

static void put_members(struct text *t, const struct btf *btf, __u32 id,
			const char *prefix, __u32 base_bits);

/* A member's type: ints by width, named types by name, arrays by count. */
static void put_type(struct text *t, const struct btf *btf, __u32 id)
{
	const struct btf_type *bt = resolve(btf, &id);
	const char *name = bt ? btf__name_by_offset(btf, bt->name_off) : "";

	if (!bt)
		put(t, "?");
	else if (btf_is_int(bt))
		put(t, "%c%u",
		    btf_int_encoding(bt) & BTF_INT_SIGNED ? 's' : 'u',
		    btf_int_bits(bt));
	else if (btf_is_array(bt)) {
		put_type(t, btf, btf_array(bt)->type);
		put(t, "[%u]", btf_array(bt)->nelems);
	} else if (btf_is_composite(bt))
		put(t, "%s %s", btf_is_union(bt) ? "union" : "struct",
		    *name ? name : "(inline)");
	else if (btf_is_enum(bt))
		put(t, "enum %s", name);
	else
		put(t, "kind%u", btf_kind(bt));
}

static void put_member(struct text *t, const struct btf *btf,
		       const struct btf_type *st, int i, const char *prefix,
		       __u32 base_bits)
{
	const struct btf_member *m = btf_members(st) + i;
	const char *mname = btf__name_by_offset(btf, m->name_off);
	__u32 off = base_bits + btf_member_bit_offset(st, i), tid = m->type;
	const struct btf_type *mt = resolve(btf, &tid);
	char sub[256];

	/* Anonymous structs and unions are printed in place, dotted. */
	if (mt && btf_is_composite(mt) && !mt->name_off) {
		snprintf(sub, sizeof(sub), "%s%s%s", prefix, mname,
			 *mname ? "." : "");
		put(t, "  %u %s%s (%s, %u bytes)\n", off / 8, prefix,
		    *mname ? mname : "-", btf_is_union(mt) ? "union" : "struct",
		    mt->size);
		put_members(t, btf, tid, sub, off);
		return;
	}
	put(t, "  %u", off / 8);
	if (off % 8 || btf_member_bitfield_size(st, i))
		put(t, ".%u:%u", off % 8, btf_member_bitfield_size(st, i));
	put(t, " %s%s ", prefix, mname);
	put_type(t, btf, m->type);
	put(t, "\n");
}

static void put_members(struct text *t, const struct btf *btf, __u32 id,
			const char *prefix, __u32 base_bits)
{
	const struct btf_type *st = btf__type_by_id(btf, id);

	for (int i = 0; i < btf_vlen(st); i++)
		put_member(t, btf, st, i, prefix, base_bits);
}

static void put_enum(struct text *t, const struct btf *btf,
		     const struct btf_type *et, const char *name)
{
	put(t, "enum %s %u\n", name, et->size);
	for (int i = 0; i < btf_vlen(et); i++)
		put(t, "  %s = %d\n",
		    btf__name_by_offset(btf, btf_enum(et)[i].name_off),
		    btf_enum(et)[i].val);
}

/* Structs and enums named rs_*, sorted by name (BTF keeps no order). */
static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void put_types(struct text *t, const struct btf *btf)
{
	const char *names[256] = {0};
	size_t n = 0;
	__u32 count = btf__type_cnt(btf);

	for (__u32 id = 1; id < count && n < 256; id++) {
		const struct btf_type *bt = btf__type_by_id(btf, id);
		const char *name = btf__name_by_offset(btf, bt->name_off);

		if ((btf_is_composite(bt) || btf_is_enum(bt)) &&
		    !strncmp(name, "rs_", 3))
			names[n++] = name;
	}
	qsort(names, n, sizeof(names[0]), by_name);
	for (size_t i = 0; i < n; i++) {
		__s32 id =
			btf__find_by_name_kind(btf, names[i], BTF_KIND_STRUCT);
		const struct btf_type *bt;

		if (id < 0)
			id = btf__find_by_name_kind(btf, names[i],
						    BTF_KIND_UNION);
		if (id < 0) {
			id = btf__find_by_name_kind(btf, names[i],
						    BTF_KIND_ENUM);
			put_enum(t, btf, btf__type_by_id(btf, id), names[i]);
			continue;
		}
		bt = btf__type_by_id(btf, id);
		put(t, "%s %s %u\n", btf_is_union(bt) ? "union" : "struct",
		    names[i], bt->size);
		put_members(t, btf, id, "", 0);
	}
}

static struct btf *layout_btf(void)
{
	size_t sz;
	const void *elf = test_abi_layout_bpf__elf_bytes(&sz);
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	struct bpf_object *obj = bpf_object__open_mem(elf, sz, &opts);
	struct btf *btf;
	const void *raw;
	__u32 raw_len = 0;

	if (!obj)
		return NULL;
	/* The object's BTF dies with it: keep a copy of our own. */
	raw = btf__raw_data(bpf_object__btf(obj), &raw_len);
	btf = btf__new(raw, raw_len);
	bpf_object__close(obj);
	return btf;
}

/* The layout file of this build's ABI, as it must read. */
static char *layout_text(void)
{
	struct text t = {0};
	struct btf *btf = layout_btf();

	if (!btf)
		return NULL;
	/* The test's first path: the released files are hashed, so it stays. */
	put(&t,
	    "# ringsteer ABI %u: what include/ringsteer/abi.h pins "
	    "(tests/unit/test_abi.c)\n",
	    RS_ABI_VERSION);
	for (size_t i = 0; i < N_CONSTS; i++)
		put(&t, "const %s = 0x%llx\n", abi_consts[i].name,
		    abi_consts[i].value);
	put_types(&t, btf);
	btf__free(btf);
	return t.buf;
}

static bool has_const(const char *name)
{
	for (size_t i = 0; i < N_CONSTS; i++)
		if (!strcmp(abi_consts[i].name, name))
			return true;
	return !strcmp(name, "RS_ABI_VERSION");
}

/*
 * A macro, struct or enum added to @path (abi.h or a header it includes)
 * is in the layout @text, or this fails naming it: abi_consts above,
 * test_abi_layout.bpf.c for types.
 */
static void check_complete(const char *path, const char *text)
{
	char *src = slurp(path, NULL), *p;
	char name[128], want[160];

	CU_ASSERT_PTR_NOT_NULL_FATAL(src);
	for (p = src; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		char kind[16], brace = 0;
		int end = 0;

		if (sscanf(p, "#define %127[A-Za-z0-9_]%n", name, &end) == 1 &&
		    !strncmp(name, "RS_", 3) &&
		    p[strlen("#define ") + strlen(name)] != '(') {
			if (!has_const(name))
				fprintf(stderr,
					"\n%s: %s is not in abi_consts\n", path,
					name);
			CU_ASSERT(has_const(name));
		}
		if (sscanf(p, "%15[a-z] rs_%100[a-z0-9_] %c", kind, name,
			   &brace) == 3 &&
		    brace == '{' &&
		    (!strcmp(kind, "struct") || !strcmp(kind, "enum"))) {
			snprintf(want, sizeof(want), "\n%s rs_%s ", kind, name);
			if (!strstr(text, want))
				fprintf(stderr,
					"\n%s: %s rs_%s is not in "
					"tests/bpf/progs/"
					"test_abi_layout.bpf.c\n",
					path, kind, name);
			CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
		}
	}
	free(src);
}

static void test_complete(void)
{
	char *text = layout_text();

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	for (size_t i = 0; i < sizeof(abi_headers) / sizeof(abi_headers[0]);
	     i++)
		check_complete(abi_headers[i], text);
	free(text);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The layout now is the one recorded for RS_ABI_VERSION. */
static void test_layout(void)
{
	char path[128], out[128], *want, *text = layout_text();
	unsigned int abi = RS_ABI_VERSION;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	snprintf(path, sizeof(path), "%s/%u.txt", ABI_DIR, abi);
	snprintf(out, sizeof(out), "build/tests/abi-%u.txt", abi);
	want = slurp(path, NULL);
	if (!want || strcmp(want, text)) {
		write_file(out, text);
		if (want)
			fprintf(stderr,
				"\nThe layout of ABI %u changed (diff %s %s). "
				"Pins of ABI %u on a host would be misread: "
				"bump RS_ABI_VERSION to %u, run this test "
				"again and record the new ABI as it says "
				"(docs/architecture.md \"The ABI\")\n",
				abi, path, out, abi, abi + 1);
		else
			fprintf(stderr,
				"\nABI %u has no layout file: cp %s %s and add "
				"{%u, 0x%llxull} to abi_rows in %s\n",
				abi, out, path, abi,
				(unsigned long long)XXH64(text, strlen(text),
							  0),
				__FILE__);
	}
	CU_ASSERT_PTR_NOT_NULL(want);
	CU_ASSERT(want && !strcmp(want, text));
	free(want);
	free(text);
}

/*
 * Each recorded ABI's file is as it was recorded (a released ABI's
 * layout never changes), and this build's ABI is the newest row.
 */
static void test_rows(void)
{
	for (size_t i = 0; i < N_ROWS; i++) {
		char path[128], *text;
		size_t len = 0;
		unsigned long long h;

		snprintf(path, sizeof(path), "%s/%u.txt", ABI_DIR,
			 abi_rows[i].abi);
		text = slurp(path, &len);
		CU_ASSERT_PTR_NOT_NULL(text);
		h = text ? (unsigned long long)XXH64(text, len, 0) : 0;
		if (h != abi_rows[i].hash)
			fprintf(stderr,
				"\n%s hashes to 0x%llx, its row says 0x%llx: "
				"a released ABI's layout is never edited\n",
				path, h, abi_rows[i].hash);
		CU_ASSERT_EQUAL(h, abi_rows[i].hash);
		CU_ASSERT(i == 0 || abi_rows[i].abi > abi_rows[i - 1].abi);
		free(text);
	}
	CU_ASSERT_EQUAL(abi_rows[N_ROWS - 1].abi, RS_ABI_VERSION);
}

int main(void)
{
	CU_pSuite s;
	int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("abi", NULL, NULL);
	CU_add_test(s, "every constant, struct and enum of abi.h is checked",
		    test_complete);
	CU_add_test(s, "the layout is the one recorded for RS_ABI_VERSION",
		    test_layout);
	CU_add_test(s, "recorded ABIs are unchanged, this one is the newest",
		    test_rows);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed != 0 || CU_get_error();
}
