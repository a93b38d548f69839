internal import CMicroHTTPD

/// libmicrohttpd's fatal-error hook: print where, then abort.
///
/// No panic may return. libmicrohttpd marks every panic call as unreachable after it (`__builtin_unreachable()`),
/// and in Debian's build the code after such a call is simply the next function: the call that panics when
/// `MHD_quiesce_daemon` cannot take the listening socket out of a worker's `epoll` set is the last instruction
/// before `MHD_stop_daemon`, so a handler that returned ran `MHD_stop_daemon` on whatever pointer happened to be in
/// a register (docs/hostile-input.md, bugs 7 and 10). An earlier version let that one panic return, taking it for
/// a harmless race; a test that made the single daemon's branch of it fail crashed with a segmentation fault.
enum LibraryPanic {
    /// Installs ``panicThunk`` as libmicrohttpd's panic function, once per process.
    static func install() {
        _ = installed
    }

    private static let installed: Void = {
        MHD_set_panic_func(panicThunk, nil)
    }()
}
