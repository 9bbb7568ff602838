/* reverse-text-http: the floor of mcpstart's HTTP figures, a minimal MCP server over the
 * Streamable HTTP transport in C11 + POSIX (libc only), with the answers of servers/c/server.c
 * (the same JSON scanner, copied: each floor stays one file). One tool, reverse_text,
 * reverses text by Unicode code points.
 *
 * HTTP/1.1 on 127.0.0.1:PORT (argv: --port PORT [--answer SHAPE]), one thread polling every
 * connection;
 * persistent connections and pipelining; bodies by Content-Length (no chunked requests).
 * One endpoint, /mcp: POST carries one JSON-RPC message, answered as application/json;
 * DELETE ends a session; GET (no standalone stream) answers 405.
 * --answer (default json) sets the shape of a 200 answer with a body, for mcpstart's load
 * ceiling measured in the answer shape of the server under test: json (the floor: the
 * Content-Length body above); sse (text/event-stream, chunked: one chunk with one
 * "event: message" event, then the last chunk, as go-http, python-http and typescript-http
 * answer); sse-primed (as sse after a first chunk with an empty priming event, "data: ",
 * "id: 0", "retry: 3000", as rust-http answers). Other answers stay as in json.
 * Handshake era (2024-11-05 .. 2025-11-25): initialize opens a session (Mcp-Session-Id);
 * every later POST and the DELETE must name a live one (400 without, 404 for an unknown or
 * ended one); notifications and responses are acknowledged 202.
 * 2026-07-28: a request whose params._meta names its revision is served statelessly (any
 * session id is ignored) once its MCP-Protocol-Version, Mcp-Method and (tools/call)
 * Mcp-Name headers match the body, else 400 with -32020 (HeaderMismatch); error answers
 * map to HTTP statuses as the transport says (-32601: 404; -32700, -32600, -32602,
 * -32020, -32022: 400).
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_DEPTH 1000 /* deeper JSON nesting is refused as a parse error */
#define MODERN "2026-07-28"
#define LEGACY_DEFAULT "2025-11-25"
static const char *const LEGACY[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};
#define SUPPORTED "[\"2024-11-05\",\"2025-03-26\",\"2025-06-18\",\"2025-11-25\",\"" MODERN "\"]"
#define SERVER_INFO "{\"name\":\"mcpstart-c-floor\",\"version\":\"1.0.0\"}"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"

typedef struct { const char *p, *e; } tok;          /* one raw JSON token, [p, e) */
struct buf { char *d; size_t n, cap; };              /* a growable byte buffer */
struct want { const char *key; tok v; };             /* an object member to look up */

static void reserve(struct buf *b, size_t extra) {
    if (b->n + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->n + extra) cap *= 2;
    char *d = realloc(b->d, cap);
    if (!d) _exit(70);
    b->d = d, b->cap = cap;
}

static void put(struct buf *b, const char *s, size_t n) {
    reserve(b, n);
    memcpy(b->d + b->n, s, n);
    b->n += n;
}

static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }
static void put_tok(struct buf *b, tok t) { put(b, t.p, (size_t)(t.e - t.p)); }

/* ---- JSON scanning: each skip_* returns the end of a valid token at p, or NULL. ---- */

static const char *ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static const signed char HEX[256] = { /* a hex digit's value + 1; 0 for other bytes */
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
    ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16};

static int hex4(const char *p) { /* -1 unless p holds four hex digits */
    const unsigned char *u = (const unsigned char *)p;
    int a = HEX[u[0]], b = HEX[u[1]], c = HEX[u[2]], d = HEX[u[3]];
    if (!a || !b || !c || !d) return -1;
    return (a - 1) << 12 | (b - 1) << 8 | (c - 1) << 4 | (d - 1);
}

/* The length of the valid UTF-8 sequence (RFC 3629 §4) at p, or 0: the second byte's range
 * excludes overlong forms, surrogates and code points above U+10FFFF. */
static int utf8_len(const unsigned char *p, const char *e) {
    unsigned c = p[0];
    int len = c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
    unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    if (e - (const char *)p < len) return 0;
    for (int i = 1; i < len; i++, lo = 0x80, hi = 0xBF)
        if (p[i] < lo || p[i] > hi) return 0;
    return len;
}

static int trusted; /* set while re-walking a token that was already checked */

