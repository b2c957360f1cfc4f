// SPDX-License-Identifier: MIT
/*
 * notify_listen: systemd's end of sd_notify, for tests.
 *
 *   notify_listen SOCKET [PATH...]
 *
 * Binds a unix datagram socket at SOCKET (give it to the daemon as
 * NOTIFY_SOCKET), prints "ready", then one line per datagram with its
 * newlines as '|'. A datagram carrying READY=1 gets " paths=ok" when
 * every PATH exists at the moment it arrives, else " paths=missing:PATH":
 * whether the daemon said ready before its pins were there is decided
 * here, not later. Runs until SIGTERM; removes SOCKET when it ends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int has_field(const char *msg, const char *field)
{
	size_t n = strlen(field);

	for (const char *p = msg; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (!strncmp(p, field, n) && (p[n] == '\n' || !p[n]))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct sigaction act = {.sa_handler = on_term};
	char buf[4096];
	int fd;

	if (argc < 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: notify_listen SOCKET [PATH...]\n");
		return 2;
	}
	/* No SA_RESTART: the signal ends the blocking recv. */
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("notify_listen: bind");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
		const char *missing = NULL;
		int ready;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			perror("notify_listen: recv");
			break;
		}
		buf[n] = '\0';
		ready = has_field(buf, "READY=1");
		if (ready)
			for (int i = 2; i < argc && !missing; i++)
				if (access(argv[i], F_OK))
					missing = argv[i];
		for (char *p = buf; *p; p++)
			if (*p == '\n')
				*p = '|';
		if (ready)
			printf("%s paths=%s%s\n", buf,
			       missing ? "missing:" : "ok",
			       missing ? missing : "");
		else
			printf("%s\n", buf);
		fflush(stdout);
	}
	unlink(argv[1]);
	return 0;
}
