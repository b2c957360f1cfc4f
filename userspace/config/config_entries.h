/* SPDX-License-Identifier: MIT */
/*
 * For the config*.c files only: what the file says, section by section,
 * as the section code collects it and the whole-file checks, the memory
 * budget and the export read it. The rest of ringsteer knows config.h.
 */
#ifndef RS_CONFIG_ENTRIES_H
#define RS_CONFIG_ENTRIES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "config.h"

#define LABEL_MAX 256
#define MAX_KEYS  24

/*
 * Every section entry has key_line[] (where each key was first set, 0 when
 * absent) and key_bad[] (its value was refused, so cross-key checks must not
 * use the default left in its place).
 */
struct global_entry {
	char bpffs[PATH_MAX];
	char control_socket[PATH_MAX];
	char sockops_cgroup[PATH_MAX];
	char interfaces[RS_MAX_INTERFACES][RS_IFNAME_MAX];
	size_t n_interfaces;
	bool has_metrics;
	struct rs_addr metrics;
	uint32_t control_clients_max;
	uint32_t metrics_clients_max;
	uint32_t client_idle_ms;
	uint64_t memory_max;
	uint32_t flow_table; /* 0: not set */
	uint32_t flow_idle_s;
	int line;
	int key_line[MAX_KEYS];
	bool key_bad[MAX_KEYS];
};

struct fleet_entry {
	struct rs_fleet_conf conf;
	int line; /* of [fleet], 0 when absent */
	int key_line[MAX_KEYS];
	bool key_bad[MAX_KEYS];
};

struct svc_entry {
	struct rs_service_conf conf;
	int key_line[MAX_KEYS];
	bool key_bad[MAX_KEYS];
	/* quic_previous_plaintext = on: a keyless previous config is meant */
	bool prev_plaintext;
};

/* Longest server_id text kept for messages; longer text is cut. */
#define SERVER_ID_TEXT_MAX 48

struct be_entry {
	struct rs_backend_conf conf;
	char service[RS_NAME_MAX];
	bool resolved; /* conf.service is valid */
	/* server_id as parsed, right-aligned; placed once sid_len is known */
	uint8_t server_id[RS_QUIC_MAX_SERVER_ID];
	char server_id_text[SERVER_ID_TEXT_MAX];
	int key_line[MAX_KEYS];
	bool key_bad[MAX_KEYS];
};

/* The whole file: services and backends in file order. */
struct cfg_entries {
	struct global_entry global;
	struct fleet_entry fleet;
	struct svc_entry *svcs;
	size_t n_svcs, cap_svcs;
	struct be_entry *bes;
	size_t n_bes, cap_bes;
};

/*
 * Where the keys the whole-file checks look at stand in cfg_service_keys[],
 * cfg_backend_keys[] and cfg_global_keys[], and so in key_line[] and
 * key_bad[].
 */
enum {
	SVC_PROTOCOL,
	SVC_LISTEN,
	SVC_COOKIE,
	SVC_QUIC_SERVER_ID_LEN,
	SVC_QUIC_CID_LEN,
	SVC_VNODES,
	SVC_STICKY_TTL,
	SVC_STICKY_MAX,
	SVC_BALANCE_FACTOR,
	SVC_FLEET,
	SVC_QUIC_CONFIG_ID,
	SVC_QUIC_KEY_FILE,
	SVC_QUIC_PREV_CONFIG_ID,
	SVC_QUIC_PREV_KEY_FILE,
	SVC_QUIC_NONCE_LEN,
	SVC_QUIC_PREV_PLAINTEXT,
	SVC_RESTART_GRACE,
	SVC_GENERATIONS,
	SVC_FLOW_IDLE,
};

enum {
	BE_SERVICE,
	BE_ADDRESS,
	BE_CHECK,
	BE_CHECK_PATH,
	BE_CHECK_EXPECT,
	BE_CHECK_HOST,
	BE_INTERVAL,
	BE_TIMEOUT,
	BE_SERVER_ID,
	BE_CHECK_PORT,
};

enum {
	GL_MEMORY_MAX,
	GL_INTERFACES,
	GL_FLOW_TABLE,
	GL_FLOW_IDLE,
};

enum {
	FL_ETCD,
	FL_NAME,
	FL_ADDRESS,
	FL_ADDRESS6,
	FL_LEASE_TTL,
	FL_PORT,
	FL_PREFIX,
	FL_ETCD_CA,
	FL_ETCD_CERT,
	FL_ETCD_KEY,
	FL_ETCD_USER,
	FL_ETCD_PASSWORD_FILE,
	FL_KEY_FILE,
	FL_IDENTITY_KEY,
	FL_MEMBER_KEYS,
};

#endif /* RS_CONFIG_ENTRIES_H */
