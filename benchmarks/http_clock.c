/* http_clock: an independent client for mcpstart's HTTP clock check (benchmarks/http_clock.py).
 *
 *   http_clock cold PORT PAUSE_MS -- SERVER ARGV...    one cold start, phases from the spawn
 *   http_clock modern PORT PAUSE_MS -- SERVER ARGV...  a stateless call as the first request
 *   http_clock warm PORT N -- SERVER ARGV...           N stateless calls on one connection
 *
 * cold: after PAUSE_MS of idle, CLOCK_MONOTONIC, posix_spawnp of the server (its own process
 * group, output to /dev/null), blocking connect() to 127.0.0.1:PORT retried after every
 * refusal (loopback settles a connect inside the call) on mcpstart's sampling plan: after 2%
 * of the time since the spawn, 50 us to 1 ms; then on that connection POST
 * initialize, POST notifications/initialized, POST tools/list, POST tools/call. Each phase's
 * clock stops when its answer is complete (Content-Length read, or a chunked body's last
 * chunk). Prints port_ms initialize_ms tools_list_ms first_call_ms.
 * modern: the same start, then the 2026-07-28 stateless tools/call as the first request
 * (MCP-Protocol-Version, Mcp-Method, Mcp-Name, params._meta). Prints port_ms first_call_ms.
 * warm: prints the N round trips in ms, one a line. Exit status 1 on any failure (said). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static char buf[1 << 24];
static char session[256];
static int port;
static pid_t server_pid; /* killed with its group on any failure: nothing outlives a run */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void quit(void) {
    if (server_pid > 0) {
        kill(-server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
    }
    exit(1);
}

static void fail(const char *what) {
    fprintf(stderr, "http_clock: %s: %s\n", what, strerror(errno));
    quit();
}

static pid_t spawn(char **argv) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], &actions, &attr, argv, environ) != 0) fail("posix_spawnp");
    return server_pid = pid;
}

static void end(pid_t pid) {
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    server_pid = 0;
}

static double t0; /* the spawn's clock */

static int connect_retrying(double deadline) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    while (now_ms() < deadline) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0) return fd;
        close(fd);
        /* mcpstart's sampling plan (2% of the time since the spawn, 50 us to 1 ms), so both
         * clients time the same thing; a client spinning faster takes a core from the
         * server (measured: Python's server 2.2x slower to listen under a 20 us retry) */
        double wait = (now_ms() - t0) * 0.02;
        wait = wait < 0.05 ? 0.05 : wait > 1.0 ? 1.0 : wait;
        struct timespec retry = {0, (long)(wait * 1e6)};
        nanosleep(&retry, NULL);
    }
    errno = ETIMEDOUT;
    fail("connect");
    return -1;
}

/* One POST (or DELETE with body NULL); returns the status. The whole answer is read. */
static int exchange(int fd, const char *body, const char *extra) {
    static char req[1 << 16];
    int n = snprintf(req, sizeof req,
                     "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\n%s%s%s%sContent-Length: %zu"
                     "\r\n\r\n%s",
                     port, *session ? "Mcp-Session-Id: " : "", session, *session ? "\r\n" : "", extra,
                     strlen(body), body);
    if (write(fd, req, n) != n) fail("write");
    size_t got = 0;
    char *head_end = NULL;
    for (;;) {
        ssize_t r = read(fd, buf + got, sizeof buf - got - 1);
        if (r <= 0) fail("read");
        got += r;
        buf[got] = 0;
        if (!head_end && (head_end = strstr(buf, "\r\n\r\n")) == NULL) continue;
        char *body_at = head_end + 4;
        char *cl = strcasestr(buf, "\r\ncontent-length:");
        if (cl && cl < head_end) {
            if (got - (body_at - buf) >= (size_t)atol(cl + 17)) break;
        } else if (strcasestr(buf, "\r\ntransfer-encoding: chunked") < head_end &&
                   strcasestr(buf, "\r\ntransfer-encoding: chunked")) {
            if (got >= 5 && memcmp(buf + got - 5, "0\r\n\r\n", 5) == 0) break;
        } else if (atoi(buf + 9) == 202 || atoi(buf + 9) == 204) {
            break;
        }
    }
    char *sid = strcasestr(buf, "\r\nmcp-session-id:");
    if (sid && sid < head_end && !*session) {
        sid += 17;
        while (*sid == ' ') sid++;
        size_t len = strcspn(sid, "\r");
        if (len < sizeof session) memcpy(session, sid, len), session[len] = 0;
    }
    return atoi(buf + 9);
}

static const char *INIT = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                          "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":"
                          "{\"name\":\"http_clock\",\"version\":\"1\"}}}";
static const char *INITIALIZED = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
static const char *LIST = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}";
static const char *CALL = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
                          "\"name\":\"reverse_text\",\"arguments\":{\"text\":\"abcdefghijklmnop\"}}}";
static const char *MODERN_CALL =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
    "\"reverse_text\",\"arguments\":{\"text\":\"abcdefghijklmnop\"},\"_meta\":{"
    "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
    "clientInfo\":{\"name\":\"http_clock\",\"version\":\"1\"},\"io.modelcontextprotocol/"
    "clientCapabilities\":{}}}}";
static const char *MODERN_HEADERS = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call"
                                    "\r\nMcp-Name: reverse_text\r\n";

static void expect(int status, int want, const char *what) {
    if (status != want) {
        fprintf(stderr, "http_clock: %s answered HTTP %d\n", what, status);
        quit();
    }
}

int main(int argc, char **argv) {
    if (argc < 6 || strcmp(argv[4], "--") != 0) {
        fprintf(stderr, "usage: http_clock cold|warm PORT PAUSE_MS|N -- SERVER ARGV...\n");
        return 2;
    }
    port = atoi(argv[2]);
    char **server = argv + 5;
    if (strcmp(argv[1], "warm") == 0) {
        int n = atoi(argv[3]);
        t0 = now_ms();
        pid_t pid = spawn(server);
        int fd = connect_retrying(now_ms() + 60000);
        expect(exchange(fd, MODERN_CALL, MODERN_HEADERS), 200, "tools/call");
        for (int i = 0; i < n; i++) {
            double t = now_ms();
            expect(exchange(fd, MODERN_CALL, MODERN_HEADERS), 200, "tools/call");
            printf("%.4f\n", now_ms() - t);
        }
        end(pid);
        return 0;
    }
    struct timespec pause = {0, (long)(atof(argv[3]) * 1e6)};
    nanosleep(&pause, NULL);
    t0 = now_ms();
    pid_t pid = spawn(server);
    int fd = connect_retrying(t0 + 60000);
    double accepting = now_ms() - t0;
    if (strcmp(argv[1], "modern") == 0) {
        expect(exchange(fd, MODERN_CALL, MODERN_HEADERS), 200, "stateless tools/call");
        printf("%.4f %.4f\n", accepting, now_ms() - t0);
        end(pid);
        return 0;
    }
    double phase[3];
    expect(exchange(fd, INIT, ""), 200, "initialize");
    phase[0] = now_ms() - t0;
    static char headers[512];
    snprintf(headers, sizeof headers, "MCP-Protocol-Version: 2025-11-25\r\n");
    expect(exchange(fd, INITIALIZED, headers), 202, "notifications/initialized");
    expect(exchange(fd, LIST, headers), 200, "tools/list");
    phase[1] = now_ms() - t0;
    expect(exchange(fd, CALL, headers), 200, "tools/call");
    phase[2] = now_ms() - t0;
    end(pid);
    printf("%.4f %.4f %.4f %.4f\n", accepting, phase[0], phase[1], phase[2]);
    return 0;
}
