// SPDX-License-Identifier: MIT
/*
 * Injected failures, for the tests of the reload's rollback: a kernel
 * refusal part-way through an apply (ENOMEM on a map, a refused update)
 * is rare and hard to cause on purpose, so a test arms "the Nth write at
 * SITE fails with ENOMEM" and checks that nothing was left half-applied.
 * Disarmed, each check is one comparison.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane.h"
#include "log.h"

#define FAULTS_MAX 8

static struct fault {
	char site[32];
	unsigned long countdown; /* writes at @site left before the failure */
} faults[FAULTS_MAX];
static size_t nfaults;

int dp_faults_arm(const char *spec)
{
	char *copy = strdup(spec), *save = NULL, *tok;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	nfaults = 0;
	for (tok = strtok_r(copy, ", \t\n", &save); tok && !err;
	     tok = strtok_r(NULL, ", \t\n", &save)) {
		char *colon = strchr(tok, ':'), *end;
		unsigned long n;

		if (!colon || colon == tok ||
		    (size_t)(colon - tok) >= sizeof(faults[0].site) ||
		    nfaults == FAULTS_MAX) {
			err = -EINVAL;
			break;
		}
		n = strtoul(colon + 1, &end, 10);
		if (*end || n == 0) {
			err = -EINVAL;
			break;
		}
		memcpy(faults[nfaults].site, tok, (size_t)(colon - tok));
		faults[nfaults].site[colon - tok] = 0;
		faults[nfaults].countdown = n;
		nfaults++;
	}
	free(copy);
	if (err)
		nfaults = 0;
	return err;
}

void dp_faults_arm_from_env(void)
{
	const char *path = getenv("RINGSTEER_TEST_FAULTS");
	char spec[256] = "";
	FILE *f;

	if (!path || !(f = fopen(path, "re")))
		return;
	if (fgets(spec, sizeof(spec), f) && dp_faults_arm(spec))
		rs_warn("%s: not a fault list (SITE:N,...)", path);
	fclose(f);
}

void dp_faults_disarm(void)
{
	nfaults = 0;
}

int dp_fault(const char *site)
{
	for (size_t i = 0; i < nfaults; i++) {
		if (strcmp(faults[i].site, site) || !faults[i].countdown)
			continue;
		if (--faults[i].countdown)
			continue;
		rs_warn("bpf: injected failure at %s (test hook)", site);
		return -ENOMEM;
	}
	return 0;
}
