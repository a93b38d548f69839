/*
 * minimal-mhd: the ceiling for the `GET /healthz` row of bench/run.
 *
 * A libmicrohttpd responder with no logic: every request, whatever its method or path, gets the same
 * 200 response, `{"status":"ok"}` with `Content-Type: application/json` (the bytes fbsessiond's /healthz
 * sends, less its X-Request-Id header). The response object is made once at start and queued for every
 * request, so nothing is allocated, parsed, routed, logged or counted per request.
 *
 * What is matched with Sources/HTTPServer/Server.swift (libmicrohttpd 0.9.75), so that the ratio measures what
 * the service adds on top of the same HTTP engine and not a different engine configuration:
 *   - flags: MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO
 *     (suspend/resume is never used here, but the flag changes libmicrohttpd's internal bookkeeping);
 *   - MHD_OPTION_THREAD_POOL_SIZE: the number of processors (the service's default, ServerConfiguration.threads
 *     = 0 -> activeProcessorCount), or argv[2]; like the service, no pool option when it is 1;
 *   - MHD_OPTION_CONNECTION_MEMORY_LIMIT 24 KiB, MHD_OPTION_CONNECTION_LIMIT 4096,
 *     MHD_OPTION_CONNECTION_TIMEOUT 30 s (ServerConfiguration's defaults);
 *   - a listen backlog of 1024 (the service binds its own socket with that backlog and hands it over with
 *     MHD_OPTION_LISTEN_SOCKET; here MHD_OPTION_LISTEN_BACKLOG_SIZE does the same);
 *   - the access handler answers on its second call for a request, as the service does (the first call sees
 *     the head, the second one queues the response), the pattern libmicrohttpd's documentation shows.
 * Not matched, on purpose (this is what the service's own work is measured against): the NOTIFY_COMPLETED and
 * URI_LOG callbacks, header collection, request ids, routing, the per-request response object, metrics and the
 * per-request log line.
 *
 * With a BODY_FILE it answers that file's bytes instead, as `image/png`: the ceiling of the engine itself for a
 * body as large as the bench's picture (the picture rows' ratios against /healthz include what sending 100 KB
 * costs libmicrohttpd and the kernel, which no service logic can take away).
 *
 * Build: gcc -O2 -o minimal-mhd bench/minimal-mhd.c $(pkg-config --cflags --libs libmicrohttpd)
 * Run:   minimal-mhd PORT [THREADS [BODY_FILE]]     (listens on 127.0.0.1; stops on SIGINT or SIGTERM)
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char body[] = "{\"status\":\"ok\"}";
static struct MHD_Response *fixed;
static volatile sig_atomic_t stopping;

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **request_state) {
    static int seen;
    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    (void)upload_data;
    if (*request_state == NULL) {
        *request_state = &seen;
        return MHD_YES;
    }
    *upload_data_size = 0;
    return MHD_queue_response(connection, MHD_HTTP_OK, fixed);
}

static void stop(int signal_number) {
    (void)signal_number;
    stopping = 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT [THREADS [BODY_FILE]]\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]);
    long threads = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
    if (port <= 0 || port > 65535 || threads < 1) {
        fprintf(stderr, "minimal-mhd: bad port or thread count\n");
        return 2;
    }

    const char *type = "application/json";
    if (argc > 3) {
        FILE *file = fopen(argv[3], "rb");
        static char bytes[1 << 22];
        size_t length = file == NULL ? 0 : fread(bytes, 1, sizeof bytes, file);
        if (file == NULL || length == 0 || length == sizeof bytes) {
            fprintf(stderr, "minimal-mhd: cannot read %s (at most 4 MiB)\n", argv[3]);
            return 1;
        }
        fclose(file);
        fixed = MHD_create_response_from_buffer(length, bytes, MHD_RESPMEM_PERSISTENT);
        type = "image/png";
    } else {
        fixed = MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    }
    if (fixed == NULL || MHD_add_response_header(fixed, "Content-Type", type) != MHD_YES) {
        fprintf(stderr, "minimal-mhd: cannot make the response\n");
        return 1;
    }

    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO;
    struct MHD_Daemon *daemon;
    if (threads > 1) {
        daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, answer, NULL,
                                  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
                                  MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
                                  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(24 << 10),
                                  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
                                  MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)threads, MHD_OPTION_END);
    } else {
        daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, answer, NULL,
                                  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
                                  MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
                                  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(24 << 10),
                                  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_END);
    }
    if (daemon == NULL) {
        fprintf(stderr, "minimal-mhd: libmicrohttpd did not start on 127.0.0.1:%d\n", port);
        return 1;
    }

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = stop;
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    while (!stopping) {
        pause();
    }
    MHD_stop_daemon(daemon);
    MHD_destroy_response(fixed);
    return 0;
}
