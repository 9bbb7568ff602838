/* workload: the four tools of the Streamable HTTP MCP benchmark (docs/workload-servers.md) in
 * C11 + POSIX threads (libc only), the floor of the workload figures.
 *
 * stdio (no arguments): one JSON-RPC message per line; each tools/call runs on a thread of
 * its own, so a slow call does not hold up the next one (answers are written whole, one
 * line each, under a lock).
 * Streamable HTTP (--port PORT): HTTP/1.1 on 127.0.0.1:PORT, one thread per connection,
 * persistent connections, bodies by Content-Length. One endpoint, /mcp: POST carries one
 * JSON-RPC message, answered as application/json; initialize opens a session
 * (Mcp-Session-Id), every later POST and the DELETE must name a live one (400 without, 404
 * for an unknown or ended one); notifications are acknowledged 202; GET answers 405. The
 * handshake era only (2024-11-05 .. 2025-11-25). TCP_NODELAY on every connection.
 *
 * Tools: calculate_fibonacci(n) recursive, 0 <= n <= 40; fetch_external_data(endpoint) an
 * HTTP/1.0 GET of an http:// URL (read to the end; no TLS, no redirects);
 * process_json_data(data) upper-cases every string value of a JSON object (towupper in the
 * C.UTF-8 locale, so beyond ASCII where the C library maps it; keys as they are);
 * simulate_database_query(query, delay_ms) sleeps delay_ms (0..5000) on the call's thread.
 * Each result is structuredContent and the same JSON as a text block.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <locale.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <wctype.h>

#define MAX_DEPTH 512
#define MAX_HEAD 16384
#define SESSION_LEN 33 /* 32 hex digits and a NUL */
static const char *const VERSIONS[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};
#define LATEST "2025-11-25"

typedef struct { const char *p, *e; } tok; /* one raw JSON token, [p, e); p NULL: absent */
struct buf { char *d; size_t n, cap; };

static void put(struct buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        char *d = realloc(b->d, cap);
        if (!d) abort();
        b->d = d, b->cap = cap;
    }
    memcpy(b->d + b->n, s, n);
    b->n += n;
    b->d[b->n] = 0;
}
static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }
static void put_tok(struct buf *b, tok t) { put(b, t.p, (size_t)(t.e - t.p)); }
static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= 0) put(b, small, (size_t)n < sizeof small ? (size_t)n : sizeof small - 1);
}

/* ---- JSON scanning: each returns the end of a valid token at p, or NULL ---- */

static const char *ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static const char *skip_string(const char *p, const char *e) {
    if (p >= e || *p != '"') return NULL;
    for (p++; p < e; p++) {
        if (*p == '\\') { if (++p >= e) return NULL; }
        else if (*p == '"') return p + 1;
        else if ((unsigned char)*p < 0x20) return NULL;
    }
    return NULL;
}

static const char *skip_value(const char *p, const char *e, int depth) {
    p = ws(p, e);
    if (p >= e || depth > MAX_DEPTH) return NULL;
    if (*p == '"') return skip_string(p, e);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = ws(p + 1, e);
        if (p < e && *p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                p = skip_string(ws(p, e), e);
                if (!p || (p = ws(p, e)) >= e || *p++ != ':') return NULL;
            }
            if (!(p = skip_value(p, e, depth + 1)) || (p = ws(p, e)) >= e) return NULL;
            if (*p == close) return p + 1;
            if (*p++ != ',') return NULL;
        }
    }
    const char *s = p; /* number, true, false, null: a run of their characters */
    while (p < e && strchr("+-.0123456789eEtrufalsn", *p)) p++;
    return p > s ? p : NULL;
}

