// SPDX-License-Identifier: MIT
#include <string.h>

#include <ringsteer/abi.h>

#include "name.h"

bool rs_name_ok(const char *s)
{
	size_t n = strlen(s);

	/*
	 * A leading '-' would make a name an option to any command line it
	 * is put on: the CLI's own, the prerm's replay with an older CLI, an
	 * operator's shell.
	 */
	if (n == 0 || n >= RS_NAME_MAX || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}
