/*
 * fence-probe: what parking a request for a PostgreSQL fence costs in two designs, measured with no service
 * logic at all (docs/benchmarks.md, "What parking costs").
 *
 * Two paths on one libmicrohttpd responder:
 *   GET /healthz  answered at once ({"status":"ok"}), as bench/minimal-mhd.c does;
 *   GET /fenced   answered with the same bytes, but only after a fence sent after the request arrived came back:
 *                 a bare Sync message (libpq's pipeline mode) on a connection that LISTENs (PROBE_FENCE=query:
 *                 `SELECT 1`; PROBE_FENCE=notify: a `SELECT pg_notify(<own channel>, '')` that comes back to it,
 *                 the method before PostgreSQL 15). One fence answers every
 *                 request parked while it was out; requests parked meanwhile wait for the next one. This is the
 *                 exact cache's fence (docs/caching.md) without the cache.
 *
 * Designs (argv[1]):
 *   threaded  what fbsessiond does today: libmicrohttpd's own epoll threads (a pool of THREADS), a parked request
 *             suspended with MHD_suspend_connection, one listener thread that owns the PostgreSQL connection,
 *             woken through a pipe to send a fence, which resumes the requests of a fence that came back
 *             (MHD_resume_connection from its thread, which wakes libmicrohttpd's).
 *   fused     one event loop per thread (THREADS of them, each its own listening socket on the port with
 *             SO_REUSEPORT): libmicrohttpd run from the loop (external epoll mode), and the loop's own PostgreSQL
 *             connection in the same epoll set. A fence that comes back resumes its requests on the same thread,
 *             in the same turn, with no wake-up of another thread.
 *
 * PROBE_PREPARED (set, threaded and fused designs, with PROBE_FENCE=query or notify): the fence is a statement
 * prepared once per connection instead of a simple query, parsed and planned each time.
 * PROBE_FENCE=query|notify: fences by `SELECT 1` or by NOTIFY (default: by a bare Sync, as the service does).
 *
 * Build: gcc -O2 -o fence-probe bench/fence-probe.c -pthread $(pkg-config --cflags --libs libmicrohttpd libpq)
 * Run:   fence-probe threaded|fused|own PORT THREADS CONNINFO     (127.0.0.1; stops on SIGINT or SIGTERM)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PARKED 65536

static const char body[] = "{\"status\":\"ok\"}";
static struct MHD_Response *fixed;
static volatile sig_atomic_t stopping;
static int port;
static const char *conninfo;
static int notify_fences; /* PROBE_FENCE=notify: a fence is a NOTIFY that comes back */
static int query_fences;  /* PROBE_FENCE=query: a fence is `SELECT 1`; by default it is a bare Sync message */

/* Parked connections of one fence source: those waiting for the fence in flight, and those for the next one. */
struct fence_source {
    pthread_mutex_t lock; /* threaded design only */
    PGconn *pg;
    char channel[64];
    int in_flight;
    struct MHD_Connection **riding, **next;
    int riding_count, next_count;
    int wake_pipe[2]; /* threaded design only: a request asks the listener thread for a fence */
};

static void fail(const char *what) {
    fprintf(stderr, "fence-probe: %s\n", what);
    exit(1);
}

static void connect_source(struct fence_source *source, int index) {
    source->pg = PQconnectdb(conninfo);
    if (PQstatus(source->pg) != CONNECTION_OK) fail(PQerrorMessage(source->pg));
    snprintf(source->channel, sizeof source->channel, "probe_fence_%d_%d", (int)getpid(), index);
    char sql[128];
    snprintf(sql, sizeof sql, "LISTEN %s", source->channel);
    PGresult *result = PQexec(source->pg, sql);
    if (PQresultStatus(result) != PGRES_COMMAND_OK) fail(PQerrorMessage(source->pg));
    PQclear(result);
    PQclear(PQexec(source->pg, "SET synchronous_commit = off"));
    PGresult *prepared =
        PQprepare(source->pg, "fence", notify_fences ? "SELECT pg_notify($1, '')" : "SELECT $1::text", 1, NULL);
    if (PQresultStatus(prepared) != PGRES_COMMAND_OK) fail(PQerrorMessage(source->pg));
    PQclear(prepared);
    if (PQsetnonblocking(source->pg, 1) != 0) fail("PQsetnonblocking");
    /* A Sync fence needs pipeline mode (libpq sends a Sync alone only there); the connection never leaves it. */
    if (!notify_fences && !query_fences && !PQenterPipelineMode(source->pg)) fail("PQenterPipelineMode");
    source->riding = calloc(MAX_PARKED, sizeof *source->riding);
    source->next = calloc(MAX_PARKED, sizeof *source->next);
    pthread_mutex_init(&source->lock, NULL);
}

