/* reverse-text: the floor of mcpstart's figures, a minimal MCP server over the stdio
 * transport in C11 + POSIX (libc only). One tool, reverse_text, reverses text by Unicode
 * code points.
 *
 * Framing: one JSON-RPC message per line (newline-delimited, CRLF and blank lines
 * tolerated); each answer is one line written with one write loop. Exits 0 on stdin EOF.
 * Protocol revisions: the initialize handshake (2024-11-05 .. 2025-11-25) and the
 * 2026-07-28 per-request envelope (params._meta["io.modelcontextprotocol/protocolVersion"])
 * with server/discover and error -32022 for an unsupported revision.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* Does the string token k (with quotes) decode to the ASCII text lit? */
static int str_is(tok k, const char *lit) {
    if (!k.p || *k.p != '"') return 0;
    const char *p = k.p + 1, *e = k.e - 1;
    while (p < e) { /* a raw byte >= 0x80 never equals an ASCII character */
        uint32_t c = *p == '\\' ? unescape(&p, e) : (unsigned char)*p++;
        if (!*lit || c != (unsigned char)*lit++) return 0;
    }
    return !*lit;
}

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

static struct buf out, text; /* the answer line; the decoded tool argument */

static void send_out(void) {
    for (size_t done = 0; done < out.n;) {
        ssize_t n = write(1, out.d + done, out.n - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) _exit(1);
        done += (size_t)n;
    }
}

static void head(tok id) {
    out.n = 0;
    puts_(&out, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (id.p) put_tok(&out, id);
    else puts_(&out, "null");
}

/* An error answer into `out`: message msg followed by the contents of the string token
 * msg_tail (if any); with `requested` (a string token), the -32022 data. */
static void fail(tok id, int code, const char *msg, tok msg_tail, tok requested) {
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
    puts_(&out, "}}\n");
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

/* Answer one request (method m, params token or absent) into `out`. */
static void answer(tok id, tok m, tok params) {
    struct want pw[] = {{"_meta", NONE}, {"protocolVersion", NONE}, {"name", NONE}, {"arguments", NONE}};
    struct want mw[] = {{META_VERSION, NONE}}, aw[] = {{"text", NONE}};
    if (params.p && !lookup(params, pw, 4)) {
        fail(id, -32602, "Invalid params: params must be an object", NONE, NONE);
        return;
    }
    int modern = 0; /* the 2026-07-28 per-request envelope names its revision in _meta */
    if (lookup(pw[0].v, mw, 1) && mw[0].v.p) {
        tok v = mw[0].v;
        int known = modern = str_is(v, MODERN);
        for (size_t i = 0; i < sizeof LEGACY / sizeof *LEGACY; i++) known |= str_is(v, LEGACY[i]);
        if (*v.p != '"') {
            fail(id, -32602, "Invalid params: " META_VERSION " must be a string", NONE, NONE);
            return;
        }
        if (!known) {
            fail(id, -32022, "Unsupported protocol version", NONE, v);
            return;
        }
    }
    if (str_is(m, "tools/call")) { /* check the call before the result is begun */
        tok name = pw[2].v;
        if (!name.p || *name.p != '"') {
            fail(id, -32602, "Invalid params: name (a string) is required", NONE, NONE);
            return;
        }
        if (!str_is(name, "reverse_text")) {
            fail(id, -32602, "Unknown tool: ", name, NONE);
            return;
        }
        if (!lookup(pw[3].v, aw, 1) || !aw[0].v.p || *aw[0].v.p != '"') {
            fail(id, -32602, "Invalid arguments: text (a string) is required", NONE, NONE);
            return;
        }
    } else if (!str_is(m, "initialize") && !str_is(m, "server/discover") &&
               !str_is(m, "tools/list") && !str_is(m, "ping")) {
        fail(id, -32601, "Method not found", NONE, NONE);
        return;
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
    puts_(&out, "}}\n");
}

/* Handle one line [p, e): answer requests; ignore notifications, blank lines and responses. */
static void handle(const char *p, const char *e) {
    struct want top[] = {{"id", NONE}, {"method", NONE}, {"params", NONE}, {"result", NONE}, {"error", NONE}};
    p = ws(p, e);
    if (p == e) return;
    const char *end = *p == '{' ? walk_object(p, e, top, 5, 0) : skip_value(p, e, 0);
    out.n = 0;
    if (!end || ws(end, e) != e) {
        fail(NONE, -32700, "Parse error", NONE, NONE); /* JSON-RPC 2.0 §5.1: id null */
    } else {
        tok id = top[0].v, m = top[1].v;
        int id_ok = !id.p || *id.p == '"' || *id.p == '-' || (*id.p >= '0' && *id.p <= '9');
        int is_response = !m.p && (top[3].v.p || top[4].v.p);
        if (*p != '{' || !id_ok || (!is_response && (!m.p || *m.p != '"')))
            fail(id_ok ? id : NONE, -32600, "Invalid Request", NONE, NONE);
        else if (id.p && !is_response)
            answer(id, m, top[2].v);
    }
    if (out.n) send_out();
}

int main(void) {
    struct buf in = {0};
    size_t scanned = 0; /* in.d[0, scanned) holds no newline */
    for (;;) {
        reserve(&in, in.n + 1); /* free space at least the size of the unfinished line */
        ssize_t n = read(0, in.d + in.n, in.cap - in.n);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return 1;
        if (n == 0) { /* EOF: answer a last line that lacks its newline, then stop */
            handle(in.d, in.d + in.n);
            return 0;
        }
        in.n += (size_t)n;
        size_t start = 0;
        for (char *nl; (nl = memchr(in.d + scanned, '\n', in.n - scanned));) {
            handle(in.d + start, nl);
            start = scanned = (size_t)(nl + 1 - in.d);
        }
        memmove(in.d, in.d + start, in.n - start); /* keep only the unfinished line */
        in.n -= start;
        scanned = in.n;
    }
}