static const char *skip_string(const char *p, const char *e) {
    if (trusted) { /* the closing quote is the first one not escaped by a backslash */
        for (p = memchr(p + 1, '"', (size_t)(e - p - 1));; p = memchr(p + 1, '"', (size_t)(e - p - 1))) {
            size_t backslashes = 0;
            while (p[-1 - (ptrdiff_t)backslashes] == '\\') backslashes++;
            if (backslashes % 2 == 0) return p + 1;
        }
    }
    for (p++; p < e; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
        if (c >= 0x80) { /* JSON text is UTF-8 (RFC 8259 §8.1) */
            int len = utf8_len((const unsigned char *)p, e);
            if (!len) return NULL;
            p += len - 1;
            continue;
        }
        if (c == '"') return p + 1;
        if (c < 0x20 || ++p >= e) return NULL;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
        case 'u':
            if (e - p < 5 || hex4(p + 1) < 0) return NULL;
            p += 4;
            break;
        default: return NULL;
        }
    }
    return NULL;
}

static const char *digits(const char *p, const char *e) { /* one or more */
    if (p >= e || *p < '0' || *p > '9') return NULL;
    while (p < e && *p >= '0' && *p <= '9') p++;
    return p;
}

static const char *skip_number(const char *p, const char *e) {
    if (p < e && *p == '-') p++;
    if (p < e && *p == '0') p++;
    else if (!(p = digits(p, e))) return NULL;
    if (p < e && *p == '.' && !(p = digits(p + 1, e))) return NULL;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        p = digits(p, e);
    }
    return p;
}

static const char *skip_value(const char *p, const char *e, int depth);

/* Decode the escape at *pp (in a valid string ending before e) to a code point, joining a
 * surrogate pair; a lone surrogate is returned as is. */
static uint32_t unescape(const char **pp, const char *e) {
    const char *p = *pp;
    *pp += 2;
    switch (p[1]) {
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'u': break;
    default: return (unsigned char)p[1]; /* " \\ / */
    }
    uint32_t c = (uint32_t)hex4(p + 2);
    *pp = p += 6;
    if (c >= 0xD800 && c < 0xDC00 && e - p >= 6 && p[0] == '\\' && p[1] == 'u') {
        int low = hex4(p + 2);
        if (low >= 0xDC00 && low < 0xE000) {
            c = 0x10000 + ((c - 0xD800) << 10) + (uint32_t)(low - 0xDC00);
            *pp += 6;
        }
    }
    return c;
}


/* Does the string token k (with quotes) decode to the bytes [s, s + n)? (An escape that
 * decodes above U+007F never matches: the other side is a header value or ASCII text.) */
static int str_eq(tok k, const char *s, size_t n) {
    if (!k.p || *k.p != '"') return 0;
    const char *p = k.p + 1, *e = k.e - 1, *end = s + n;
    while (p < e) {
        uint32_t c = *p == '\\' ? unescape(&p, e) : (unsigned char)*p++;
        if (s == end || c != (unsigned char)*s++) return 0;
    }
    return s == end;
}

/* Does the string token k decode to the ASCII text lit? */
static int str_is(tok k, const char *lit) { return str_eq(k, lit, strlen(lit)); }


/* Skip the object at p ('{'), recording in w[] the value of each wanted key (last wins). */
static const char *walk_object(const char *p, const char *e, struct want *w, int nw, int depth) {
    if (depth >= MAX_DEPTH) return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == '}') return p + 1;
    for (;;) {
        tok key = {p, NULL}, val;
        if (p >= e || *p != '"' || !(key.e = p = skip_string(p, e))) return NULL;
        p = ws(p, e);
        if (p >= e || *p != ':') return NULL;
        val.p = p = ws(p + 1, e);
        if (!(val.e = p = skip_value(p, e, depth + 1))) return NULL;
        for (int i = 0; i < nw; i++)
            if (str_is(key, w[i].key)) w[i].v = val;
        p = ws(p, e);
        if (p >= e) return NULL;
        if (*p == '}') return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, e);
    }
}

