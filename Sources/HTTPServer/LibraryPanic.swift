internal import CMicroHTTPD

/// libmicrohttpd's fatal-error hook, with one known-harmless case let through.
///
/// libmicrohttpd 0.9.75 calls its panic function (by default: print and `abort()`) when `MHD_quiesce_daemon`
/// cannot remove the listening socket from a worker thread's epoll set. With a thread pool that races with the
/// worker itself, which takes the socket out of its set whenever it reaches the connection limit: the removal
/// then fails because the socket is already out, which is exactly the state quiescing wants. Seen once in the
/// test suite (ServerTests, shutdown right after the limit was hit); in production it would crash a graceful
/// shutdown under a connection flood. For that one message the handler returns, and libmicrohttpd goes on to
/// mark the socket as out of the set; every other panic still prints its place and aborts.
enum LibraryPanic {
    /// The panic text of the quiesce race (libmicrohttpd's daemon.c).
    static let quiesceRace = "Failed to remove listen FD from epoll set"

    /// Whether a panic with this reason may return.
    static func isHarmless(reason: String?) -> Bool {
        guard let reason else { return false }
        return reason.hasPrefix(quiesceRace)
    }

    /// Installs ``panicThunk`` as libmicrohttpd's panic function, once per process.
    static func install() {
        _ = installed
    }

    private static let installed: Void = {
        MHD_set_panic_func(panicThunk, nil)
    }()
}
