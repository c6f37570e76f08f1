/* Many clients at once against a server on 127.0.0.1, for `make bench` (bench/run.sh):
 *
 *   clients hold -n N [--path P] [--auth] [--max-seconds S] [--pid PID] PORT
 *       Opens N keep-alive connections, sends one request on each and reads the answers,
 *       prints a "ready" line, then holds them idle (counting those the server closes).
 *       On SIGTERM it sends one more request on every connection still open, reads the
 *       answers and prints a "done" line. Gives up by itself after --max-seconds (600).
 *   clients slowloris -n N [--seconds S] [--interval S] [--pid PID] PORT
 *       Opens N connections that send a request line, then one header line every
 *       --interval seconds (5) and never finish the request, for --seconds (40). Meanwhile
 *       a fresh client asks GET /health every 0.5 s (each given 5 s to be answered).
 *   clients noread -n N --path P [--auth] [--seconds S] [--pid PID] PORT
 *       N clients, each with a 4 KB receive buffer, send one GET of P and never read the
 *       answer; after --seconds (10) they close. /health is probed meanwhile as above.
 *
 * --auth sends "Authorization: Bearer $AT_TOKEN" (a token is not put on command lines).
 * --pid samples the server's VmRSS every 100 ms and reports the peak.
 * Output is one line per phase of key=value pairs (times in ms, memory in MB).
 * Answers must carry Content-Length or end with the connection (libmicrohttpd's do).
 * Only 127.0.0.1 is ever contacted. The tool stops with the process that started it. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "actionstools/banned.h"

enum role { R_HOLD, R_SLOW, R_NOREAD, R_PROBE };
enum state { S_CONNECTING, S_SENDING, S_READING, S_IDLE, S_SLOW, S_STALLED, S_CLOSED };

#define WINDOW 256          /* connections being opened or awaiting an answer at once */
#define STEP_TIMEOUT 10.0   /* seconds to connect, or to be answered, before a timeout */
#define PROBE_TIMEOUT 5.0   /* seconds a /health probe may take */
#define PROBE_EVERY 0.5     /* seconds between two probes */
#define MAX_PROBES 4096
#define MAX_OPEN_PROBES 64 /* PROBE_TIMEOUT / PROBE_EVERY are enough */

typedef struct conn {
    int fd;
    enum role role;
    enum state state;
    double t_open, t_step, next_due;
    size_t sent;
    char head[2048];
    size_t head_len;
    int head_done, status;
    long long body_left; /* -1: until the connection closes */
} conn;

/* Outcome of one round of requests. */
typedef struct tally {
    int answered, non2xx, refused, closed, timeout;
    double worst_ms;
} tally;

