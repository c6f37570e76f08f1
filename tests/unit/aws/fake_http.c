/* The scripted HTTP server of client tests (fake_http.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_http.h"

/* Reads one HTTP request (headers and Content-Length body). Returns 1, or 0 on EOF /
 * stop / error. */
static int read_request(fake_http_server *f, int fd, char *buf, size_t cap)
{
    size_t len = 0;
    char *end = NULL;
    long clen = 0;
    for (;;) {
        struct pollfd p[2] = {{fd, POLLIN, 0}, {f->stop_pipe[0], POLLIN, 0}};
        ssize_t n;
        if (end) {
            size_t head = (size_t)(end + 4 - buf);
            if (len >= head + (size_t)clen) return 1;
        }
        if (poll(p, 2, -1) < 0 && errno != EINTR) return 0;
        if (p[1].revents) return 0;
        if (len + 1 >= cap) return 0;
        n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0) return 0;
        len += (size_t)n;
        buf[len] = '\0';
        if (!end && (end = strstr(buf, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(buf, "\r\ncontent-length:");
            clen = cl ? strtol(cl + 17, NULL, 10) : 0;
        }
    }
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

static void *fake_main(void *arg)
{
    fake_http_server *f = arg;
    static char buf[1 << 16];
    for (;;) {
        struct pollfd p[2] = {{f->lfd, POLLIN, 0}, {f->stop_pipe[0], POLLIN, 0}};
        int fd;
        if (poll(p, 2, -1) < 0 && errno != EINTR) break;
        if (p[1].revents) break;
        fd = accept(f->lfd, NULL, NULL);
        if (fd < 0) continue;
        pthread_mutex_lock(&f->lock);
        f->connections++;
        pthread_mutex_unlock(&f->lock);
        while (read_request(f, fd, buf, sizeof buf)) {
            const fake_http_reply *r;
            char head[2048];
            const char *body;
            pthread_mutex_lock(&f->lock);
            r = &f->script[(size_t)f->requests < f->nscript ? (size_t)f->requests : f->nscript - 1];
            f->requests++;
            snprintf(f->last_request, sizeof f->last_request, "%.8000s", buf);
            pthread_mutex_unlock(&f->lock);
            if (r->mode == FAKE_HANG) {
                /* Never answer: wait until the client gives up and closes. */
                char tmp[256];
                struct pollfd q[2] = {{fd, POLLIN, 0}, {f->stop_pipe[0], POLLIN, 0}};
                while (poll(q, 2, -1) >= 0 && !q[1].revents && read(fd, tmp, sizeof tmp) > 0) {
                }
                break;
            }
            if (r->mode == FAKE_DROP) break;
            body = r->body ? r->body : "{}";
            /* One write: a head and a body in two small writes would meet the client's
             * delayed ACK (Nagle) and cost 40 ms. */
            snprintf(head, sizeof head,
                     "HTTP/1.1 %d X\r\nContent-Type: application/x-amz-json-1.0\r\n"
                     "Content-Length: %zu\r\nConnection: keep-alive\r\n\r\n%s",
                     r->status, strlen(body), body);
            write_all(fd, head, strlen(head));
            if (r->mode == FAKE_CLOSE_AFTER) break; /* says keep-alive, then closes */
        }
        close(fd);
    }
    return NULL;
}

void fake_http_start(fake_http_server *f, const fake_http_reply *script, size_t n)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    memset(f, 0, sizeof *f);
    f->script = script;
    f->nscript = n;
    pthread_mutex_init(&f->lock, NULL);
    assert_int_equal(pipe(f->stop_pipe), 0);
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->lfd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(f->lfd, 16), 0);
    assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&a, &alen), 0);
    f->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

void fake_http_stop(fake_http_server *f)
{
    assert_int_equal(write(f->stop_pipe[1], "x", 1), 1);
    pthread_join(f->th, NULL);
    close(f->lfd);
    close(f->stop_pipe[0]);
    close(f->stop_pipe[1]);
    pthread_mutex_destroy(&f->lock);
}

