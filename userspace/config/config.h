/* SPDX-License-Identifier: MIT */
/*
 * ringsteerd configuration: INI (inih), validated as a whole. A file with
 * any error yields no configuration at all, so a bad file never changes
 * running state.
 */
#ifndef RS_CONFIG_H
#define RS_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <ringsteer/abi.h>

#include "health.h"

#define RS_DEFAULT_BPFFS	  "/sys/fs/bpf/ringsteer"
#define RS_DEFAULT_CONTROL_SOCKET "/run/ringsteer/ringsteerd.sock"
/* Concurrent clients of the control socket and of the metrics endpoint. */
#define RS_DEFAULT_CONTROL_CLIENTS 32
#define RS_DEFAULT_METRICS_CLIENTS 32
#define RS_MAX_CLIENTS		   4096
/* A client that neither sends nor reads for this long is dropped. */
#define RS_DEFAULT_CLIENT_IDLE_MS 10000
#define RS_DEFAULT_CONFIG	  "/etc/ringsteer/ringsteer.conf"
/*
 * Points per unit of weight when a service does not set vnodes: max/mean
 * 1.03 at 32 backends (docs/benchmarks.md). Earlier versions defaulted to
 * RS_LEGACY_VNODES (max/mean 1.15); a daemon that adopts a ring built
 * with that keeps it until a reload (rs_config_default_vnodes()).
 */
#define RS_DEFAULT_VNODES 4096u
#define RS_LEGACY_VNODES  160u
#define RS_MAX_WEIGHT	  256
#define RS_MAX_LISTENS	  64 /* per service */
#define RS_MAX_INTERFACES 16
#define RS_IFNAME_MAX	  16

/* Health check defaults, as documented in docs/operations.md. */
#define RS_DEFAULT_INTERVAL_MS	      2000
#define RS_DEFAULT_TIMEOUT_MS	      1000
#define RS_DEFAULT_RISE		      2
#define RS_DEFAULT_FALL		      3
#define RS_DEFAULT_STICKY_MAX	      1048576
#define RS_DEFAULT_QUIC_SERVER_ID_LEN 2
#define RS_DEFAULT_QUIC_CID_LEN	      8

/*
 * ~832 MiB of kernel memory, which the kernel fills in while the daemon
 * waits: 0.2 s measured here, against 2-4 s for twice as many entries.
 */
#define RS_MAX_STICKY_MAX (1u << 23)

/*
 * Kernel memory the rings and sticky tables of all services may take
 * ([global] memory_max): room for a few services with a default sticky
 * table (~100 MiB each) and rings of any size up to 1M points (~16 MiB).
 */
#define RS_DEFAULT_MEMORY_MAX (256ull << 20)

/* One `listen =` entry: a destination prefix and port. */
struct rs_listen {
	uint8_t family;	   /* AF_INET or AF_INET6 */
	uint8_t prefixlen; /* address prefix length */
	uint16_t port;	   /* host order; 0 = every port */
	uint8_t addr[16];  /* network order, host bits zeroed */
	int line;
};

struct rs_service_conf {
	char name[RS_NAME_MAX];
	int line;	  /* of the [service NAME] header */
	uint8_t protocol; /* IPPROTO_TCP or IPPROTO_UDP */
	struct rs_listen listens[RS_MAX_LISTENS];
	size_t n_listens;
	uint8_t key_policy; /* enum rs_key_policy */
	uint8_t prefix4;
	uint8_t prefix6;
	uint8_t fallback; /* enum rs_fallback */
	uint32_t vnodes;
	bool vnodes_set; /* vnodes is in the file, not the default */
	uint64_t seed;
	uint32_t sticky_ttl;	    /* seconds, 0 = off */
	uint32_t sticky_max;	    /* entries of the sticky LRU table */
	uint8_t cookie;		    /* enum rs_cookie_policy; quic needs udp */
	uint8_t quic_server_id_len; /* 1..RS_QUIC_MAX_SERVER_ID */
	uint8_t quic_cid_len;	    /* 1 + server_id_len .. 20 */
	uint8_t quic_config_id;	    /* 0..6 */
	/*
	 * QUIC-LB encryption (docs/quic.md "Encrypted CIDs"): the key of
	 * quic_config_id, and a previous config still decoded during a
	 * rotation (plaintext when it has no key). Keys are read from
	 * owner-only files at parse time and never printed.
	 */
	uint8_t quic_nonce_len; /* 0: the rest of the CID after the ID */
	bool quic_key_set;
	uint8_t quic_key[16];
	bool quic_prev_set; /* quic_previous_config_id is in the file */
	uint8_t quic_prev_config_id;
	bool quic_prev_key_set;
	uint8_t quic_prev_key[16];
	uint32_t balance_milli; /* balance_factor x 1000; 0 = no bound */
	bool fleet;		/* steered fleet-wide ([fleet], fleet = on) */
	/*
	 * UDP only: how long a backend that lost its socket (a restart)
	 * keeps its flows, which wait for it (dropped) rather than going to
	 * another backend; 0 = off (they go on at once).
	 */
	uint32_t restart_grace_ms;
	/*
	 * UDP only: a backend's address may hold sockets of several
	 * processes; the newest takes new flows, each older one keeps the
	 * flows recorded on it (rs_udp_flows) until it closes.
	 */
	bool generations;
	uint32_t flow_idle_s; /* a recorded flow idle this long is dropped */
};