static const char *skip_value(const char *p, const char *e, int depth) {
    if (p >= e) return NULL;
    switch (*p) {
    case '"': return skip_string(p, e);
    case '{': return walk_object(p, e, NULL, 0, depth);
    case '[':
        if (depth >= MAX_DEPTH) return NULL;
        p = ws(p + 1, e);
        if (p < e && *p == ']') return p + 1;
        for (;;) {
            if (!(p = skip_value(p, e, depth + 1))) return NULL;
            p = ws(p, e);
            if (p >= e) return NULL;
            if (*p == ']') return p + 1;
            if (*p != ',') return NULL;
            p = ws(p + 1, e);
        }
    case 't': return e - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
    case 'f': return e - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
    case 'n': return e - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
    default: return skip_number(p, e);
    }
}

/* Look up w[] in the object token o (part of a checked line); 0 if o is absent or not an object. */
static int lookup(tok o, struct want *w, int nw) {
    for (int i = 0; i < nw; i++) w[i].v = (tok){NULL, NULL};
    if (!o.p || *o.p != '{') return 0;
    trusted = 1;
    walk_object(o.p, o.e, w, nw, 0);
    trusted = 0;
    return 1;
}


/* ---- answers ---- */

static struct buf out, text; /* the answer's JSON body; the decoded tool argument */

