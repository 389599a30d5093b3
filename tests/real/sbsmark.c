/* sbsmark MODE N: a workload of known counts for side_by_side.sh, under a command name
 * (comm "sbsmark") no other process has, so the real tool's lines and sluice's records of
 * it can be told from the rest of the system's:
 *   exec    N times fork + execve of itself ("sbsmark child": execsnoop sees N execs)
 *   exit    N children that exit at once (exitsnoop: N, plus the parent's own exit)
 *   stat    N stat(2) of a file that exists (statsnoop: N)
 *   open    N openat(2) of a file that exists (opensnoop: N)
 *   signal  N kill(2) of itself with SIGUSR1, handled (sigsnoop: N)
 *   umount  N umount2(2) of a path that does not exist, failing (mountsnoop: N), 1 ms
 *           apart: mountsnoop's ring buffer holds 29 of its 8.7 KB records, and a burst
 *           overflows it in any reader (the real tool kept 73 of 200 unpaced here)
 *   tcp     N loopback TCP connections, each connected, accepted and closed
 *           (tcplife: 2N sessions ended, tcpstates: the state changes of 2N sockets)
 * Exit status 0 when every call did what was expected. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void on_usr1(int sig) { (void)sig; handled++; }

static int tcp_once(void) {
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len) || connect(c, (struct sockaddr *)&a, sizeof a))
		return -1;
	int s = accept(l, NULL, NULL);
	if (s < 0)
		return -1;
	close(c);
	close(s);
	close(l);
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 2 && !strcmp(argv[1], "child"))
		return 0;
	if (argc != 3) {
		fprintf(stderr, "usage: sbsmark exec|exit|stat|open|signal|umount|tcp N\n");
		return 2;
	}
	const char *mode = argv[1];
	long n = atol(argv[2]);
	int bad = 0;
	/* The path itself, not /proc/self/exe: an exec names the new comm after the file. */
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0)
		return 2;
	self[len] = 0;
	if (!strcmp(mode, "signal"))
		signal(SIGUSR1, on_usr1);
	for (long i = 0; i < n; i++) {
		if (!strcmp(mode, "exec") || !strcmp(mode, "exit")) {
			pid_t p = fork();
			if (p == 0) {
				if (!strcmp(mode, "exec"))
					execl(self, "sbsmark", "child", (char *)NULL);
				_exit(0);
			}
			int st;
			bad |= p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st);
		} else if (!strcmp(mode, "stat")) {
			struct stat sb;
			bad |= stat("/proc/self/exe", &sb) != 0;
		} else if (!strcmp(mode, "open")) {
			int fd = open("/proc/self/exe", O_RDONLY);
			bad |= fd < 0;
			close(fd);
		} else if (!strcmp(mode, "signal")) {
			bad |= kill(getpid(), SIGUSR1) != 0;
		} else if (!strcmp(mode, "umount")) {
			bad |= umount2("/sbsmark-is-not-mounted", 0) == 0;
			usleep(1000);
		} else if (!strcmp(mode, "tcp")) {
			bad |= tcp_once() != 0;
		} else {
			fprintf(stderr, "sbsmark: unknown mode %s\n", mode);
			return 2;
		}
	}
	if (!strcmp(mode, "signal"))
		bad |= handled != n;
	return bad;
}
