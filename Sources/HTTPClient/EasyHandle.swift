internal import CCurl
internal import CCurlShims

/// Owns one libcurl easy handle (`CURL *`) and the error buffer registered with it.
///
/// Ownership: `init` calls `curl_easy_init`; `close()` (idempotent) or `deinit` calls `curl_easy_cleanup` and
/// then frees the error buffer. The handle must be out of any multi handle before it is closed; `TransferLoop`
/// removes it first.
/// Thread safety: none. One transfer, one thread at a time: it is configured on the caller's thread, then
/// touched only by the transfer-loop thread while it is in the multi handle, and closed there.
final class EasyHandle {
    private(set) var pointer: UnsafeMutableRawPointer?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init() throws {
        try CurlGlobal.ensureInitialized()
        guard let pointer = curl_easy_init() else {
            throw ClientError(.transport, detail: "curl_easy_init returned NULL")
        }
        self.pointer = pointer
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        _ = fbs_curl_easy_setopt_pointer(pointer, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    deinit {
        close()
        errorBuffer.deallocate()
    }

    /// Frees the handle; later calls do nothing.
    func close() {
        if let pointer {
            curl_easy_cleanup(pointer)
            self.pointer = nil
        }
    }

    /// libcurl's detailed message for the last failure (the error buffer), or `nil` when empty.
    var errorText: String? {
        let text = String(cString: errorBuffer)
        return text.isEmpty ? nil : text
    }

    func set(_ option: CURLoption, _ value: Int) throws {
        try check(fbs_curl_easy_setopt_long(try live(), option, value), option)
    }

    func set(_ option: CURLoption, _ value: Bool) throws {
        try set(option, value ? 1 : 0)
    }

    func set(_ option: CURLoption, string value: String) throws {
        let handle = try live()
        try check(value.withCString { fbs_curl_easy_setopt_string(handle, option, $0) }, option)
    }

    func set(_ option: CURLoption, offset value: Int64) throws {
        try check(fbs_curl_easy_setopt_off_t(try live(), option, curl_off_t(value)), option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws {
        try check(fbs_curl_easy_setopt_pointer(try live(), option, value), option)
    }

    func set(headers list: HeaderList) throws {
        try check(fbs_curl_easy_setopt_slist(try live(), CURLOPT_HTTPHEADER, list.pointer), CURLOPT_HTTPHEADER)
    }

    func set(resolve list: HeaderList) throws {
        try check(fbs_curl_easy_setopt_slist(try live(), CURLOPT_RESOLVE, list.pointer), CURLOPT_RESOLVE)
    }

    func setBody(_ body: [UInt8]) throws {
        let handle = try live()
        let code = body.withUnsafeBytes { fbs_curl_easy_setopt_copypostfields(handle, $0.baseAddress, $0.count) }
        try check(code, CURLOPT_COPYPOSTFIELDS)
    }

    func setCallbacks(write: fbs_curl_data_callback, header: fbs_curl_data_callback) throws {
        let handle = try live()
        try check(fbs_curl_easy_setopt_write_callback(handle, write), CURLOPT_WRITEFUNCTION)
        try check(fbs_curl_easy_setopt_header_callback(handle, header), CURLOPT_HEADERFUNCTION)
    }

    /// A `long` info value, or `nil` when libcurl has none.
    func info(_ info: CURLINFO) -> Int? {
        guard let pointer else { return nil }
        var value = 0
        return fbs_curl_easy_getinfo_long(pointer, info, &value) == CURLE_OK ? value : nil
    }

    /// A string info value copied into Swift, or `nil` when libcurl has none.
    func info(string info: CURLINFO) -> String? {
        guard let pointer else { return nil }
        var value: UnsafePointer<CChar>?
        guard fbs_curl_easy_getinfo_string(pointer, info, &value) == CURLE_OK, let value else {
            return nil
        }
        return String(cString: value)
    }

    private func live() throws -> UnsafeMutableRawPointer {
        guard let pointer else {
            throw ClientError(.transport, detail: "easy handle used after close")
        }
        return pointer
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws {
        guard code == CURLE_OK else {
            throw ClientError(
                .transport,
                detail: "curl_easy_setopt(\(option.rawValue)): \(CurlGlobal.message(for: code))"
            )
        }
    }
}
