/* The polling threads (src/http/loop.c): each runs one libmicrohttpd daemon started in
 * external epoll mode, waiting on the daemon's epoll set itself and letting the library
 * only take events that are already there (docs/http-server.md, "Driving the
 * library"). */
#ifndef AT_LOOP_H
#define AT_LOOP_H

struct MHD_Daemon;

typedef struct at_loop at_loop;

/* Starts a thread that runs d (started with MHD_USE_EPOLL, without an internal thread)
 * until at_loop_free. Returns 0, or AT_ENOMEM / AT_EIO (no eventfd, no thread). The
 * daemon stays the caller's; stop it only after at_loop_free. */
int at_loop_new(struct MHD_Daemon *d, at_loop **out /* OUT */);

/* Makes the thread run the daemon again soon. Call it after MHD_resume_connection on one
 * of its connections (the library has no channel of its own to say so in this mode).
 * Safe from any thread, the loop's own included. */
void at_loop_wake(at_loop *l);

/* Stops and joins the thread and frees the loop; the daemon is not run any more.
 * Accepts NULL. */
void at_loop_free(at_loop *l);

#endif
