internal import CCrypto

/// OpenSSL's process-wide state is kept until the process is gone rather than freed at `exit`.
///
/// By default OpenSSL frees its state in an `atexit` handler (`OPENSSL_cleanup`). In a process whose other threads
/// still run at `exit` (Dispatch workers, libmicrohttpd's and the database pool's threads), that races with them:
/// a thread that uses OpenSSL after the handler touches freed locks and crashes the exit, and a thread that ends
/// after it never frees its per-thread random generator (LeakSanitizer reported that in CI: 2,464 bytes from a
/// `fbsessiond` stopped with SIGTERM). Without the handler, threads that end free their own state as usual, and
/// the kernel takes back the rest.
///
/// Thread safety: call once, first thing in `main`, before any other use of OpenSSL (libcurl's and libpq's
/// included): OpenSSL's first initialization decides, and later ones cannot change it.
public enum OpenSSLLifetime {
    /// Initializes OpenSSL without its `atexit` cleanup.
    /// - Returns: false if OpenSSL could not initialize (the first real use then reports its error).
    @discardableResult
    public static func keepUntilExit() -> Bool {
        OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
    }
}
