/* harness: an independent, minimal cold-start timer for an MCP server over stdio; the
 * reference that mcpstart's own handshake timing is checked against.
 *
 * Usage: harness PAUSE_MS RUNS PROGRAM [ARGS...]
 *
 * What one run times (CLOCK_MONOTONIC): from just before posix_spawnp until the first
 * complete line (the initialize response) has been read from the child's stdout. Between the
 * two: the spawn, one write of the initialize request, closing the parent's copies of the
 * child's pipe ends. Before the clock, and not timed: an idle pause of PAUSE_MS (nanosleep),
 * the pipes, the spawn file actions and attributes (own session via POSIX_SPAWN_SETSID, as
 * mcpstart does; SIGPIPE back to default in the child; stderr to /dev/null). After the clock:
 * close the child's stdin, drain its stdout to EOF, reap it.
 *
 * Output: one line per run, the milliseconds with 4 decimals. Exit 1 (message on stderr) if
 * a spawn fails or the child's stdout ends before a complete line; 2 on bad usage.
 */
#define _GNU_SOURCE /* glibc declares POSIX_SPAWN_SETSID (POSIX.1-2024) only under it */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char REQUEST[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"harness\",\"version\":\"0\"}}}\n";

static void die(const char *what, int err) {
    fprintf(stderr, "harness: %s: %s\n", what, strerror(err));
    exit(1);
}

static long number(const char *s, long min) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min) {
        fprintf(stderr, "harness: bad number %s\nusage: harness PAUSE_MS RUNS PROGRAM [ARGS...]\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: harness PAUSE_MS RUNS PROGRAM [ARGS...]\n");
        return 2;
    }
    long pause_ms = number(argv[1], 0), runs = number(argv[2], 1);
    signal(SIGPIPE, SIG_IGN); /* a child that dies early gives EPIPE here, not a kill */
    for (long run = 0; run < runs; run++) {
        struct timespec idle = {pause_ms / 1000, pause_ms % 1000 * 1000000L}, t0, t1;
        while (nanosleep(&idle, &idle) && errno == EINTR) {}

        int in[2], out[2]; /* child's stdin, child's stdout */
        if (pipe(in) || pipe(out)) die("pipe", errno);
        for (int i = 0; i < 2; i++) { /* dup2 in the child clears FD_CLOEXEC on 0 and 1 */
            fcntl(in[i], F_SETFD, FD_CLOEXEC);
            fcntl(out[i], F_SETFD, FD_CLOEXEC);
        }
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t deflt;
        sigemptyset(&deflt);
        sigaddset(&deflt, SIGPIPE);
        if (posix_spawn_file_actions_init(&fa) || posix_spawnattr_init(&attr) ||
            posix_spawn_file_actions_adddup2(&fa, in[0], 0) ||
            posix_spawn_file_actions_adddup2(&fa, out[1], 1) ||
            posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) ||
            posix_spawnattr_setsigdefault(&attr, &deflt) ||
            posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF)) {
            fprintf(stderr, "harness: posix_spawn file actions or attributes failed\n");
            return 1;
        }

        /* ---- timed ---- */
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pid_t pid;
        int err = posix_spawnp(&pid, argv[3], &fa, &attr, argv + 3, environ);
        if (err) die(argv[3], err);
        if (write(in[1], REQUEST, sizeof REQUEST - 1) != (ssize_t)(sizeof REQUEST - 1))
            die("write to the child's stdin", errno);
        close(in[0]); /* the child's ends: without this, no EOF if the child dies */
        close(out[1]);
        char buf[65536];
        for (;;) {
            ssize_t n = read(out[0], buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) die("read from the child's stdout", errno);
            if (n == 0) {
                fprintf(stderr, "harness: %s: stdout ended before a complete line\n", argv[3]);
                return 1;
            }
            if (memchr(buf, '\n', (size_t)n)) break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        /* ---- end of timed ---- */

        close(in[1]);
        while (read(out[0], buf, sizeof buf) > 0) {} /* a child blocked on a full pipe never exits */
        close(out[0]);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        printf("%.4f\n", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
        fflush(stdout);
    }
    return 0;
}