static struct {
    enum role mode;
    int n, port, auth, pid;
    const char *path;
    double seconds, interval, max_seconds;
    char req[8192];
    size_t req_len;
    int epfd;
    conn *conns, *probes;
    double probe_ms[MAX_PROBES];
    int probe_answered, probe_failed, probe_timeout;
    double probe_worst;
    int opened, pending, next_open, final_round, phase1, no_new_probes;
    tally first, second;
    int closed_idle, cut_off, noread_closed, status_408;
    double cut_first, cut_last;
    double rss_peak;
} g;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) { stop_requested = 1; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The server's resident memory in MB (VmRSS), or -1 when it cannot be read. */
static double server_rss(void)
{
    char path[64], line[256];
    FILE *f;
    double mb = -1;
    if (g.pid <= 0) return -1;
    snprintf(path, sizeof path, "/proc/%d/status", g.pid);
    f = fopen(path, "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) mb = strtod(line + 6, NULL) / 1024.0;
    fclose(f);
    return mb;
}

static void watch(conn *c, unsigned events)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(g.epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
        perror("clients: epoll_ctl");
        exit(1);
    }
}

static void drop(conn *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->state = S_CLOSED;
}

static tally *round_tally(void) { return g.final_round ? &g.second : &g.first; }

/* A request that did not get its answer: counted, and its connection closed. */
static void fail(conn *c, int why)
{
    if (c->role == R_PROBE) {
        g.probe_failed++;
        g.probe_timeout += why == 't';
    } else if (c->role == R_SLOW || c->role == R_NOREAD) {
        g.first.refused += why == 'r';
        g.first.closed += why == 'c';
        g.first.timeout += why == 't';
    } else {
        tally *t = round_tally();
        t->refused += why == 'r';
        t->closed += why == 'c';
        t->timeout += why == 't';
    }
    if (c->role != R_PROBE &&
        (c->state == S_CONNECTING || c->state == S_SENDING || c->state == S_READING))
        g.pending--;
    drop(c);
}

static void start_request(conn *c)
{
    c->sent = 0;
    c->head_len = 0;
    c->head_done = 0;
    c->status = 0;
    c->body_left = -1;
    c->t_step = now();
    c->state = S_SENDING;
    watch(c, EPOLLOUT);
}

/* Opens a connection to 127.0.0.1:port. One that cannot even get a socket (the fd
 * limit) counts as refused. */
static void open_conn(conn *c, enum role role)
{
    static int told;
    struct sockaddr_in sa;
    int one = 1, small = 4096;
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};

    memset(c, 0, sizeof *c);
    c->role = role;
    c->t_open = c->t_step = now();
    c->state = S_CONNECTING;
    if (role != R_PROBE) g.pending++;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        if (!told++) fprintf(stderr, "clients: socket: %s (raise ulimit -n)\n", strerror(errno));
        fail(c, 'r');
        return;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (role == R_NOREAD) setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)g.port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (epoll_ctl(g.epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        perror("clients: epoll_ctl");
        exit(1);
    }
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS)
        fail(c, 'r');
}

/* Parses the status line and Content-Length once the header block is complete. */
static void parse_head(conn *c)
{
    char *p = c->head, *end = strstr(c->head, "\r\n\r\n");
    c->head_done = 1;
    c->status = (int)strtol(p + (strncmp(p, "HTTP/1.", 7) == 0 ? 9 : 0), NULL, 10);
    c->body_left = -1;
    for (p = strstr(p, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, "Content-Length:", 15) == 0) c->body_left = strtoll(p + 17, NULL, 10);
    if (c->status == 204 || c->status == 304 || (c->status >= 100 && c->status < 200)) c->body_left = 0;
}

static void answered(conn *c)
{
    double ms = (now() - (c->role == R_PROBE ? c->t_open : c->t_step)) * 1000.0;
    if (c->role == R_PROBE) {
        if (ms > PROBE_TIMEOUT * 1000.0) { /* answered between two ticks, but too late */
            g.probe_failed++;
            g.probe_timeout++;
        } else if (c->status >= 200 && c->status < 300) {
            if (g.probe_answered < MAX_PROBES) g.probe_ms[g.probe_answered] = ms;
            g.probe_answered++;
            if (ms > g.probe_worst) g.probe_worst = ms;
        } else {
            g.probe_failed++;
        }
        drop(c);
        return;
    }
    g.pending--;
    {
        tally *t = round_tally();
        t->answered++;
        t->non2xx += c->status < 200 || c->status >= 300;
        if (ms > t->worst_ms) t->worst_ms = ms;
    }
    c->state = S_IDLE;
    watch(c, EPOLLIN | EPOLLRDHUP);
}

static void on_readable(conn *c)
{
    char buf[65536];
    for (;;) {
        ssize_t r = read(c->fd, buf, sizeof buf);
        size_t off = 0;
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (r <= 0) {
            if (c->head_done && c->body_left < 0) {
                answered(c); /* an answer that ends with the connection */
                if (c->state != S_CLOSED) drop(c);
            } else {
                fail(c, 'c');
            }
            return;
        }
        if (!c->head_done) {
            size_t before = c->head_len, room = sizeof c->head - 1 - before;
            size_t take = (size_t)r < room ? (size_t)r : room;
            char *end;
            memcpy(c->head + before, buf, take);
            c->head_len += take;
            c->head[c->head_len] = '\0';
            end = strstr(c->head, "\r\n\r\n");
            if (!end && c->head_len == sizeof c->head - 1) {
                fail(c, 'c'); /* a header block longer than we keep */
                return;
            }
            if (!end) continue;
            parse_head(c);
            off = (size_t)(end + 4 - c->head) - before; /* the end was not in the earlier bytes */
        }
        if (c->body_left >= 0) {
            c->body_left -= (long long)((size_t)r - off);
            if (c->body_left <= 0) {
                answered(c);
                return;
            }
        }
    }
}

