internal import CCurl
internal import CCurlShims

/// The process-wide `curl_global_init`, run exactly once before the first handle is made.
///
/// `curl_global_init` is not thread-safe and must precede every other libcurl call. A `static let` is initialized
/// lazily under `swift_once`, so the first `Client` or transfer to ask runs it and every other caller waits for
/// it. `curl_global_cleanup` is never called: the library stays initialized until the process exits.
enum CurlGlobal {
    private static let initResult: CURLcode = fbs_curl_global_init_all()

    /// Runs `curl_global_init` if no one has yet.
    /// - Throws: `ClientError.transport` when libcurl could not initialize (out of memory, TLS backend failure).
    static func ensureInitialized() throws {
        let code = initResult
        guard code == CURLE_OK else {
            throw ClientError(.transport, detail: "curl_global_init: \(CurlGlobal.message(for: code))")
        }
    }

    /// `curl_easy_strerror` text for `code`.
    static func message(for code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }
}
