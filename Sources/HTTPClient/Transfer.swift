internal import CCurl
import Foundation
import Support

/// One request in flight: its easy handle, its header list, the response being received, and the continuation
/// of the task awaiting it.
///
/// Ownership: owns one `EasyHandle` and one `HeaderList`. `releaseHandles()` frees them (easy handle first, since
/// it borrows the list) on the transfer-loop thread once the handle has left the multi handle; `deinit` does the
/// same for a transfer that never reached the loop.
/// Thread safety: `completion` holds the continuation, the pending result and whether the transfer finished;
/// `finish` resumes the continuation exactly once, from whichever thread gets there first (the loop, a cancellation
/// handler, or shutdown). The response buffers are written only by the thunks and read by `complete(with:)`, all on
/// the transfer-loop thread. Everything else is set in `init`, before the transfer is shared.
/// Sendable: the response buffers are libcurl's callbacks' (the transfer-loop thread's alone), and the easy handle
/// and header lists are C pointers used on that thread; the compiler sees neither.
final class Transfer: @unchecked Sendable {
    let easy: EasyHandle
    private let headerList: HeaderList
    /// `CURLOPT_RESOLVE` entries (``ClientRequest/pinnedAddresses``); borrowed by libcurl like the headers.
    private let resolveList: HeaderList
    /// scheme://host:port/path of the request, for error messages.
    let target: String
    private let maxResponseBytes: Int
    private let isHead: Bool
    private let followsRedirects: Bool

    // Transfer-loop thread only.
    private var responseHeaders: [(String, String)] = []
    private var currentStatus = 0
    private var body: [UInt8] = []
    private var abortReason: ClientError.Code?

    /// How the transfer ends, shared by whoever finishes it and the awaiting task.
    private struct Completion {
        var continuation: CheckedContinuation<ClientResponse, any Error>?
        /// The result, when it came before the continuation.
        var pendingResult: Result<ClientResponse, ClientError>?
        var finished = false
    }

    private let completion = Locked(Completion())

    /// Validates `request` and prepares its easy handle. Makes no connection.
    /// - Throws: `ClientError.invalidURL`, `.disallowedScheme`, `.invalidRequest`, or `.transport` when libcurl
    ///   refuses an option.
    init(request: ClientRequest, configuration: Client.Configuration) throws {
        let parsed = try ParsedURL(request.url)
        let allowed = Set(configuration.allowedSchemes.map { $0.lowercased() })
        guard let scheme = parsed.scheme, allowed.contains(scheme) else {
            throw ClientError(.disallowedScheme, target: parsed.redacted, detail: "scheme not allowed")
        }
        guard Transfer.isToken(request.method) else {
            throw ClientError(.invalidRequest, target: parsed.redacted, detail: "malformed method")
        }
        target = parsed.redacted
        headerList = try HeaderList(lines: try Transfer.headerLines(request.headers, target: parsed.redacted))
        resolveList = try HeaderList(lines: request.pinnedAddresses)
        easy = try EasyHandle()
        maxResponseBytes = max(0, request.maxResponseBytes ?? configuration.maxResponseBytes)
        isHead = request.method == "HEAD"
        followsRedirects = configuration.followRedirects
        // Fully initialized from here: a throw below runs deinit, which frees both handles.
        try configure(request: request, configuration: configuration, protocols: allowed.sorted())
    }

    deinit {
        releaseHandles()
    }