/* Sends a fence for the requests parked for the next one, if there are any and none is in flight. */
static void send_fence_if_due(struct fence_source *source) {
    if (source->in_flight || source->next_count == 0) return;
    struct MHD_Connection **swap = source->riding;
    source->riding = source->next;
    source->riding_count = source->next_count;
    source->next = swap;
    source->next_count = 0;
    if (!notify_fences && !query_fences) {
        if (!PQpipelineSync(source->pg)) fail(PQerrorMessage(source->pg));
    } else if (getenv("PROBE_PREPARED") != NULL) {
        /* The statement prepared once per connection: no parse and plan per fence. */
        const char *values[1] = {source->channel};
        if (!PQsendQueryPrepared(source->pg, "fence", 1, values, NULL, NULL, 0)) fail(PQerrorMessage(source->pg));
    } else {
        char sql[128];
        if (notify_fences) snprintf(sql, sizeof sql, "SELECT pg_notify('%s', '')", source->channel);
        else snprintf(sql, sizeof sql, "SELECT 1");
        if (!PQsendQuery(source->pg, sql)) fail(PQerrorMessage(source->pg));
    }
    while (PQflush(source->pg) == 1) {}
    source->in_flight = 1;
}

/* Resumes the requests riding on the fence that came back. */
static int fence_returned(struct fence_source *source) {
    for (int i = 0; i < source->riding_count; i++) MHD_resume_connection(source->riding[i]);
    int resumed = source->riding_count;
    source->riding_count = 0;
    source->in_flight = 0;
    return resumed;
}

/* Reads what the connection has; returns how many parked connections a returned fence resumed. A query fence is
 * back when its query is done (the notifications before its answer are read first); a NOTIFY fence when its
 * notification is. */
static int read_source(struct fence_source *source) {
    if (!PQconsumeInput(source->pg)) fail(PQerrorMessage(source->pg));
    int done = 0;
    while (!PQisBusy(source->pg)) {
        PGresult *result = PQgetResult(source->pg);
        if (result == NULL) break;
        done = 1;
        PQclear(result);
    }
    int resumed = 0, notified = 0;
    PGnotify *notify;
    while ((notify = PQnotifies(source->pg)) != NULL) {
        PQfreemem(notify);
        notified = 1;
    }
    if (source->in_flight && (notify_fences ? notified : done)) resumed = fence_returned(source);
    return resumed;
}

/* The access handler: cls is the request's fence source. con_cls counts the calls for a request. */
static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
    (void)method, (void)version, (void)upload_data, (void)upload_size;
    struct fence_source *source = cls;
    intptr_t calls = (intptr_t)*con_cls;
    *con_cls = (void *)(calls + 1);
    if (calls == 0) return MHD_YES; /* the head */
    if (strcmp(url, "/fenced") != 0 || calls >= 2) return MHD_queue_response(connection, 200, fixed);
    /* Second call: park it for a fence sent from now on. */
    MHD_suspend_connection(connection);
    if (source->wake_pipe[1] >= 0) {
        pthread_mutex_lock(&source->lock);
        source->next[source->next_count++] = connection;
        int ask = !source->in_flight && source->next_count == 1;
        pthread_mutex_unlock(&source->lock);
        if (ask) {
            char byte = 1;
            (void)!write(source->wake_pipe[1], &byte, 1);
        }
    } else {
        source->next[source->next_count++] = connection; /* the loop sends the fence once this turn is read */
    }
    return MHD_YES;
}