/* The value of member `key` (written without escapes) of object o; {NULL, NULL} if absent. */
static tok member(tok o, const char *key) {
    tok none = {NULL, NULL};
    const char *p = o.p ? ws(o.p, o.e) : NULL, *e = o.e;
    if (!p || p >= e || *p != '{') return none;
    p = ws(p + 1, e);
    size_t n = strlen(key);
    while (p < e && *p == '"') {
        const char *k = p, *ke = skip_string(p, e);
        if (!ke || (p = ws(ke, e)) >= e || *p != ':') return none;
        const char *v = ws(p + 1, e), *ve = skip_value(v, e, 0);
        if (!ve) return none;
        if ((size_t)(ke - k) == n + 2 && !memcmp(k + 1, key, n)) return (tok){v, ve};
        p = ws(ve, e);
        if (p < e && *p == ',') p = ws(p + 1, e);
    }
    return none;
}

static int is(tok t, const char *lit) { /* t is the JSON string lit, written without escapes */
    size_t n = strlen(lit);
    return t.p && (size_t)(t.e - t.p) == n + 2 && *t.p == '"' && !memcmp(t.p + 1, lit, n);
}

static int integer(tok t, long *out) { /* t is a JSON integer */
    if (!t.p || t.p == t.e) return 0;
    char tmp[32], *end;
    size_t n = (size_t)(t.e - t.p);
    if (n >= sizeof tmp) return 0;
    memcpy(tmp, t.p, n), tmp[n] = 0;
    errno = 0;
    *out = strtol(tmp, &end, 10);
    return !errno && *end == 0;
}