static void head(tok id) {
    out.n = 0;
    puts_(&out, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (id.p) put_tok(&out, id);
    else puts_(&out, "null");
}

/* An error answer into `out`: message msg followed by the contents of the string token
 * msg_tail (if any); with `requested` (a string token), the -32022 data. Returns code. */
static int fail(tok id, int code, const char *msg, tok msg_tail, tok requested) {
    char num[16];
    int i = (int)sizeof num;
    num[--i] = '\0';
    for (unsigned v = (unsigned)-code; v; v /= 10) num[--i] = (char)('0' + v % 10);
    head(id);
    puts_(&out, ",\"error\":{\"code\":-");
    puts_(&out, num + i);
    puts_(&out, ",\"message\":\"");
    puts_(&out, msg);
    if (msg_tail.p) put(&out, msg_tail.p + 1, (size_t)(msg_tail.e - msg_tail.p - 2));
    puts_(&out, "\"");
    if (requested.p) {
        puts_(&out, ",\"data\":{\"supported\":" SUPPORTED ",\"requested\":");
        put_tok(&out, requested);
        puts_(&out, "}");
    }
    puts_(&out, "}}");
    return code;
}

static const tok NONE = {NULL, NULL};

/* Append the JSON string of `text` reversed by code points (text holds UTF-8, with lone
 * surrogates as 3-byte sequences, which are written back as \uXXXX escapes). */
static void put_reversed(void) {
    static const char hex[] = "0123456789abcdef";
    reserve(&out, text.n * 6 + 2);
    char *o = out.d + out.n;
    *o++ = '"';
    for (size_t end = text.n; end > 0;) {
        unsigned char last = (unsigned char)text.d[end - 1];
        if (last >= 0x20 && last < 0x80 && last != '"' && last != '\\') { /* the common case */
            *o++ = (char)last;
            end--;
            continue;
        }
        size_t start = end - 1;
        while (start > 0 && ((unsigned char)text.d[start] & 0xC0) == 0x80) start--;
        const unsigned char *s = (const unsigned char *)text.d + start;
        size_t len = end - start;
        if (len == 1 && (s[0] < 0x20 || s[0] == '"' || s[0] == '\\')) {
            char esc = s[0] == '"' ? '"' : s[0] == '\\' ? '\\' : s[0] == '\b' ? 'b'
                     : s[0] == '\f' ? 'f' : s[0] == '\n' ? 'n' : s[0] == '\r' ? 'r' : s[0] == '\t' ? 't' : 0;
            *o++ = '\\';
            if (esc) {
                *o++ = esc;
            } else {
                memcpy(o, "u00", 3);
                o[3] = hex[s[0] >> 4], o[4] = hex[s[0] & 15];
                o += 5;
            }
        } else if (len == 3 && s[0] == 0xED && s[1] >= 0xA0) { /* a lone surrogate */
            uint32_t c = 0xD000u | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
            *o++ = '\\', *o++ = 'u';
            for (int k = 12; k >= 0; k -= 4) *o++ = hex[c >> k & 15];
        } else {
            memcpy(o, s, len);
            o += len;
        }
        end = start;
    }
    *o++ = '"';
    out.n = (size_t)(o - out.d);
}

/* Decode the string token t into `text` as UTF-8 (lone surrogates kept as 3 bytes). */
static void decode(tok t) {
    text.n = 0;
    reserve(&text, (size_t)(t.e - t.p)); /* no escape decodes longer than itself */
    unsigned char *o = (unsigned char *)text.d;
    for (const char *p = t.p + 1, *e = t.e - 1; p < e;) {
        if (*p != '\\') { /* raw bytes are valid UTF-8 already */
            *o++ = (unsigned char)*p++;
            continue;
        }
        uint32_t c = unescape(&p, e);
        if (c < 0x80) {
            *o++ = (unsigned char)c;
        } else if (c < 0x800) {
            *o++ = (unsigned char)(0xC0 | c >> 6), *o++ = (unsigned char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            *o++ = (unsigned char)(0xE0 | c >> 12);
            *o++ = (unsigned char)(0x80 | (c >> 6 & 0x3F)), *o++ = (unsigned char)(0x80 | (c & 0x3F));
        } else {
            *o++ = (unsigned char)(0xF0 | c >> 18), *o++ = (unsigned char)(0x80 | (c >> 12 & 0x3F));
            *o++ = (unsigned char)(0x80 | (c >> 6 & 0x3F)), *o++ = (unsigned char)(0x80 | (c & 0x3F));
        }
    }
    text.n = (size_t)(o - (unsigned char *)text.d);
}

/* Answer one request (method m, params token or absent) into `out`; returns 0, or the
 * code of the error answer. */
static int answer(tok id, tok m, tok params) {
    struct want pw[] = {{"_meta", NONE}, {"protocolVersion", NONE}, {"name", NONE}, {"arguments", NONE}};
    struct want mw[] = {{META_VERSION, NONE}}, aw[] = {{"text", NONE}};
    if (params.p && !lookup(params, pw, 4)) {
        return fail(id, -32602, "Invalid params: params must be an object", NONE, NONE);
    }
    int modern = 0; /* the 2026-07-28 per-request envelope names its revision in _meta */
    if (lookup(pw[0].v, mw, 1) && mw[0].v.p) {
        tok v = mw[0].v;
        int known = modern = str_is(v, MODERN);
        for (size_t i = 0; i < sizeof LEGACY / sizeof *LEGACY; i++) known |= str_is(v, LEGACY[i]);
        if (*v.p != '"') {
            return fail(id, -32602, "Invalid params: " META_VERSION " must be a string", NONE, NONE);
        }
        if (!known) {
            return fail(id, -32022, "Unsupported protocol version", NONE, v);
        }
    }
    if (str_is(m, "tools/call")) { /* check the call before the result is begun */
        tok name = pw[2].v;
        if (!name.p || *name.p != '"') {
            return fail(id, -32602, "Invalid params: name (a string) is required", NONE, NONE);
        }
        if (!str_is(name, "reverse_text")) {
            return fail(id, -32602, "Unknown tool: ", name, NONE);
        }
        if (!lookup(pw[3].v, aw, 1) || !aw[0].v.p || *aw[0].v.p != '"') {
            return fail(id, -32602, "Invalid arguments: text (a string) is required", NONE, NONE);
        }
    } else if (!str_is(m, "initialize") && !str_is(m, "server/discover") &&
               !str_is(m, "tools/list") && !str_is(m, "ping")) {
        return fail(id, -32601, "Method not found", NONE, NONE);
    }
    head(id);
    puts_(&out, ",\"result\":{");
    if (str_is(m, "initialize")) {
        const char *rev = LEGACY_DEFAULT;
        for (size_t i = 0; i < sizeof LEGACY / sizeof *LEGACY; i++)
            if (str_is(pw[1].v, LEGACY[i])) rev = LEGACY[i];
        puts_(&out, "\"protocolVersion\":\"");
        puts_(&out, rev);
        puts_(&out, "\",\"capabilities\":{\"tools\":{}},\"serverInfo\":" SERVER_INFO ",");
    } else if (str_is(m, "server/discover")) {
        puts_(&out, "\"supportedVersions\":" SUPPORTED ",\"capabilities\":{\"tools\":{}},"
              "\"ttlMs\":3600000,\"cacheScope\":\"public\","
              "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":" SERVER_INFO "},");
        modern = 1; /* a DiscoverResult always carries resultType */
    } else if (str_is(m, "tools/list")) {
        puts_(&out, "\"tools\":[{\"name\":\"reverse_text\",\"description\":"
              "\"Reverse text by Unicode code points.\",\"inputSchema\":{\"type\":\"object\","
              "\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}}],");
        if (modern) puts_(&out, "\"ttlMs\":3600000,\"cacheScope\":\"public\",");
    } else if (str_is(m, "tools/call")) {
        decode(aw[0].v);
        puts_(&out, "\"content\":[{\"type\":\"text\",\"text\":");
        put_reversed();
        puts_(&out, "}],\"isError\":false,");
    }
    if (modern) puts_(&out, "\"resultType\":\"complete\",");
    if (out.d[out.n - 1] == ',') out.n--; /* every member above ends with a comma */
    puts_(&out, "}}");
    return 0;
}


/* ---- sessions (handshake era) ---- */

#define ID_LEN 32 /* 128 random bits as hex */
static char (*sessions)[ID_LEN];
static size_t n_sessions, cap_sessions;
static int urandom = -1;

static long find_session(tok id) {
    if ((size_t)(id.e - id.p) != ID_LEN) return -1;
    for (size_t i = 0; i < n_sessions; i++)
        if (!memcmp(sessions[i], id.p, ID_LEN)) return (long)i;
    return -1;
}

static const char *new_session(void) {
    static const char hex[] = "0123456789abcdef";
    unsigned char bits[ID_LEN / 2];
    for (size_t got = 0; got < sizeof bits;) {
        ssize_t n = read(urandom, bits + got, sizeof bits - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) _exit(71);
        got += (size_t)n;
    }
    if (n_sessions == cap_sessions) {
        cap_sessions = cap_sessions ? cap_sessions * 2 : 64;
        sessions = realloc(sessions, cap_sessions * sizeof *sessions);
        if (!sessions) _exit(70);
    }
    char *s = sessions[n_sessions++];
    for (size_t i = 0; i < sizeof bits; i++) s[2 * i] = hex[bits[i] >> 4], s[2 * i + 1] = hex[bits[i] & 15];
    return s;
}

static void end_session(long i) { memmove(sessions[i], sessions[--n_sessions], ID_LEN); }

/* ---- HTTP/1.1 ---- */

#define MAX_HEAD 65536
#define MAX_BODY ((size_t)1 << 30)

struct request { /* one parsed request head; header values are raw bytes, trimmed */
    tok method, target, content_type, session, version, mcp_method, mcp_name;
    size_t length;
    int close, chunked;
};

static int span_is(tok s, const char *lit) {
    size_t n = strlen(lit);
    return (size_t)(s.e - s.p) == n && !memcmp(s.p, lit, n);
}

static int span_has(tok s, const char *lit) { /* s holds lit, in any case */
    size_t n = strlen(lit);
    for (const char *p = s.p; p + n <= s.e; p++)
        if (!strncasecmp(p, lit, n)) return 1;
    return 0;
}

/* Parse the head [p, e) (request line and header lines, each ended by CRLF); 0 if malformed. */
static int parse_head(const char *p, const char *e, struct request *r) {
    memset(r, 0, sizeof *r);
    const char *eol = p;
    while (eol + 1 < e && !(eol[0] == '\r' && eol[1] == '\n')) eol++;
    const char *sp1 = memchr(p, ' ', (size_t)(eol - p)), *sp2;
    if (!sp1 || !(sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)))) return 0;
    r->method = (tok){p, sp1};
    r->target = (tok){sp1 + 1, sp2};
    tok proto = {sp2 + 1, eol};
    if (span_is(proto, "HTTP/1.0")) r->close = 1;
    else if (!span_is(proto, "HTTP/1.1")) return 0;
    int length_seen = 0;
    for (p = eol + 2; p < e; p = eol + 2) {
        for (eol = p; eol + 1 < e && !(eol[0] == '\r' && eol[1] == '\n');) eol++;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (!colon) return 0;
        tok v = {ws(colon + 1, eol), eol};
        while (v.e > v.p && (v.e[-1] == ' ' || v.e[-1] == '\t')) v.e--;
        size_t n = (size_t)(colon - p);
#define NAMED(lit) (n == sizeof lit - 1 && !strncasecmp(p, lit, n))
        if (NAMED("content-length")) {
            char *stop;
            errno = 0;
            unsigned long long len = strtoull(v.p, &stop, 10); /* stops at the CR at the latest */
            if (v.p == v.e || *v.p < '0' || *v.p > '9' || stop != v.e || errno ||
                (length_seen && len != r->length))
                return 0;
            r->length = len > MAX_BODY ? MAX_BODY + 1 : (size_t)len;
            length_seen = 1;
        } else if (NAMED("transfer-encoding")) r->chunked = 1;
        else if (NAMED("connection")) r->close |= span_has(v, "close");
        else if (NAMED("content-type")) r->content_type = v;
        else if (NAMED("mcp-session-id")) r->session = v;
        else if (NAMED("mcp-protocol-version")) r->version = v;
        else if (NAMED("mcp-method")) r->mcp_method = v;
        else if (NAMED("mcp-name")) r->mcp_name = v;
#undef NAMED
    }
    return 1;
}

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    default: return "Request Header Fields Too Large"; /* 431 */
    }
}