/* flow_table when a service has generations and the file sets none. */
#define RS_DEFAULT_FLOW_IDLE_S 125

/*
 * A backend may listen on one IPv4 and one IPv6 address: a connection only
 * goes to a socket of a compatible family. A single AF_INET6 socket that is
 * not IPV6_V6ONLY serves both families.
 */
#define RS_MAX_BACKEND_ADDRS 2

struct rs_backend_addr {
	uint8_t family;
	uint8_t addr[16]; /* network order; all zero = wildcard */
	uint16_t port;	  /* host order, never 0 */
	int line;
};

struct rs_backend_conf {
	char name[RS_NAME_MAX];
	int line;
	size_t service; /* index into rs_config.services */
	struct rs_backend_addr addrs[RS_MAX_BACKEND_ADDRS];
	size_t n_addrs;
	uint32_t weight; /* 0..RS_MAX_WEIGHT */
	struct rs_health_conf health;
	/*
	 * owner = USER or UID: only a socket of this user is taken for the
	 * backend (sockets.c); without it, the first socket's user is kept.
	 */
	bool has_owner;
	uint32_t owner_uid;
	char owner[RS_NAME_MAX]; /* as written, for messages */
	/* QUIC server ID (cookie services only; required there). */
	bool has_server_id;
	uint8_t server_id[RS_QUIC_MAX_SERVER_ID]; /* big-endian, sid_len bytes
						   */
};

/* [fleet] (docs/fleet.md): membership in etcd, forwarding between hosts. */
#define RS_FLEET_MAX_ENDPOINTS	   8
#define RS_FLEET_ENDPOINT_MAX	   256
#define RS_FLEET_PREFIX_MAX	   128
#define RS_DEFAULT_FLEET_LEASE_TTL 10 /* seconds */
#define RS_DEFAULT_FLEET_PREFIX	   "/ringsteer"

struct rs_fleet_conf {
	bool enabled; /* the file has a [fleet] section */
	char etcd[RS_FLEET_MAX_ENDPOINTS][RS_FLEET_ENDPOINT_MAX];
	size_t n_etcd;
	char name[RS_NAME_MAX];
	uint32_t addr;	    /* IPv4 forwarding address, network order */
	bool has_addr6;	    /* address6 is set */
	uint8_t addr6[16];  /* IPv6 forwarding address, network order */
	uint32_t lease_ttl; /* seconds */
	uint16_t port;	    /* UDP port of forwarded packets */
	char prefix[RS_FLEET_PREFIX_MAX]; /* etcd key prefix, no trailing / */
	/*
	 * etcd over TLS with RBAC (docs/fleet.md, "etcd over TLS"): files,
	 * "" when not set. The key and the password file are readable by
	 * their owner only; the password is read when connecting, never
	 * kept here.
	 */
	char etcd_ca[PATH_MAX];
	char etcd_cert[PATH_MAX];
	char etcd_key[PATH_MAX];
	char etcd_user[RS_NAME_MAX * 2];
	char etcd_password_file[PATH_MAX];
	/*
	 * The fleet key file (docs/fleet.md, "Signed member records"), ""
	 * without one. Its keys are read when the fleet starts and at each
	 * reload; only the path is kept here.
	 */
	char key_file[PATH_MAX];
	/*
	 * Per-host identities (docs/fleet.md, "Per-host identities"): this
	 * host's Ed25519 private key and every member's public keys, "" when
	 * not set (both or neither). Read at start and at each reload.
	 */
	char identity_key[PATH_MAX];
	char member_keys[PATH_MAX];
};

struct rs_config {
	char path[PATH_MAX];
	char bpffs[PATH_MAX];
	char control_socket[PATH_MAX];
	/*
	 * Where steer_sockops is attached: a cgroup2 path as /proc/PID/cgroup
	 * shows it ("/": the root, every socket of the host). The backends'
	 * listening sockets must be created under it.
	 */
	char sockops_cgroup[PATH_MAX];
	char interfaces[RS_MAX_INTERFACES]
		       [RS_IFNAME_MAX]; /* TC attach points */
	size_t n_interfaces;
	bool has_metrics; /* [global] metrics = ADDR:PORT */
	uint8_t metrics_family;
	uint8_t metrics_addr[16];
	uint16_t metrics_port;
	uint32_t control_clients_max; /* 1..RS_MAX_CLIENTS */
	uint32_t metrics_clients_max; /* 1..RS_MAX_CLIENTS */
	uint32_t client_idle_ms;
	uint64_t memory_max; /* bytes: budget of rs_config_memory() */
	/* Entries of rs_udp_flows; 0 when no service has generations. */
	uint32_t flow_table;
	struct rs_fleet_conf fleet;
	struct rs_service_conf *services;
	size_t n_services;
	struct rs_backend_conf *backends;
	size_t n_backends;
};