    private func configure(request: ClientRequest, configuration: Client.Configuration, protocols: [String]) throws {
        try easy.set(CURLOPT_URL, string: request.url)
        try easy.set(CURLOPT_NOSIGNAL, true)
        if request.freshConnection {
            try easy.set(CURLOPT_FRESH_CONNECT, true)
            try easy.set(CURLOPT_FORBID_REUSE, true)
        }
        try easy.set(CURLOPT_PROTOCOLS_STR, string: protocols.joined(separator: ","))
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, string: protocols.joined(separator: ","))
        try easy.set(CURLOPT_FOLLOWLOCATION, configuration.followRedirects)
        try easy.set(CURLOPT_MAXREDIRS, configuration.maxRedirects)
        try easy.set(CURLOPT_TIMEOUT_MS, (request.timeout ?? configuration.timeout).curlMilliseconds)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds)
        if !configuration.userAgent.isEmpty {
            try easy.set(CURLOPT_USERAGENT, string: configuration.userAgent)
        }
        try easy.set(headers: headerList)
        if resolveList.pointer != nil {
            try easy.set(resolve: resolveList)
        }
        if isHead {
            try easy.set(CURLOPT_NOBODY, true)
        } else if request.body != nil || request.method == "POST" {
            try easy.setBody(request.body ?? [])
            if request.method != "POST" {
                try easy.set(CURLOPT_CUSTOMREQUEST, string: request.method)
            }
        } else if request.method == "GET" {
            try easy.set(CURLOPT_HTTPGET, true)
        } else {
            try easy.set(CURLOPT_CUSTOMREQUEST, string: request.method)
        }
        try easy.setCallbacks(write: writeThunk, header: headerThunk)
        // Unretained: this transfer owns the easy handle, so the handle (and its callbacks) cannot outlive it.
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
    }

    /// Frees the easy handle, then the header list it borrowed. Idempotent.
    func releaseHandles() {
        easy.close()
        headerList.close()
        resolveList.close()
    }

    // MARK: Completion (any thread)

    /// Stores the continuation; returns `false` (after resuming it) when the transfer already finished, for example
    /// because the task was cancelled before it got here.
    func install(_ continuation: CheckedContinuation<ClientResponse, any Error>) -> Bool {
        let pending = completion.withLock { completion -> Result<ClientResponse, ClientError>? in
            if let pendingResult = completion.pendingResult { return pendingResult }
            completion.continuation = continuation
            return nil
        }
        guard let pending else { return true }
        continuation.resume(with: pending)
        return false
    }

    /// Delivers `result` to the awaiting task; only the first call has an effect.
    func finish(_ result: Result<ClientResponse, ClientError>) {
        // The continuation to resume, outside the lock; nil when there is none yet or this is not the first call.
        let continuation = completion.withLock { completion -> CheckedContinuation<ClientResponse, any Error>? in
            guard !completion.finished else { return nil }
            completion.finished = true
            let continuation = completion.continuation
            completion.continuation = nil
            if continuation == nil {
                completion.pendingResult = result
            }
            return continuation
        }
        continuation?.resume(with: result)
    }

    /// Fails the transfer with `code`.
    func fail(_ code: ClientError.Code, detail: String? = nil) {
        finish(.failure(ClientError(code, target: target, detail: detail)))
    }

    var isFinished: Bool {
        completion.withLock { $0.finished }
    }

    // MARK: Transfer-loop thread

    /// Turns libcurl's result for this transfer into a response or an error. Call after the handle left the multi.
    func complete(with code: CURLcode) {
        guard code == CURLE_OK else {
            finish(.failure(error(for: code)))
            return
        }
        let response = ClientResponse(
            status: easy.info(CURLINFO_RESPONSE_CODE) ?? currentStatus,
            headers: responseHeaders,
            body: body,
            effectiveURL: easy.info(string: CURLINFO_EFFECTIVE_URL)
        )
        finish(.success(response))
    }

    /// Called by `writeThunk`; `false` aborts the transfer.
    func receiveBody(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard body.count + chunk.count <= maxResponseBytes else {
            abortReason = .responseTooLarge
            return false
        }
        body.append(contentsOf: chunk)
        return true
    }

    /// Called by `headerThunk` with one raw header line; `false` aborts the transfer.
    func receiveHeaderLine(_ raw: UnsafeRawBufferPointer) -> Bool {
        var end = raw.count
        while end > 0, raw[end - 1] == UInt8(ascii: "\r") || raw[end - 1] == UInt8(ascii: "\n") {
            end -= 1
        }
        let line = Substring(String(decoding: raw[0..<end], as: UTF8.self))
        if line.hasPrefix("HTTP/") {
            // A new response (after a 1xx or a followed redirect): keep only the final one's headers.
            responseHeaders.removeAll()
            currentStatus = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return true
        }
        guard let first = line.first else {
            return true
        }
        if first == " " || first == "\t" {
            if let index = responseHeaders.indices.last {
                responseHeaders[index].1 += " " + Transfer.trimmed(line)
            }
            return true
        }
        guard let colon = line.firstIndex(of: ":") else {
            return true
        }
        let name = Transfer.trimmed(line[..<colon]).lowercased()
        let value = Transfer.trimmed(line[line.index(after: colon)...])
        responseHeaders.append((name, value))
        if name == "content-length", hasBody, let declared = Int(value), declared > maxResponseBytes {
            abortReason = .responseTooLarge
            return false
        }
        return true
    }

    /// Whether the response being received has a body that will reach `receiveBody` (RFC 9110 §6.4.1; libcurl
    /// discards the bodies of redirects it follows).
    private var hasBody: Bool {
        let followedRedirect = followsRedirects && (300..<400).contains(currentStatus) && currentStatus != 304
        return !isHead && !followedRedirect && currentStatus >= 200 && currentStatus != 204 && currentStatus != 304
    }

    private func error(for code: CURLcode) -> ClientError {
        var detail = "\(CurlGlobal.message(for: code)) (CURLcode \(code.rawValue))"
        if let text = easy.errorText {
            detail += ": \(text)"
        }
        if let abortReason {
            return ClientError(abortReason, target: target, detail: "response body over \(maxResponseBytes) bytes")
        }
        let mapped: ClientError.Code
        switch code {
        case CURLE_OPERATION_TIMEDOUT: mapped = .timeout
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: mapped = .connectFailed
        case CURLE_URL_MALFORMAT: mapped = .invalidURL
        case CURLE_UNSUPPORTED_PROTOCOL: mapped = .disallowedScheme
        case CURLE_FILESIZE_EXCEEDED: mapped = .responseTooLarge
        default: mapped = .transport
        }
        return ClientError(mapped, target: target, detail: detail)
    }
}