enum shape { JSON, SSE, SSE_PRIMED };
static int answer_shape = JSON; /* --answer (-1: none of the shapes) */

/* Append a chunk of `n` bytes of `p` (after `prefix`, before `suffix`) to o. */
static void chunk(struct buf *o, const char *prefix, const char *p, size_t n, const char *suffix) {
    char size[32];
    size_t len = strlen(prefix) + n + strlen(suffix);
    put(o, size, (size_t)snprintf(size, sizeof size, "%zX\r\n", len));
    put(o, prefix, strlen(prefix));
    put(o, p, n);
    put(o, suffix, strlen(suffix));
    put(o, "\r\n", 2);
}

/* Append a response to o: status, then `extra` header lines (each ending CRLF; or ""), then
 * `out` as an application/json body unless it is empty (a 200 with a body: as an event
 * stream in the --answer shape). */
static void reply(struct buf *o, int status, const char *extra, int close) {
    char head[256];
    if (answer_shape != JSON && status == 200 && out.n) {
        int n = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\n%sContent-Type: text/event-stream"
                         "\r\nTransfer-Encoding: chunked\r\n%s\r\n", extra,
                         close ? "Connection: close\r\n" : "");
        put(o, head, (size_t)n);
        if (answer_shape == SSE_PRIMED) chunk(o, "data: \nid: 0\nretry: 3000\n\n", "", 0, "");
        chunk(o, "event: message\ndata: ", out.d, out.n, "\n\n");
        put(o, "0\r\n\r\n", 5);
        return;
    }
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\n%s%sContent-Length: %zu\r\n%s\r\n",
                     status, reason(status), extra, out.n ? "Content-Type: application/json\r\n" : "",
                     out.n, close ? "Connection: close\r\n" : "");
    put(o, head, (size_t)n);
    put(o, out.d, out.n);
}