static void on_writable(conn *c)
{
    const char *req = g.req;
    size_t len = g.req_len;
    static const char probe[] = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    static const char slow[] = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";

    if (c->state == S_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            fail(c, 'r');
            return;
        }
        if (c->role != R_PROBE) g.opened++;
        start_request(c);
    }
    if (c->role == R_PROBE) req = probe, len = sizeof probe - 1;
    if (c->role == R_SLOW) req = slow, len = sizeof slow - 1;
    while (c->sent < len) {
        ssize_t w = send(c->fd, req + c->sent, len - c->sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN) return;
        if (w < 0) {
            fail(c, 'c');
            return;
        }
        c->sent += (size_t)w;
    }
    if (c->role == R_SLOW) {
        g.pending--;
        c->state = S_SLOW;
        c->next_due = now() + g.interval * (double)(rand() % 1000) / 1000.0;
        watch(c, EPOLLIN | EPOLLRDHUP);
    } else if (c->role == R_NOREAD) {
        g.pending--;
        c->state = S_STALLED;
        watch(c, EPOLLRDHUP);
    } else {
        c->state = S_READING;
        watch(c, EPOLLIN | EPOLLRDHUP);
    }
}

/* The server ended a connection we keep (idle, trickling or not reading). */
static void on_server_close(conn *c, double t)
{
    if (c->state == S_IDLE) {
        g.closed_idle++;
    } else if (c->state == S_SLOW) {
        double after = (t - c->t_open) * 1000.0;
        char buf[256];
        ssize_t r = read(c->fd, buf, sizeof buf - 1);
        if (r > 12 && strncmp(buf + 9, "408", 3) == 0) g.status_408++;
        if (!g.cut_off || after < g.cut_first) g.cut_first = after;
        if (after > g.cut_last) g.cut_last = after;
        g.cut_off++;
    } else {
        g.noread_closed++;
    }
    drop(c);
}

static void dispatch(conn *c, unsigned ev, double t)
{
    /* A trickling or non-reading client closed while the others are still being opened:
     * the server refused it (a thread-per-connection server at its limit accepts and
     * closes at once). */
    if (g.phase1 && (c->state == S_SLOW || c->state == S_STALLED)) {
        fail(c, 'c');
        return;
    }
    if (c->state == S_CONNECTING || c->state == S_SENDING) {
        if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) on_writable(c);
    } else if (c->state == S_READING) {
        on_readable(c);
    } else if (c->state == S_IDLE || c->state == S_SLOW || c->state == S_STALLED) {
        on_server_close(c, t);
    }
}

static void trickle(conn *c, double t)
{
    static const char line[] = "X-Trickle: 1\r\n";
    if (t < c->next_due) return;
    c->next_due += g.interval;
    if (send(c->fd, line, sizeof line - 1, MSG_NOSIGNAL) < 0 && errno != EAGAIN) on_server_close(c, t);
}

/* Timeouts, trickles, probes, RSS samples: run every tick of the loop. */
static void tick(double t, int probing, double *next_probe)
{
    for (int i = 0; i < g.n; i++) {
        conn *c = &g.conns[i];
        if (c->state == S_SLOW) trickle(c, t);
        else if ((c->state == S_CONNECTING || c->state == S_SENDING || c->state == S_READING) &&
                 t - c->t_step > STEP_TIMEOUT)
            fail(c, 't');
    }
    for (int i = 0; probing && i < MAX_OPEN_PROBES; i++) {
        conn *c = &g.probes[i];
        if (c->state != S_CLOSED && t - c->t_open > PROBE_TIMEOUT) fail(c, 't');
    }
    if (probing && !g.no_new_probes && t >= *next_probe) {
        *next_probe += PROBE_EVERY;
        for (int i = 0; i < MAX_OPEN_PROBES; i++) {
            if (g.probes[i].state != S_CLOSED) continue;
            open_conn(&g.probes[i], R_PROBE);
            break;
        }
    }
    {
        double rss = server_rss();
        if (rss > g.rss_peak) g.rss_peak = rss;
    }
}

