// The C callbacks libcurl calls. Each one unwraps its context, calls one `Transfer` method and maps the result to
// the return value libcurl expects. They are free functions (not closures) so that no actor isolation is
// inferred for them (docs/conventions.md, "C callbacks").

/// Receives a chunk of the response body.
///
/// - C caller: libcurl's `CURLOPT_WRITEFUNCTION`, from inside `curl_multi_perform`.
/// - Thread: the client's transfer-loop thread, the only thread that drives the multi handle.
/// - Unwraps: `context` is the `Transfer` set as `CURLOPT_WRITEDATA` with `Unmanaged.passUnretained`; the
///   transfer owns the easy handle, and `TransferLoop.active` holds the transfer for as long as the handle is in
///   the multi handle, so it is alive for every call.
/// - Returns: `size * count` to go on, or 0 to abort the transfer (`CURLE_WRITE_ERROR`) when the body passes
///   `maxResponseBytes`.
func writeThunk(
    _ data: UnsafeMutablePointer<CChar>?,
    _ size: Int,
    _ count: Int,
    _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let accepted = transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : length))
    return accepted ? length : 0
}

/// Receives one response header line (the status line, each header, and the blank line that ends a block).
///
/// - C caller: libcurl's `CURLOPT_HEADERFUNCTION`, from inside `curl_multi_perform`.
/// - Thread: the client's transfer-loop thread.
/// - Unwraps: `context` is the `Transfer` set as `CURLOPT_HEADERDATA` with `Unmanaged.passUnretained`; alive for
///   the same reason as in `writeThunk`.
/// - Returns: `size * count` to go on, or 0 to abort (`CURLE_WRITE_ERROR`) when `Content-Length` announces more
///   than `maxResponseBytes`.
func headerThunk(
    _ data: UnsafeMutablePointer<CChar>?,
    _ size: Int,
    _ count: Int,
    _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let accepted = transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : length))
    return accepted ? length : 0
}