/* The HTTP status of an answer on the 2026-07-28 transport (0: a result). */
static int modern_status(int code) {
    return code == 0 ? 200 : code == -32601 ? 404 : code == -32700 || code == -32600 ||
           code == -32602 || code == -32020 || code == -32022 ? 400 : 200;
}

/* 404 or 400 with its error answer, for a handshake-era message whose Mcp-Session-Id header
 * names no live session or is missing. */
static int no_session(tok id, const struct request *r) {
    if (r->session.p) return fail(id, -32001, "Session not found", NONE, NONE), 404;
    return fail(id, -32000, "Bad Request: Mcp-Session-Id header is required", NONE, NONE), 400;
}

/* Does the string token k decode to the header value v? */
static int mirrors(tok k, tok v) { return str_eq(k, v.p, (size_t)(v.e - v.p)); }

/* Answer the POST of one JSON-RPC message [p, e) into `out` (empty: no body); returns the
 * HTTP status; a new session's header line goes into `extra`. */
static int post(const struct request *r, const char *p, const char *e, char extra[64]) {
    struct want top[] = {{"id", NONE}, {"method", NONE}, {"params", NONE}, {"result", NONE}, {"error", NONE}};
    p = ws(p, e);
    const char *end = p < e && *p == '{' ? walk_object(p, e, top, 5, 0) : skip_value(p, e, 0);
    if (!end || ws(end, e) != e) return fail(NONE, -32700, "Parse error", NONE, NONE), 400;
    tok id = top[0].v, m = top[1].v, params = top[2].v;
    int id_ok = !id.p || *id.p == '"' || *id.p == '-' || (*id.p >= '0' && *id.p <= '9');
    int is_response = !m.p && (top[3].v.p || top[4].v.p);
    if (*p != '{' || !id_ok || (!is_response && (!m.p || *m.p != '"')))
        return fail(id_ok ? id : NONE, -32600, "Invalid Request", NONE, NONE), 400;
    struct want pw[] = {{"_meta", NONE}, {"name", NONE}}, mw[] = {{META_VERSION, NONE}};
    tok enveloped = NONE; /* the revision a 2026-07-28 request names in params._meta */
    if (lookup(params, pw, 2) && lookup(pw[0].v, mw, 1)) enveloped = mw[0].v;
    long session = r->session.p ? find_session(r->session) : -1;
    if (!id.p || is_response) /* a notification or a response: accepted, not answered */
        return span_is(r->version, MODERN) || session >= 0 ? 202 : no_session(NONE, r);
    if (enveloped.p) { /* stateless: the headers must mirror the body */
        const char *mismatch = !mirrors(enveloped, r->version) ? "\"MCP-Protocol-Version\""
            : !mirrors(m, r->mcp_method) ? "\"Mcp-Method\""
            : str_is(m, "tools/call") && pw[1].v.p && !mirrors(pw[1].v, r->mcp_name) ? "\"Mcp-Name\""
            : NULL; /* a JSON string token, as fail() takes a message's tail */
        if (mismatch)
            return fail(id, -32020, "Header mismatch: ", (tok){mismatch, mismatch + strlen(mismatch)},
                        NONE), 400;
        return modern_status(answer(id, m, params));
    }
    int known = !r->version.p;
    for (size_t i = 0; i < sizeof LEGACY / sizeof *LEGACY; i++) known |= span_is(r->version, LEGACY[i]);
    if (!known)
        return fail(id, -32600, "Bad Request: MCP-Protocol-Version names no handshake-era "
                    "revision and the request has no params._meta envelope", NONE, NONE), 400;
    if (str_is(m, "initialize")) {
        if (!answer(id, m, params))
            snprintf(extra, 64, "Mcp-Session-Id: %.*s\r\n", ID_LEN, new_session());
        return 200;
    }
    if (session < 0) return no_session(id, r);
    answer(id, m, params);
    return 200;
}