/* Runs the loop until done() says so or the deadline passes; opens connections of
 * `role` up to n, at most WINDOW pending at once. */
static void loop(enum role role, double deadline, int (*done)(void), int probing)
{
    struct epoll_event evs[512];
    double next_probe = now(), last_tick = 0;
    while (!done() && now() < deadline) {
        int k;
        while (g.next_open < g.n && g.pending < WINDOW) open_conn(&g.conns[g.next_open++], role);
        k = epoll_wait(g.epfd, evs, 512, 20);
        for (int i = 0; i < k; i++) dispatch(evs[i].data.ptr, evs[i].events, now());
        if (now() - last_tick >= 0.1) {
            last_tick = now();
            tick(last_tick, probing, &next_probe);
        }
        if (stop_requested && g.mode != R_HOLD) break;
    }
}

static int all_settled(void) { return g.next_open == g.n && g.pending == 0; }
static int stop_or_idle(void) { return stop_requested != 0; }
static int second_done(void) { return g.pending == 0; }
static int never(void) { return 0; }
static int no_probe_open(void)
{
    for (int i = 0; i < MAX_OPEN_PROBES; i++)
        if (g.probes[i].state != S_CLOSED) return 0;
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Probes still waiting when the phase ends count as unanswered, with how long the
 * oldest has waited (a server that answers none of them must not look unprobed). */
static void print_probes(void)
{
    int n = g.probe_answered < MAX_PROBES ? g.probe_answered : MAX_PROBES, waiting = 0;
    double oldest = 0, t = now();
    for (int i = 0; i < MAX_OPEN_PROBES; i++) {
        if (g.probes[i].state == S_CLOSED) continue;
        waiting++;
        if (t - g.probes[i].t_open > oldest) oldest = t - g.probes[i].t_open;
    }
    qsort(g.probe_ms, (size_t)n, sizeof g.probe_ms[0], cmp_double);
    printf(" probes=%d probes_answered=%d probes_timed_out=%d probes_waiting=%d probe_oldest_waiting_ms=%.0f"
           " probe_median_ms=%.1f probe_worst_ms=%.1f",
           g.probe_answered + g.probe_failed + waiting, g.probe_answered, g.probe_timeout, waiting,
           oldest * 1000.0, n ? g.probe_ms[n / 2] : 0.0, g.probe_worst);
}

static int usage(void)
{
    fprintf(stderr, "usage: clients hold|slowloris|noread -n N [--path P] [--auth] [--seconds S]\n"
                    "               [--interval S] [--max-seconds S] [--pid PID] PORT\n"
                    "(see the comment at the top of bench/clients.c)\n");
    return 2;
}

static int parse_args(int argc, char **argv)
{
    int i;
    if (argc < 3) return -1;
    if (strcmp(argv[1], "hold") == 0) g.mode = R_HOLD;
    else if (strcmp(argv[1], "slowloris") == 0) g.mode = R_SLOW;
    else if (strcmp(argv[1], "noread") == 0) g.mode = R_NOREAD;
    else return -1;
    g.path = "/health";
    g.seconds = g.mode == R_SLOW ? 40 : 10;
    g.interval = 5;
    g.max_seconds = 600;
    for (i = 2; i < argc - 1; i++) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--auth") == 0) { g.auth = 1; continue; }
        if (i + 1 >= argc - 1) return -1;
        if (strcmp(a, "-n") == 0) g.n = atoi(v);
        else if (strcmp(a, "--path") == 0) g.path = v;
        else if (strcmp(a, "--seconds") == 0) g.seconds = atof(v);
        else if (strcmp(a, "--interval") == 0) g.interval = atof(v);
        else if (strcmp(a, "--max-seconds") == 0) g.max_seconds = atof(v);
        else if (strcmp(a, "--pid") == 0) g.pid = atoi(v);
        else return -1;
        i++;
    }
    g.port = atoi(argv[argc - 1]);
    if (g.n <= 0 || g.n > 100000 || g.port <= 0 || g.port > 65535 || g.seconds <= 0 ||
        g.interval <= 0 || g.max_seconds <= 0 || g.path[0] != '/')
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *token = getenv("AT_TOKEN");
    struct sigaction sa;
    int len;
    double t0;

    if (parse_args(argc, argv) != 0) return usage();
    if (g.auth && (!token || !*token)) {
        fprintf(stderr, "clients: --auth needs the token in AT_TOKEN\n");
        return 2;
    }
    len = snprintf(g.req, sizeof g.req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s%s%s\r\n", g.path,
                   g.port, g.auth ? "Authorization: Bearer " : "", g.auth ? token : "",
                   g.auth ? "\r\n" : "");
    if (len < 0 || (size_t)len >= sizeof g.req) {
        fprintf(stderr, "clients: the request is too long\n");
        return 2;
    }
    g.req_len = (size_t)len;
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    srand((unsigned)getpid());
    g.epfd = epoll_create1(EPOLL_CLOEXEC);
    g.conns = calloc((size_t)g.n, sizeof *g.conns);
    if (g.epfd < 0 || !g.conns) {
        fprintf(stderr, "clients: out of resources\n");
        return 1;
    }
    for (int i = 0; i < g.n; i++) g.conns[i].state = S_CLOSED, g.conns[i].fd = -1;
    t0 = now();

    /* Phase 1: every connection opened (and, for hold, answered once). */
    g.phase1 = 1;
    loop(g.mode, t0 + g.max_seconds, all_settled, 0);
    /* A server at its limit may accept and then close: give that a second to show. */
    if (g.mode != R_HOLD) loop(g.mode, now() + 1.0, never, 0);
    g.phase1 = 0;
    printf("%s: ready connections=%d opened=%d refused=%d closed=%d timeout=%d answered=%d non2xx=%d "
           "worst_ms=%.1f open_s=%.1f\n",
           argv[1], g.n, g.opened, g.first.refused, g.first.closed, g.first.timeout,
           g.first.answered, g.first.non2xx, g.first.worst_ms, now() - t0);
    fflush(stdout);

    if (g.mode == R_HOLD) {
        /* Phase 2: held idle until SIGTERM; phase 3: one more request on each. */
        int open_now = 0;
        loop(g.mode, t0 + g.max_seconds, stop_or_idle, 0);
        g.final_round = 1;
        for (int i = 0; i < g.n; i++) {
            if (g.conns[i].state != S_IDLE) continue;
            g.pending++;
            open_now++;
            start_request(&g.conns[i]);
        }
        loop(g.mode, now() + 2 * STEP_TIMEOUT, second_done, 0);
        printf("hold: done held=%d closed_by_server_while_idle=%d second_answered=%d second_non2xx=%d "
               "second_failed=%d second_worst_ms=%.1f rss_peak_mb=%.1f\n",
               open_now, g.closed_idle, g.second.answered, g.second.non2xx,
               g.second.refused + g.second.closed + g.second.timeout, g.second.worst_ms, g.rss_peak);
    } else {
        int still = 0;
        g.probes = calloc(MAX_OPEN_PROBES, sizeof *g.probes);
        if (!g.probes) return 1;
        for (int i = 0; i < MAX_OPEN_PROBES; i++) g.probes[i].state = S_CLOSED, g.probes[i].fd = -1;
        loop(g.mode, now() + g.seconds, never, 1);
        /* The probes in flight get their full time, the attack still going on. */
        g.no_new_probes = 1;
        loop(g.mode, now() + PROBE_TIMEOUT + 0.5, no_probe_open, 1);
        for (int i = 0; i < g.n; i++) still += g.conns[i].state == S_SLOW || g.conns[i].state == S_STALLED;
        printf("%s: done seconds=%.1f still_open=%d", argv[1], g.seconds, still);
        if (g.mode == R_SLOW)
            printf(" cut_off=%d cut_408=%d cut_first_ms=%.0f cut_last_ms=%.0f", g.cut_off, g.status_408,
                   g.cut_first, g.cut_last);
        else
            printf(" closed_by_server=%d", g.noread_closed);
        print_probes();
        printf(" rss_peak_mb=%.1f\n", g.rss_peak);
    }
    for (int i = 0; i < g.n; i++) drop(&g.conns[i]);
    return 0;
}
