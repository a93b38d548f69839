import Foundation

/// Registered with `atexit` by ``StandardErrorBuffer``; glibc calls it on the thread that calls `exit`, after
/// `main` returns or `exit` is called. Unwraps nothing: it writes the process's buffered log lines.
func flushLogAtExitThunk() {
    StandardErrorBuffer.shared.flush()
}
