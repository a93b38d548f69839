#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* The daemon's own epoll descriptor (external-epoll mode), or -1. */
static inline int fbs_mhd_epoll_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}

#include <sys/prctl.h>

/* Names the calling thread (at most 15 bytes are kept), as `top -H` and `ps -L` show it. */
static inline void fbs_name_this_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* The daemon a connection belongs to. */
static inline struct MHD_Daemon *fbs_mhd_connection_daemon(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_DAEMON);
    return info ? info->daemon : NULL;
}
