internal import CCurl
internal import CCurlShims

/// Owns the libcurl multi handle (`CURLM *`) that drives every transfer of one `Client`.
///
/// Ownership: `init` calls `curl_multi_init`; `close()` (idempotent) or `deinit` calls `curl_multi_cleanup`.
/// Every easy handle must have been removed before `close()`; `TransferLoop` does that on its way out.
/// Thread safety: only the transfer-loop thread calls into it, except `wakeup()`, which libcurl allows from any
/// thread; `TransferLoop` calls it only under its lock while the loop is running, so never after `close()`.
final class MultiHandle {
    private(set) var pointer: UnsafeMutableRawPointer?

    init() throws {
        try CurlGlobal.ensureInitialized()
        guard let pointer = curl_multi_init() else {
            throw ClientError(.transport, detail: "curl_multi_init returned NULL")
        }
        self.pointer = pointer
    }

    deinit {
        close()
    }

    /// Frees the handle; later calls do nothing.
    func close() {
        if let pointer {
            curl_multi_cleanup(pointer)
            self.pointer = nil
        }
    }

    func set(_ option: CURLMoption, _ value: Int) throws {
        guard let pointer else { return }
        let code = fbs_curl_multi_setopt_long(pointer, option, value)
        guard code == CURLM_OK else {
            throw ClientError(.transport, detail: "curl_multi_setopt: \(MultiHandle.message(for: code))")
        }
    }

    func add(_ easy: EasyHandle) -> CURLMcode {
        guard let pointer, let handle = easy.pointer else { return CURLM_BAD_HANDLE }
        return curl_multi_add_handle(pointer, handle)
    }

    func remove(_ easy: EasyHandle) {
        guard let pointer, let handle = easy.pointer else { return }
        _ = curl_multi_remove_handle(pointer, handle)
    }

    /// Runs whatever work is due; returns libcurl's status.
    func perform() -> CURLMcode {
        guard let pointer else { return CURLM_BAD_HANDLE }
        var running: Int32 = 0
        return curl_multi_perform(pointer, &running)
    }

    /// The next finished transfer: its easy handle pointer and result, or `nil` when there is none.
    func nextDone() -> (easy: UnsafeMutableRawPointer, result: CURLcode)? {
        guard let pointer else { return nil }
        var easy: UnsafeMutableRawPointer?
        var result = CURLE_OK
        guard fbs_curl_multi_next_done(pointer, &easy, &result) == 1, let easy else {
            return nil
        }
        return (easy, result)
    }

    /// Waits for socket activity, a libcurl timer, `wakeup()`, or `timeoutMilliseconds`.
    func poll(timeoutMilliseconds: Int32) {
        guard let pointer else { return }
        var descriptors: Int32 = 0
        _ = curl_multi_poll(pointer, nil, 0, timeoutMilliseconds, &descriptors)
    }

    /// Interrupts a `poll` from any thread.
    func wakeup() {
        guard let pointer else { return }
        _ = curl_multi_wakeup(pointer)
    }

    static func message(for code: CURLMcode) -> String {
        String(cString: curl_multi_strerror(code))
    }
}