static void request_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                              enum MHD_RequestTerminationCode code) {
    (void)cls, (void)connection, (void)code;
    *con_cls = NULL;
}

/* --- threaded: libmicrohttpd's threads, one listener thread --------------------------------------------- */

static void *listener_thread(void *argument) {
    struct fence_source *source = argument;
    struct pollfd fds[2] = {{source->wake_pipe[0], POLLIN, 0}, {PQsocket(source->pg), POLLIN, 0}};
    while (!stopping) {
        if (poll(fds, 2, 100) <= 0) continue;
        if (fds[0].revents) {
            char bytes[64];
            while (read(source->wake_pipe[0], bytes, sizeof bytes) > 0) {}
        }
        pthread_mutex_lock(&source->lock);
        if (fds[1].revents) read_source(source);
        send_fence_if_due(source);
        pthread_mutex_unlock(&source->lock);
    }
    return NULL;
}

static void run_threaded(int threads) {
    static struct fence_source source;
    connect_source(&source, 0);
    if (pipe(source.wake_pipe) != 0) fail("pipe");
    for (int i = 0; i < 2; i++) {
        int flags = fcntl(source.wake_pipe[i], F_GETFL);
        fcntl(source.wake_pipe[i], F_SETFL, flags | O_NONBLOCK);
    }
    pthread_t listener;
    pthread_create(&listener, NULL, listener_thread, &source);
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, answer, &source, MHD_OPTION_SOCK_ADDR, &address, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned int)threads, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)24 * 1024, MHD_OPTION_CONNECTION_LIMIT,
        4096u, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL,
        MHD_OPTION_END);
    if (daemon == NULL) fail("MHD_start_daemon");
    while (!stopping) pause();
    MHD_stop_daemon(daemon);
}

/* --- fused: one loop per thread -------------------------------------------------------------------------- */

/* A non-blocking socket listening on 127.0.0.1:PORT beside the other loops' (SO_REUSEPORT spreads connections). */
static int listen_on_shared_port(void) {
    int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd, (struct sockaddr *)&address, sizeof address) != 0 || listen(listen_fd, 1024) != 0)
        fail("bind");
    return listen_fd;
}

static void *fused_loop(void *argument) {
    struct fence_source *source = argument;
    source->wake_pipe[0] = source->wake_pipe[1] = -1;
    int listen_fd = listen_on_shared_port();
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO, 0, NULL, NULL, answer, source,
        MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)24 * 1024,
        MHD_OPTION_CONNECTION_LIMIT, 2048u, MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL, MHD_OPTION_END);
    if (daemon == NULL) fail("MHD_start_daemon (external)");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    int loop = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event mhd = {.events = EPOLLIN, .data.u32 = 0}, pg = {.events = EPOLLIN, .data.u32 = 1};
    epoll_ctl(loop, EPOLL_CTL_ADD, info->epoll_fd, &mhd);
    epoll_ctl(loop, EPOLL_CTL_ADD, PQsocket(source->pg), &pg);
    int resumed = 0;
    while (!stopping) {
        MHD_UNSIGNED_LONG_LONG timeout = 0;
        int wait = resumed ? 0 : (MHD_get_timeout(daemon, &timeout) == MHD_YES ? (int)(timeout < 100 ? timeout : 100) : 100);
        struct epoll_event events[4];
        int ready = epoll_wait(loop, events, 4, wait);
        resumed = 0;
        for (int i = 0; i < ready; i++) {
            if (events[i].data.u32 == 1) resumed += read_source(source);
        }
        MHD_run(daemon); /* reads and answers; resumed connections are taken back and answered here */
        send_fence_if_due(source);
    }
    MHD_stop_daemon(daemon);
    return NULL;
}

