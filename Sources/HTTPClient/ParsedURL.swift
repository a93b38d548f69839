internal import CCurl

/// A URL parsed by libcurl's URL API (`CURLU *`), used to validate a request before any connection is made.
///
/// Ownership: `init` calls `curl_url()`; `deinit` calls `curl_url_cleanup`. The handle never leaves this class.
/// Thread safety: none; created, read and dropped by one call of `Transfer.init`.
final class ParsedURL {
    private let handle: OpaquePointer

    /// Parses `url` the way the transfer will.
    /// - Throws: `ClientError.invalidURL` when libcurl rejects it (the URL itself is not echoed).
    init(_ url: String) throws {
        try CurlGlobal.ensureInitialized()
        guard let handle = curl_url() else {
            throw ClientError(.transport, detail: "curl_url returned NULL")
        }
        self.handle = handle
        let code = curl_url_set(handle, CURLUPART_URL, url, UInt32(CURLU_NON_SUPPORT_SCHEME))
        guard code == CURLUE_OK else {
            throw ClientError(.invalidURL, detail: String(cString: curl_url_strerror(code)))
        }
    }

    deinit {
        curl_url_cleanup(handle)
    }

    /// The scheme, lowercased.
    var scheme: String? { part(CURLUPART_SCHEME)?.lowercased() }

    /// scheme://host[:port]/path, without user info, query or fragment: safe for error messages.
    var redacted: String {
        var text = "\(scheme ?? "?")://\(part(CURLUPART_HOST) ?? "?")"
        if let port = part(CURLUPART_PORT) {
            text += ":\(port)"
        }
        return text + (part(CURLUPART_PATH) ?? "")
    }

    private func part(_ which: CURLUPart) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, which, &value, 0) == CURLUE_OK, let value else {
            return nil
        }
        defer { curl_free(value) }
        return String(cString: value)
    }
}