/*
 * Largest configuration file read: far above any real one (a file at every
 * limit, 256 services and 1,024 backends with every key, is about 1 MiB),
 * and small enough that reading it never threatens the daemon.
 */
#define RS_CONFIG_MAX_BYTES (16u << 20)

/*
 * Parse and validate @path. On success fills @cfg and returns 0. On failure
 * returns a negative errno (-EINVAL for bad content or a path that is not a
 * regular file, -EFBIG for a file over RS_CONFIG_MAX_BYTES, -errno of open
 * for an unreadable file), leaves @cfg zeroed and writes every error, one
 * per line, as "FILE:LINE: [section] key: what is wrong" (or "FILE: what
 * is wrong" about the file as a whole), into @err (truncated to @errlen,
 * always NUL-terminated). A file without any service is refused: it would
 * stop all steering without a word.
 */
int rs_config_load(const char *path, struct rs_config *cfg, char *err,
		   size_t errlen);

/* A file without services is valid: for --detach, which reads [global]. */
#define RS_CONFIG_ALLOW_EMPTY 0x1u

/* rs_config_load with RS_CONFIG_* @flags. */
int rs_config_load_flags(const char *path, unsigned int flags,
			 struct rs_config *cfg, char *err, size_t errlen);

/* Same as rs_config_load but parses @text; @name is used as FILE. */
int rs_config_load_string(const char *text, const char *name,
			  struct rs_config *cfg, char *err, size_t errlen);

void rs_config_free(struct rs_config *cfg);

/*
 * Kernel memory one service takes, estimated from the map sizes: the ring
 * at its configured weights (an operator's higher weight makes it larger)
 * and the sticky table when sticky_ttl is set. The kernel allocates both
 * in full when the map is created, whatever they hold.
 */
struct rs_service_memory {
	uint64_t ring_points;	 /* weight * vnodes over its backends */
	uint64_t ring_bytes;	 /* points, bucket index and header */
	uint32_t sticky_entries; /* 0: no sticky table */
	uint64_t sticky_bytes;
};

/* Estimates of a ring of @points and a sticky table of @entries. */
uint64_t rs_ring_memory(uint64_t points);
uint64_t rs_sticky_memory(uint32_t entries);

/* The estimate for service @svc of @cfg. */
void rs_config_memory(const struct rs_config *cfg, size_t svc,
		      struct rs_service_memory *out);

/*
 * The data plane's own maps, which the file sizes only by having [fleet]
 * or not (the data plane's dp_pinned_memory()).
 */
struct rs_memory_fixed {
	uint64_t maps;	      /* every map pinned by name */
	uint64_t fleet_maps;  /* of them, the fleet's tables */
	uint64_t gen_maps;    /* of them, the generations' (rs_udp_flows) */
	uint64_t fleet_table; /* with [fleet]: the table's map, made later */
};

/*
 * What `ringsteerd --check` shows: one line per service, then (@fixed
 * not NULL) the data plane's maps, then the total a start pins against
 * memory_max, into @f.
 */
void rs_config_memory_report(const struct rs_config *cfg,
			     const struct rs_memory_fixed *fixed, FILE *f);

/*
 * Services of @cfg without any backend: every client of one gets its
 * fallback. Legal (a service being set up), but rarely meant, so --check,
 * start and reload say so: one line per such service, through @say.
 */
void rs_config_empty_services(const struct rs_config *cfg,
			      void (*say)(const char *line));

/*
 * Fleet services of @cfg that listen on IPv6 while [fleet] has no
 * address6: their IPv6 clients whose key another host owns are steered
 * here instead (docs/fleet.md). Legal, said through @say. So is a [fleet]
 * that reaches etcd with neither a client certificate nor a user, and one
 * without member_keys (records believed on a key every member holds).
 */
void rs_config_fleet_ipv6_notes(const struct rs_config *cfg,
				void (*say)(const char *line));

/*
 * Fraction of service @s's clients that move when its ring, built with
 * @from points per unit of weight, is rebuilt with the vnodes of @cfg
 * (every backend up; exact, from arc lengths). -1 when it cannot be
 * computed (no backends, out of memory).
 */
double rs_config_vnodes_moved(const struct rs_config *cfg, size_t s,
			      uint32_t from);

/*
 * Whether service @s takes the vnodes default while the running ring, by
 * the pinned backend words @words (RS_MAX_BACKENDS, by id), was built
 * with RS_LEGACY_VNODES. The daemon then keeps that until a reload.
 */
bool rs_config_legacy_ring(const struct rs_config *cfg, size_t s,
			   const struct rs_backend *words);

/*
 * For --check: each service rs_config_legacy_ring() names, one line
 * through @say saying how many of its clients a reload would move. With
 * @words NULL (the running data plane is of another ABI, so a start
 * builds every ring anew), each service that takes the default.
 */
void rs_config_default_vnodes(const struct rs_config *cfg,
			      const struct rs_backend *words,
			      void (*say)(const char *line));

/* Index of the service called @name, or -ENOENT. */
int rs_config_find_service(const struct rs_config *cfg, const char *name);

#endif /* RS_CONFIG_H */
