// SPDX-License-Identifier: MIT
/*
 * ringsteer: the operator's CLI. This first cut reads the pinned data plane
 * directly; the control-socket commands arrive with the daemon's control
 * socket.
 */
#include <stdio.h>
#include <string.h>

#include "version.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: ringsteer COMMAND\n"
		   "  version   print the version\n"
		   "  help      this text\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "help") ||
	    !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "version")) {
		printf("ringsteer %s\n", RS_VERSION);
		return 0;
	}
	fprintf(stderr, "ringsteer: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