/* Runs `loop` on THREADS threads, each with its own fence connection, until a signal. */
static void run_loops(int threads, void *(*loop)(void *)) {
    pthread_t loops[64];
    struct fence_source *sources = calloc((size_t)threads, sizeof *sources);
    for (int i = 0; i < threads; i++) {
        connect_source(&sources[i], i);
        pthread_create(&loops[i], NULL, loop, &sources[i]);
    }
    while (!stopping) pause();
    for (int i = 0; i < threads; i++) pthread_join(loops[i], NULL);
}

/* --- own: one loop per thread, a plain HTTP/1.1 reader and writer, a parked request only a flag ------------ */

/* What the "own" design keeps per connection: its socket, the unread bytes, and whether a request waits for a
 * fence (then its answer is written when the fence comes back, in the same turn that read it). */
struct own_connection {
    int fd;
    int parked;
    size_t have;
    char buffer[4096];
};

static const char own_reply[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"status\":\"ok\"}";

static void own_write(struct own_connection *connection) {
    (void)!send(connection->fd, own_reply, sizeof own_reply - 1, MSG_NOSIGNAL);
}

/* Answers the complete requests in the buffer; a /fenced one parks the connection (and stops: HTTP/1.1 answers
 * in order, so a pipelined request after it waits too). Returns 0 when the connection is to be closed. */
static int own_serve(struct own_connection *connection, struct own_connection ***parked, int *parked_count) {
    while (!connection->parked) {
        char *end = memmem(connection->buffer, connection->have, "\r\n\r\n", 4);
        if (end == NULL) return connection->have < sizeof connection->buffer;
        size_t length = (size_t)(end - connection->buffer) + 4;
        int fenced = connection->have > 11 && memcmp(connection->buffer, "GET /fenced ", 12) == 0;
        memmove(connection->buffer, connection->buffer + length, connection->have - length);
        connection->have -= length;
        if (fenced) {
            connection->parked = 1;
            (*parked)[(*parked_count)++] = connection;
        } else {
            own_write(connection);
        }
    }
    return 1;
}

static void *own_loop(void *argument) {
    struct fence_source *source = argument;
    int listen_fd = listen_on_shared_port();
    int loop = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event listening = {.events = EPOLLIN, .data.ptr = NULL};
    struct epoll_event pg = {.events = EPOLLIN, .data.ptr = source};
    epoll_ctl(loop, EPOLL_CTL_ADD, listen_fd, &listening);
    epoll_ctl(loop, EPOLL_CTL_ADD, PQsocket(source->pg), &pg);
    /* Up to `depth` fences in flight (PROBE_FENCES, default 1), pipelined on the one connection: fence n carries
     * n as its payload, and answers the requests parked before it was sent and after fence n-1 was. With one, a
     * request that arrives while a fence is out waits for it to come back and then for its own: up to two round
     * trips. With more, every request waits for one. */
    int depth = getenv("PROBE_FENCES") ? atoi(getenv("PROBE_FENCES")) : 1;
    if (depth < 1 || depth > 16) fail("PROBE_FENCES is 1 to 16");
    struct own_connection **batches[16];
    int batch_counts[16] = {0};
    for (int k = 0; k < depth; k++) batches[k] = calloc(MAX_PARKED, sizeof **batches);
    struct own_connection **next = (struct own_connection **)source->next;
    int next_count = 0, in_flight = 0;
    unsigned long sent = 0, returned = 0;
    if (depth > 1 && !PQenterPipelineMode(source->pg)) fail("PQenterPipelineMode");
    char sql[128];
    if (notify_fences) snprintf(sql, sizeof sql, "SELECT pg_notify('%s', $1)", source->channel);
    else snprintf(sql, sizeof sql, "SELECT $1::text");
    while (!stopping) {
        struct epoll_event events[256];
        int ready = epoll_wait(loop, events, 256, 100);
        for (int i = 0; i < ready; i++) {
            void *tag = events[i].data.ptr;
            if (tag == NULL) {
                int fd;
                while ((fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    int nodelay = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
                    struct own_connection *connection = calloc(1, sizeof *connection);
                    connection->fd = fd;
                    struct epoll_event event = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = connection};
                    epoll_ctl(loop, EPOLL_CTL_ADD, fd, &event);
                }
            } else if (tag == source) {
                if (!PQconsumeInput(source->pg)) fail(PQerrorMessage(source->pg));
                int answered = 0; /* query fences whose answer came: one result with rows each */
                for (int spins = 0; spins < 64 && !PQisBusy(source->pg); spins++) {
                    PGresult *result = PQgetResult(source->pg); /* NULL between a pipeline's results */
                    if (result == NULL) continue;
                    ExecStatusType status = PQresultStatus(result);
                    if (status == PGRES_TUPLES_OK || (!query_fences && !notify_fences && status == PGRES_PIPELINE_SYNC))
                        answered++;
                    PQclear(result);
                }
                int notified = 0;
                PGnotify *notify;
                while ((notify = PQnotifies(source->pg)) != NULL) {
                    PQfreemem(notify);
                    notified++;
                }
                for (int back = notify_fences ? notified : answered; back > 0 && in_flight > 0; back--) {
                    struct own_connection **riding = batches[returned % (unsigned long)depth];
                    int count = batch_counts[returned % (unsigned long)depth];
                    batch_counts[returned % (unsigned long)depth] = 0;
                    returned++;
                    in_flight--;
                    for (int k = 0; k < count; k++) {
                        riding[k]->parked = 0;
                        own_write(riding[k]);
                        if (!own_serve(riding[k], &next, &next_count)) riding[k]->have = 0;
                    }
                }
            } else {
                struct own_connection *connection = tag;
                ssize_t got = recv(connection->fd, connection->buffer + connection->have,
                                   sizeof connection->buffer - connection->have, 0);
                if (got <= 0 || !(connection->have += (size_t)got, own_serve(connection, &next, &next_count))) {
                    if (got < 0 && errno == EAGAIN) continue;
                    if (connection->parked) continue; /* freed once its fence is back; rare here */
                    epoll_ctl(loop, EPOLL_CTL_DEL, connection->fd, NULL);
                    close(connection->fd);
                    free(connection);
                }
            }
        }
        if (in_flight < depth && next_count > 0) {
            int slot = (int)(sent % (unsigned long)depth);
            struct own_connection **swap = batches[slot];
            batches[slot] = next;
            batch_counts[slot] = next_count;
            next = swap;
            next_count = 0;
            char payload[24];
            snprintf(payload, sizeof payload, "%lu", sent);
            const char *values[1] = {payload};
            if ((query_fences || notify_fences) && !PQsendQueryParams(source->pg, sql, 1, NULL, values, NULL, NULL, 0))
                fail(PQerrorMessage(source->pg));
            if ((depth > 1 || !(query_fences || notify_fences)) && !PQpipelineSync(source->pg))
                fail(PQerrorMessage(source->pg));
            while (PQflush(source->pg) == 1) {}
            sent++;
            in_flight++;
        }
    }
    return NULL;
}

static void on_signal(int signal_number) {
    (void)signal_number;
    stopping = 1;
}

int main(int argc, char **argv) {
    notify_fences = getenv("PROBE_FENCE") != NULL && strcmp(getenv("PROBE_FENCE"), "notify") == 0;
    query_fences = getenv("PROBE_FENCE") != NULL && strcmp(getenv("PROBE_FENCE"), "query") == 0;
    if (argc != 5) {
        fprintf(stderr, "usage: fence-probe threaded|fused|own PORT THREADS CONNINFO\n");
        return 2;
    }
    port = atoi(argv[2]);
    int threads = atoi(argv[3]);
    conninfo = argv[4];
    if (threads < 1 || threads > 64) fail("THREADS is 1 to 64");
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    fixed = MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(fixed, "Content-Type", "application/json");
    if (strcmp(argv[1], "threaded") == 0) {
        run_threaded(threads);
    } else if (strcmp(argv[1], "fused") == 0) {
        run_loops(threads, fused_loop);
    } else if (strcmp(argv[1], "own") == 0) {
        run_loops(threads, own_loop);
    } else {
        fail("the design is threaded, fused or own");
    }
    return 0;
}