static int hex4(const char *p, const char *e) {
    int v = 0;
    for (int i = 0; i < 4; i++, p++) {
        if (p >= e) return -1;
        int c = *p, d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static void put_utf8(struct buf *b, uint32_t c) {
    char s[4];
    size_t n;
    if (c < 0x80) s[0] = (char)c, n = 1;
    else if (c < 0x800) s[0] = (char)(0xC0 | c >> 6), s[1] = (char)(0x80 | (c & 0x3F)), n = 2;
    else if (c < 0x10000) s[0] = (char)(0xE0 | c >> 12), s[1] = (char)(0x80 | (c >> 6 & 0x3F)),
                          s[2] = (char)(0x80 | (c & 0x3F)), n = 3;
    else s[0] = (char)(0xF0 | c >> 18), s[1] = (char)(0x80 | (c >> 12 & 0x3F)),
         s[2] = (char)(0x80 | (c >> 6 & 0x3F)), s[3] = (char)(0x80 | (c & 0x3F)), n = 4;
    put(b, s, n);
}

/* The code point at *pp inside a JSON string (an escape or a UTF-8 sequence), advancing. */
static uint32_t next_char(const char **pp, const char *e) {
    const unsigned char *p = (const unsigned char *)*pp;
    uint32_t c = *p;
    if (c == '\\') {
        char x = (char)p[1];
        *pp += 2;
        if (x != 'u') return x == 'n' ? '\n' : x == 't' ? '\t' : x == 'r' ? '\r' : x == 'b' ? '\b'
                             : x == 'f' ? '\f' : (uint32_t)x;
        int hi = hex4(*pp, e);
        if (hi < 0) return 0xFFFD;
        *pp += 4;
        if (hi >= 0xD800 && hi < 0xDC00 && *pp + 6 <= e && (*pp)[0] == '\\' && (*pp)[1] == 'u') {
            int lo = hex4(*pp + 2, e);
            if (lo >= 0xDC00 && lo < 0xE000) {
                *pp += 6;
                return 0x10000 + (((uint32_t)hi - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            }
        }
        return (uint32_t)hi;
    }
    int n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if ((const char *)p + n > e) n = 1;
    if (n > 1) c &= 0x3F >> (n - 1);
    for (int i = 1; i < n; i++) c = c << 6 | (p[i] & 0x3F);
    *pp += n;
    return c;
}

/* The JSON string token s written again, each character upper-cased when `upper`. */
static void put_string(struct buf *b, tok s, int upper) {
    put(b, "\"", 1);
    for (const char *p = s.p + 1, *e = s.e - 1; p < e;) {
        uint32_t c = next_char(&p, e);
        if (upper) c = (uint32_t)towupper((wint_t)c);
        if (c == '"' || c == '\\') put(b, "\\", 1), put_utf8(b, c);
        else if (c < 0x20) putf(b, "\\u%04x", c);
        else put_utf8(b, c);
    }
    put(b, "\"", 1);
}

/* The JSON value v written again with every string value upper-cased (keys as they are). */
static void put_upper(struct buf *b, tok v) {
    const char *p = ws(v.p, v.e), *e = v.e;
    if (*p == '"') { put_string(b, (tok){p, skip_string(p, e)}, 1); return; }
    if (*p != '{' && *p != '[') { put(b, p, (size_t)(skip_value(p, e, 0) - p)); return; }
    char close = *p == '{' ? '}' : ']';
    put(b, p, 1);
    for (p = ws(p + 1, e); *p != close; p = ws(p, e)) {
        if (*p == ',') { put(b, ",", 1); p = ws(p + 1, e); }
        if (close == '}') {
            const char *ke = skip_string(p, e);
            put_string(b, (tok){p, ke}, 0);
            put(b, ":", 1);
            p = ws(ws(ke, e) + 1, e);
        }
        const char *ve = skip_value(p, e, 0);
        put_upper(b, (tok){p, ve});
        p = ve;
    }
    put(b, &close, 1);
}

/* ---- the tools: each writes its structured output (a JSON object) to out, or returns an
 * error message for the caller to answer as a tool error ---- */

static long fibonacci(long n) { return n <= 1 ? n : fibonacci(n - 1) + fibonacci(n - 2); }

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static const char *calculate_fibonacci(tok args, struct buf *out) {
    long n;
    if (!integer(member(args, "n"), &n) || n < 0 || n > 40) return "n must be an integer from 0 to 40";
    putf(out, "{\"input\":%ld,\"result\":%ld}", n, fibonacci(n));
    return NULL;
}

static const char *fetch_external_data(tok args, struct buf *out) {
    tok url = member(args, "endpoint");
    if (!url.p || *url.p != '"' || memchr(url.p, '\\', (size_t)(url.e - url.p)))
        return "endpoint must be an http:// URL";
    char host[256], port[8] = "80";
    const char *p = url.p + 1, *e = url.e - 1;
    if (e - p < 8 || strncmp(p, "http://", 7)) return "endpoint must be an http:// URL";
    p += 7;
    const char *path = memchr(p, '/', (size_t)(e - p)), *he = path ? path : e;
    const char *colon = memchr(p, ':', (size_t)(he - p));
    if ((size_t)((colon ? colon : he) - p) >= sizeof host || (colon && he - colon - 1 >= (long)sizeof port))
        return "endpoint's host or port is too long";
    memcpy(host, p, (size_t)((colon ? colon : he) - p)), host[(colon ? colon : he) - p] = 0;
    if (colon) memcpy(port, colon + 1, (size_t)(he - colon - 1)), port[he - colon - 1] = 0;
    double start = now_ms();
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port, &hints, &ai)) return "endpoint's host does not resolve";
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
        freeaddrinfo(ai);
        if (fd >= 0) close(fd);
        return "could not connect to the endpoint";
    }
    freeaddrinfo(ai);
    struct buf req = {0}, resp = {0};
    puts_(&req, "GET ");
    if (path) put(&req, path, (size_t)(e - path)); else puts_(&req, "/");
    putf(&req, " HTTP/1.0\r\nHost: %s:%s\r\n\r\n", host, port);
    ssize_t n = 0;
    for (size_t sent = 0; sent < req.n; sent += (size_t)n)
        if ((n = write(fd, req.d + sent, req.n - sent)) <= 0) break;
    char chunk[16384];
    while ((n = read(fd, chunk, sizeof chunk)) > 0) put(&resp, chunk, (size_t)n);
    close(fd);
    free(req.d);
    int status = 0;
    char *body = resp.d ? strstr(resp.d, "\r\n\r\n") : NULL;
    if (!body || sscanf(resp.d, "HTTP/%*s %d", &status) != 1) {
        free(resp.d);
        return "the endpoint's answer is not HTTP";
    }
    body += 4;
    puts_(out, "{\"url\":");
    put_tok(out, url);
    putf(out, ",\"status_code\":%d,\"response_time_ms\":%.3f,\"body\":\"", status, now_ms() - start);
    for (const char *c = body; c < resp.d + resp.n; c++) {
        if (*c == '"' || *c == '\\') put(out, "\\", 1), put(out, c, 1);
        else if ((unsigned char)*c < 0x20) putf(out, "\\u%04x", *c);
        else put(out, c, 1);
    }
    puts_(out, "\"}");
    free(resp.d);
    return NULL;
}

static const char *process_json_data(tok args, struct buf *out) {
    tok data = member(args, "data");
    if (!data.p || *data.p != '{') return "data must be a JSON object";
    puts_(out, "{\"original_keys\":[");
    const char *p = ws(data.p + 1, data.e);
    for (int first = 1; *p == '"'; first = 0) {
        const char *ke = skip_string(p, data.e);
        if (!first) put(out, ",", 1);
        put_string(out, (tok){p, ke}, 0);
        p = ws(skip_value(ws(ws(ke, data.e) + 1, data.e), data.e, 0), data.e);
        if (*p == ',') p = ws(p + 1, data.e);
    }
    puts_(out, "],\"transformed_data\":");
    put_upper(out, data);
    puts_(out, "}");
    return NULL;
}

static const char *simulate_database_query(tok args, struct buf *out) {
    tok query = member(args, "query");
    long ms;
    if (!query.p || *query.p != '"') return "query must be a string";
    if (!integer(member(args, "delay_ms"), &ms) || ms < 0 || ms > 5000)
        return "delay_ms must be an integer from 0 to 5000";
    struct timespec t = {ms / 1000, ms % 1000 * 1000000L};
    while (nanosleep(&t, &t) && errno == EINTR) {}
    puts_(out, "{\"query\":");
    put_tok(out, query);
    putf(out, ",\"delay_ms\":%ld}", ms);
    return NULL;
}

static const struct {
    const char *name;
    const char *(*call)(tok, struct buf *);
} TOOLS[] = {{"calculate_fibonacci", calculate_fibonacci}, {"fetch_external_data", fetch_external_data},
             {"process_json_data", process_json_data}, {"simulate_database_query", simulate_database_query}};

#define TOOL_LIST "{\"tools\":[" \
    "{\"name\":\"calculate_fibonacci\",\"description\":\"Compute the n-th Fibonacci number recursively (CPU-bound).\"," \
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":40}},\"required\":[\"n\"]}," \
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"input\":{\"type\":\"integer\"},\"result\":{\"type\":\"integer\"}},\"required\":[\"input\",\"result\"]}}," \
    "{\"name\":\"fetch_external_data\",\"description\":\"GET a URL and return its status and body (I/O-bound).\"," \
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"endpoint\":{\"type\":\"string\"}},\"required\":[\"endpoint\"]}," \
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"},\"status_code\":{\"type\":\"integer\"}," \
    "\"response_time_ms\":{\"type\":\"number\"},\"body\":{\"type\":\"string\"}},\"required\":[\"url\",\"status_code\",\"response_time_ms\",\"body\"]}}," \
    "{\"name\":\"process_json_data\",\"description\":\"Upper-case every string value of a JSON object.\"," \
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"data\":{\"type\":\"object\"}},\"required\":[\"data\"]}," \
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"original_keys\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}," \
    "\"transformed_data\":{\"type\":\"object\"}},\"required\":[\"original_keys\",\"transformed_data\"]}}," \
    "{\"name\":\"simulate_database_query\",\"description\":\"Simulate a database query: wait delay_ms without blocking (I/O-bound).\"," \
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},\"delay_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":5000}}," \
    "\"required\":[\"query\",\"delay_ms\"]}," \
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},\"delay_ms\":{\"type\":\"integer\"}},\"required\":[\"query\",\"delay_ms\"]}}]}"

