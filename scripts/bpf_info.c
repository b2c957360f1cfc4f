// SPDX-License-Identifier: MIT
/*
 * `make info`: load each BPF object (nothing pinned, nothing attached) and
 * print every program's verifier instruction count and stack use, so that
 * growth is visible in review.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define LOG_SIZE (1 << 20)

static void report(const char *obj_name, struct bpf_program *prog,
		   const char *log)
{
	const char *p = strstr(log, "processed ");
	const char *s = strstr(log, "stack depth ");
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	long insns = p ? strtol(p + 10, NULL, 10) : -1;
	char stack[64] = "?";

	if (s)
		sscanf(s + 12, "%63[0-9+]", stack);
	bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);
	printf("%-18s %-16s %12ld %12u %12s\n", obj_name,
	       bpf_program__name(prog), insns, info.xlated_prog_len / 8, stack);
}

static int info_one(const char *path)
{
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct bpf_map *map;
	char *logs[16] = {0};
	int i = 0, err;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		fprintf(stderr, "bpf-info: cannot open %s\n", path);
		return 1;
	}
	for (map = bpf_object__next_map(obj, NULL); map;
	     map = bpf_object__next_map(obj, map))
		bpf_map__set_pin_path(map, NULL);
	for (prog = bpf_object__next_program(obj, NULL); prog;
	     prog = bpf_object__next_program(obj, prog)) {
		if (i == 16)
			break;
		logs[i] = calloc(1, LOG_SIZE);
		bpf_program__set_log_buf(prog, logs[i], LOG_SIZE);
		bpf_program__set_log_level(prog, 4 /* stats only */);
		i++;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "bpf-info: cannot load %s: %d\n", path, err);
	} else {
		const char *base = strrchr(path, '/');

		i = 0;
		for (prog = bpf_object__next_program(obj, NULL); prog;
		     prog = bpf_object__next_program(obj, prog)) {
			if (i == 16)
				break;
			report(base ? base + 1 : path, prog, logs[i++]);
		}
	}
	bpf_object__close(obj);
	for (i = 0; i < 16; i++)
		free(logs[i]);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc = 0;

	printf("%-18s %-16s %12s %12s %12s\n", "OBJECT", "PROGRAM", "VERIFIED",
	       "XLATED_INSNS", "STACK");
	for (int i = 1; i < argc; i++)
		rc |= info_one(argv[i]);
	return rc;
}