/* Answer one complete request (head parsed into r, body [p, p + r->length)) into `out`
 * (empty: no body); returns the HTTP status; extra header lines go into `extra`. */
static int serve(const struct request *r, const char *p, char extra[64]) {
    tok path = r->target;
    const char *query = memchr(path.p, '?', (size_t)(path.e - path.p));
    if (query) path.e = query;
    if (!span_is(path, "/mcp")) return 404;
    if (span_is(r->method, "POST")) {
        tok type = r->content_type;
        if (type.e - type.p < 16 || strncasecmp(type.p, "application/json", 16) ||
            (type.e - type.p > 16 && type.p[16] != ';' && type.p[16] != ' '))
            return 415;
        return post(r, p, p + r->length, extra);
    }
    if (span_is(r->method, "DELETE")) {
        long session = r->session.p ? find_session(r->session) : -1;
        if (session < 0) return r->session.p ? 404 : 400;
        end_session(session);
        return 204;
    }
    strcpy(extra, "Allow: POST, DELETE\r\n");
    return 405;
}

/* ---- connections ---- */

struct conn { int fd, closing; struct buf in, out; size_t sent; };
static struct conn *conns;
static size_t n_conns, cap_conns;

/* Answer every complete request in c->in (pipelined ones in order); a malformed head, a
 * chunked body or an oversized one is answered and the connection closed. */
static void drain(struct conn *c) {
    size_t used = 0;
    while (!c->closing) {
        const char *p = c->in.d + used, *e = c->in.d + c->in.n, *end = NULL;
        for (const char *q = p; q + 3 < e; q++)
            if (q[0] == '\r' && q[1] == '\n' && q[2] == '\r' && q[3] == '\n') { end = q + 2; break; }
        struct request r;
        int status = !end ? (e - p > MAX_HEAD ? 431 : 0) : !parse_head(p, end, &r) ? 400
                   : r.chunked ? 411 : r.length > MAX_BODY ? 413 : 0;
        out.n = 0;
        if (status) { /* a head that cannot be answered in kind: answer it, then close */
            reply(&c->out, status, "", c->closing = 1);
            break;
        }
        if (!end) break; /* the head is not complete yet */
        const char *body = end + 2;
        if ((size_t)(e - body) < r.length) {
            reserve(&c->in, r.length - (size_t)(e - body)); /* room for the rest of the body */
            break;
        }
        char extra[64] = "";
        status = serve(&r, body, extra);
        c->closing = r.close;
        reply(&c->out, status, extra, c->closing);
        used = (size_t)(body + r.length - c->in.d);
    }
    memmove(c->in.d, c->in.d + used, c->in.n - used);
    c->in.n -= used;
}

