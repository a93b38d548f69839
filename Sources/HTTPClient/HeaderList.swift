internal import CCurl

/// Owns one `struct curl_slist` of request header lines.
///
/// Ownership: built by `init` with `curl_slist_append`; `close()` (idempotent) or `deinit` frees it with
/// `curl_slist_free_all`. libcurl only borrows the list (`CURLOPT_HTTPHEADER`), so it must outlive the transfer:
/// the owning `Transfer` closes it after the easy handle.
/// Thread safety: none; follows its `Transfer`.
final class HeaderList {
    private(set) var pointer: UnsafeMutablePointer<curl_slist>?

    /// Copies each line into a new list.
    /// - Throws: `ClientError.transport` when libcurl cannot allocate.
    init(lines: [String]) throws {
        for line in lines {
            guard let appended = curl_slist_append(pointer, line) else {
                close()
                throw ClientError(.transport, detail: "curl_slist_append returned NULL")
            }
            pointer = appended
        }
    }

    deinit {
        close()
    }

    /// Frees the list; later calls do nothing.
    func close() {
        if let pointer {
            curl_slist_free_all(pointer)
            self.pointer = nil
        }
    }
}
