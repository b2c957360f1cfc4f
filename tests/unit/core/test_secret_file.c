// SPDX-License-Identifier: MIT
/*
 * Key and password files as the daemon reads them at a start or reload
 * (userspace/core/secret_file.c): whatever the path has become since the
 * configuration was checked, a read never blocks (FIFO), never runs long
 * (huge or sparse file, device), never takes a file others can read, and
 * returns at most the limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "fleet_keys.h"
#include "secret_file.h"

static char dir[] = "/tmp/rs-test-secret-XXXXXX";
static char path[256];

static void write_file(const char *text, mode_t mode)
{
	FILE *f;

	unlink(path);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(chmod(path, mode), 0);
}

static int read_it(char **out, size_t *len, char *why)
{
	return rs_secret_file_read(path, RS_SECRET_FILE_MAX, out, len, why,
				   256);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Root only (chown): registered when the test runs as root. */
static void test_other_owner(void)
{
	char *out = NULL, why[256];
	size_t len;

	write_file("secret\n", 0600);
	CU_ASSERT_EQUAL_FATAL(chown(path, 65534, 65534), 0);
	CU_ASSERT_EQUAL(read_it(&out, &len, why), -EACCES);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "is owned by uid 65534"));
	/* Back to root's: read. */
	CU_ASSERT_EQUAL_FATAL(chown(path, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(read_it(&out, &len, why), 0);
	free(out);
}

static void test_regular(void)
{
	char *out, why[256];
	size_t len;

	write_file("secret\n", 0600);
	CU_ASSERT_EQUAL_FATAL(read_it(&out, &len, why), 0);
	CU_ASSERT_EQUAL(len, 7);
	CU_ASSERT_STRING_EQUAL(out, "secret\n");
	free(out);
	write_file("", 0400);
	CU_ASSERT_EQUAL_FATAL(read_it(&out, &len, why), 0);
	CU_ASSERT_EQUAL(len, 0);
	free(out);
}

static void test_refusals(void)
{
	char *out = (char *)1, why[256];
	size_t len;
	double t0;
	int fd;

	write_file("secret\n", 0640);
	CU_ASSERT_EQUAL(read_it(&out, &len, why), -EACCES);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "mode 0640"));
	write_file("secret\n", 0602);
	CU_ASSERT_EQUAL(read_it(&out, &len, why), -EACCES);

	/* A FIFO nobody writes to: refused at once, never waited on. */
	unlink(path);
	CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
	t0 = now_s();
	CU_ASSERT_EQUAL(read_it(&out, &len, why), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a regular file"));
	CU_ASSERT(now_s() - t0 < 5);

	/* A sparse file of 1 TiB: refused by its size, nothing read. */
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(ftruncate(fd, 1ll << 40), 0);
	close(fd);
	t0 = now_s();
	CU_ASSERT_EQUAL(read_it(&out, &len, why), -EFBIG);
	CU_ASSERT(now_s() - t0 < 5);
	/* One byte over the limit. */
	fd = open(path, O_WRONLY | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(ftruncate(fd, RS_SECRET_FILE_MAX + 1), 0);
	close(fd);
	CU_ASSERT_EQUAL(read_it(&out, &len, why), -EFBIG);

	CU_ASSERT_EQUAL(rs_secret_file_read("/dev/zero", RS_SECRET_FILE_MAX,
					    &out, &len, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_EQUAL(rs_secret_file_read(dir, RS_SECRET_FILE_MAX, &out, &len,
					    why, sizeof(why)),
			-EINVAL);
	unlink(path);
	CU_ASSERT_EQUAL(read_it(&out, &len, why), -ENOENT);
}

/* The fleet key file goes through it: a FIFO or a huge file fails fast. */
static void test_key_file_hostile(void)
{
	struct rs_fleet_keys k;
	char why[256];
	double t0;

	unlink(path);
	CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
	t0 = now_s();
	CU_ASSERT_NOT_EQUAL(rs_fleet_keys_read(path, &k, why, sizeof(why)), 0);
	CU_ASSERT(now_s() - t0 < 5);
	CU_ASSERT_EQUAL(k.n, 0);
	unlink(path);
	write_file("00112233445566778899aabbccddeeff\n", 0644);
	CU_ASSERT_EQUAL(rs_fleet_keys_read(path, &k, why, sizeof(why)),
			-EACCES);
	/* A NUL inside: not a key file (a line must not end at it). */
	unlink(path);
	{
		FILE *f = fopen(path, "w");

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fwrite("00112233445566778899aabbccddeeff\n\0x\n", 1, 36, f);
		fclose(f);
		chmod(path, 0600);
	}
	CU_ASSERT_EQUAL(rs_fleet_keys_read(path, &k, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "NUL"));
	unlink(path);
}

int main(void)
{
	CU_pSuite s;
	unsigned int failed;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/secret", dir);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("secret_file", NULL, NULL);
	CU_add_test(s, "a regular owner-only file is read whole", test_regular);
	CU_add_test(s,
		    "group/other modes, FIFO, huge, sparse, devices, "
		    "directories are refused at once",
		    test_refusals);
	CU_add_test(s, "the fleet key file is read through it",
		    test_key_file_hostile);
	if (geteuid() == 0)
		CU_add_test(s, "a file of another user is refused",
			    test_other_owner);
	else
		fprintf(stderr, "test_secret_file: not run (needs root): a "
				"file of another user is refused\n");
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	unlink(path);
	rmdir(dir);
	return failed != 0 || CU_get_error();
}