/* Write what c->out holds; 0 when the peer is gone. */
static int flush(struct conn *c) {
    while (c->sent < c->out.n) {
        ssize_t n = send(c->fd, c->out.d + c->sent, c->out.n - c->sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
        c->sent += (size_t)n;
    }
    c->out.n = c->sent = 0;
    return 1;
}

/* Read what the peer sent and answer it; 0 when the connection is to be closed now. */
static int on_readable(struct conn *c) {
    for (;;) {
        reserve(&c->in, 65536);
        ssize_t n = read(c->fd, c->in.d + c->in.n, c->in.cap - c->in.n);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) { /* EOF or a reset: send what was answered, then close */
            flush(c);
            return 0;
        }
        c->in.n += (size_t)n;
        drain(c);
        if (c->closing) break;
    }
    return flush(c) && !(c->closing && c->out.n == 0);
}

static void drop(size_t i) {
    close(conns[i].fd);
    free(conns[i].in.d);
    free(conns[i].out.d);
    conns[i] = conns[--n_conns];
}

int main(int argc, char **argv) {
    long port = -1;
    for (int i = 1; i + 1 < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--port")) port = strtol(argv[i + 1], &end, 10);
        if (!strcmp(argv[i], "--port") && (*end || end == argv[i + 1])) port = -1;
        if (!strcmp(argv[i], "--answer"))
            answer_shape = !strcmp(argv[i + 1], "json") ? JSON : !strcmp(argv[i + 1], "sse") ? SSE
                         : !strcmp(argv[i + 1], "sse-primed") ? SSE_PRIMED : -1;
    }
    if (port < 0 || port > 65535 || answer_shape < 0) {
        fputs("usage: reverse-text-http --port PORT [--answer json|sse|sse-primed]\n", stderr);
        return 2;
    }
    urandom = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (urandom < 0 || lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(lfd, (struct sockaddr *)&addr, sizeof addr) || listen(lfd, 1024) ||
        fcntl(lfd, F_SETFL, O_NONBLOCK) || fcntl(lfd, F_SETFD, FD_CLOEXEC))
        return 1;
    struct pollfd *fds = NULL;
    for (size_t cap_fds = 0;;) {
        if (cap_fds < n_conns + 1) {
            cap_fds = 2 * (n_conns + 1);
            if (!(fds = realloc(fds, cap_fds * sizeof *fds))) _exit(70);
        }
        fds[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        size_t polled = n_conns;
        for (size_t i = 0; i < polled; i++)
            fds[i + 1] = (struct pollfd){.fd = conns[i].fd,
                                         .events = (short)(conns[i].out.n ? POLLOUT : POLLIN)};
        if (poll(fds, polled + 1, -1) < 0) {
            if (errno == EINTR) continue;
            return 1;
        }
        for (size_t i = polled; i-- > 0;) { /* downwards: drop() moves the last one here */
            short ev = fds[i + 1].revents;
            int keep = !(ev & POLLOUT) || (flush(&conns[i]) && !(conns[i].closing && !conns[i].out.n));
            if (keep && ev & (POLLIN | POLLHUP | POLLERR)) keep = on_readable(&conns[i]);
            if (!keep) drop(i);
        }
        if (fds[0].revents & POLLIN) {
            for (int fd; (fd = accept(lfd, NULL, NULL)) >= 0;) {
                if (fcntl(fd, F_SETFL, O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC)) {
                    close(fd);
                    continue;
                }
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                if (n_conns == cap_conns) {
                    cap_conns = cap_conns ? cap_conns * 2 : 16;
                    if (!(conns = realloc(conns, cap_conns * sizeof *conns))) _exit(70);
                }
                conns[n_conns++] = (struct conn){.fd = fd};
            }
        }
    }
}