/* ---- JSON-RPC: the answer to one request (id present) into out ---- */

static void error_answer(struct buf *out, tok id, int code, const char *message) {
    puts_(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    id.p ? put_tok(out, id) : puts_(out, "null");
    putf(out, ",\"error\":{\"code\":%d,\"message\":\"%s\"}}", code, message);
}

static void call_tool(struct buf *out, tok id, tok params) {
    tok name = member(params, "name"), args = member(params, "arguments");
    if (!args.p) args = (tok){"{}", "{}" + 2};
    for (size_t i = 0; i < sizeof TOOLS / sizeof *TOOLS; i++) {
        if (!is(name, TOOLS[i].name)) continue;
        struct buf result = {0};
        const char *failure = TOOLS[i].call(args, &result);
        puts_(out, "{\"jsonrpc\":\"2.0\",\"id\":");
        put_tok(out, id);
        if (failure) {
            putf(out, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"isError\":true}}", failure);
        } else {
            /* the text block: the output as a JSON string (it holds no control characters) */
            puts_(out, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"");
            for (size_t c = 0; c < result.n; c++) {
                char ch = result.d[c];
                if (ch == '"' || ch == '\\') put(out, "\\", 1);
                put(out, &ch, 1);
            }
            puts_(out, "\"}],\"structuredContent\":");
            put(out, result.d, result.n);
            puts_(out, "}}");
        }
        free(result.d);
        return;
    }
    error_answer(out, id, -32602, "Unknown tool");
}

/* The answer to a request (method m, params) into out; the negotiated version for an
 * initialize. Notifications never reach here. */
static void answer(struct buf *out, tok id, tok m, tok params) {
    if (is(m, "initialize")) {
        tok asked = member(params, "protocolVersion");
        const char *version = LATEST;
        for (size_t i = 0; i < sizeof VERSIONS / sizeof *VERSIONS; i++)
            if (is(asked, VERSIONS[i])) version = VERSIONS[i];
        puts_(out, "{\"jsonrpc\":\"2.0\",\"id\":");
        put_tok(out, id);
        putf(out, ",\"result\":{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{}},"
                  "\"serverInfo\":{\"name\":\"workload\",\"version\":\"1.0.0\"}}}", version);
    } else if (is(m, "tools/list")) {
        puts_(out, "{\"jsonrpc\":\"2.0\",\"id\":");
        put_tok(out, id);
        puts_(out, ",\"result\":" TOOL_LIST "}");
    } else if (is(m, "tools/call")) {
        call_tool(out, id, params);
    } else if (is(m, "ping")) {
        puts_(out, "{\"jsonrpc\":\"2.0\",\"id\":");
        put_tok(out, id);
        puts_(out, ",\"result\":{}}");
    } else {
        error_answer(out, id, -32601, "Method not found");
    }
}

/* One message's parts: 0 for a request or notification, -1 for invalid JSON-RPC. */
static int parse(const char *p, const char *e, tok *id, tok *m, tok *params) {
    tok whole = {ws(p, e), e};
    const char *end = skip_value(whole.p, e, 0);
    if (!end || ws(end, e) != e || *whole.p != '{') return -1;
    *id = member(whole, "id"), *m = member(whole, "method"), *params = member(whole, "params");
    return m->p && *m->p == '"' ? 0 : -1;
}

/* ---- stdio ---- */

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void write_all(int fd, const char *d, size_t n) {
    for (ssize_t w; n; d += w, n -= (size_t)w)
        if ((w = write(fd, d, n)) <= 0 && errno != EINTR) return;
        else if (w < 0) w = 0;
}

static void emit_line(struct buf *b) {
    put(b, "\n", 1);
    pthread_mutex_lock(&out_lock);
    write_all(1, b->d, b->n);
    pthread_mutex_unlock(&out_lock);
}

static void *stdio_call(void *line) {
    tok id, m, params;
    struct buf out = {0};
    parse(line, (char *)line + strlen(line), &id, &m, &params);
    call_tool(&out, id, params);
    emit_line(&out);
    free(out.d);
    free(line);
    return NULL;
}

static int serve_stdio(void) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    pthread_attr_t detached;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    while ((n = getline(&line, &cap, stdin)) > 0) {
        tok id, m, params;
        struct buf out = {0};
        if (parse(line, line + n, &id, &m, &params)) {
            error_answer(&out, (tok){NULL, NULL}, -32700, "Parse error");
        } else if (!id.p) {
            continue; /* a notification */
        } else if (is(m, "tools/call")) {
            pthread_t t;
            char *copy = strndup(line, (size_t)n);
            if (pthread_create(&t, &detached, stdio_call, copy)) stdio_call(copy);
            continue;
        } else {
            answer(&out, id, m, params);
        }
        emit_line(&out);
        free(out.d);
    }
    fflush(stdout);
    _exit(0); /* calls still running end with the process, as stdin has closed */
}

/* ---- Streamable HTTP ---- */

static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static char (*sessions)[SESSION_LEN];
static size_t n_sessions, cap_sessions;

static long find_session(const char *s, size_t n) { /* under session_lock */
    for (size_t i = 0; i < n_sessions; i++)
        if (n == SESSION_LEN - 1 && !memcmp(sessions[i], s, n)) return (long)i;
    return -1;
}

static void new_session(char id[SESSION_LEN]) {
    static unsigned long long counter;
    unsigned char r[8] = {0};
    FILE *u = fopen("/dev/urandom", "rb");
    if (u) { if (fread(r, 1, sizeof r, u) != sizeof r) memset(r, 0, sizeof r); fclose(u); }
    pthread_mutex_lock(&session_lock);
    snprintf(id, SESSION_LEN, "%016llx%02x%02x%02x%02x%02x%02x%02x%02x", ++counter,
             r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    if (n_sessions == cap_sessions) {
        cap_sessions = cap_sessions ? cap_sessions * 2 : 64;
        sessions = realloc(sessions, cap_sessions * SESSION_LEN);
        if (!sessions) abort();
    }
    memcpy(sessions[n_sessions++], id, SESSION_LEN);
    pthread_mutex_unlock(&session_lock);
}

/* A header's value in the head [p, e) (name without the colon), or {NULL, NULL}. */
static tok header(const char *p, const char *e, const char *name) {
    size_t n = strlen(name);
    for (const char *l = memchr(p, '\n', (size_t)(e - p)); l && l + 1 < e; l = memchr(l + 1, '\n', (size_t)(e - l - 1))) {
        const char *s = l + 1, *le = memchr(s, '\n', (size_t)(e - s));
        if (!le) le = e;
        if ((size_t)(le - s) > n && s[n] == ':' && !strncasecmp(s, name, n)) {
            const char *v = s + n + 1, *ve = le;
            while (v < ve && (*v == ' ' || *v == '\t')) v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ')) ve--;
            return (tok){v, ve};
        }
    }
    return (tok){NULL, NULL};
}

static void reply(int fd, int status, const char *reason, const char *extra, struct buf *body) {
    struct buf o = {0};
    putf(&o, "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\n", status, reason, extra, body ? body->n : 0);
    if (body && body->n) puts_(&o, "Content-Type: application/json\r\n");
    puts_(&o, "\r\n");
    if (body) put(&o, body->d ? body->d : "", body->n);
    write_all(fd, o.d, o.n);
    free(o.d);
}

/* Serve one request (head [h, he), body [b, be)) on fd. */
static void serve_request(int fd, const char *h, const char *he, const char *b, const char *be) {
    char extra[80] = "";
    struct buf body = {0};
    tok sid = header(h, he, "Mcp-Session-Id");
    long live = -1;
    if (strncmp(h, "POST /mcp ", 10) && strncmp(h, "DELETE /mcp ", 12)) {
        if (!strncmp(h, "GET /mcp ", 9)) reply(fd, 405, "Method Not Allowed", "Allow: POST, DELETE\r\n", NULL);
        else reply(fd, 404, "Not Found", "", NULL);
        return;
    }
    if (sid.p) {
        pthread_mutex_lock(&session_lock);
        live = find_session(sid.p, (size_t)(sid.e - sid.p));
        if (live >= 0 && *h == 'D') memmove(sessions[live], sessions[--n_sessions], SESSION_LEN);
        pthread_mutex_unlock(&session_lock);
    }
    if (*h == 'D') {
        reply(fd, !sid.p ? 400 : live < 0 ? 404 : 200, !sid.p ? "Bad Request" : live < 0 ? "Not Found" : "OK", "", NULL);
        return;
    }
    tok id, m, params;
    if (parse(b, be, &id, &m, &params)) {
        error_answer(&body, (tok){NULL, NULL}, -32700, "Parse error");
        reply(fd, 400, "Bad Request", "", &body);
    } else if (is(m, "initialize")) {
        char session[SESSION_LEN];
        new_session(session);
        snprintf(extra, sizeof extra, "Mcp-Session-Id: %s\r\n", session);
        answer(&body, id, m, params);
        reply(fd, 200, "OK", extra, &body);
    } else if (!sid.p) {
        error_answer(&body, id, -32000, "Bad Request: Mcp-Session-Id required");
        reply(fd, 400, "Bad Request", "", &body);
    } else if (live < 0) {
        error_answer(&body, id, -32001, "Session not found");
        reply(fd, 404, "Not Found", "", &body);
    } else if (!id.p) {
        reply(fd, 202, "Accepted", "", NULL);
    } else {
        answer(&body, id, m, params);
        reply(fd, 200, "OK", "", &body);
    }
    free(body.d);
}

static void *serve_connection(void *arg) {
    int fd = (int)(intptr_t)arg, one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct buf in = {0};
    char chunk[65536];
    for (;;) {
        char *end = in.d ? strstr(in.d, "\r\n\r\n") : NULL;
        if (!end) {
            if (in.n > MAX_HEAD) break;
            ssize_t n = read(fd, chunk, sizeof chunk);
            if (n <= 0) break;
            put(&in, chunk, (size_t)n);
            continue;
        }
        tok length = header(in.d, end + 2, "Content-Length");
        size_t head = (size_t)(end + 4 - in.d), need = length.p ? strtoul(length.p, NULL, 10) : 0;
        while (in.n < head + need) {
            ssize_t n = read(fd, chunk, sizeof chunk);
            if (n <= 0) goto done;
            put(&in, chunk, (size_t)n);
        }
        serve_request(fd, in.d, in.d + head, in.d + head, in.d + head + need);
        memmove(in.d, in.d + head + need, in.n - head - need);
        in.n -= head + need;
        in.d[in.n] = 0;
    }
done:
    free(in.d);
    close(fd);
    return NULL;
}

static int serve_http(int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s < 0 || bind(s, (struct sockaddr *)&at, sizeof at) || listen(s, 1024)) {
        perror("workload: cannot listen");
        return 1;
    }
    pthread_attr_t detached;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    for (;;) {
        int fd = accept(s, NULL, NULL);
        pthread_t t;
        if (fd >= 0 && pthread_create(&t, &detached, serve_connection, (void *)(intptr_t)fd)) close(fd);
    }
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    setlocale(LC_CTYPE, "C.UTF-8");
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--port")) return serve_http(atoi(argv[i + 1]));
    return serve_stdio();
}
