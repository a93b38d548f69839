internal import CMicroHTTPD
import Foundation

// Every C callback libmicrohttpd makes into the server. Each unwraps its context, calls one Swift method, and maps
// the result to the C return code. None is a closure, so none is isolated to an actor.

/// Called by libmicrohttpd on a polling thread as soon as a request line is read, with the raw URI (path and
/// query, still percent-encoded). Unwraps `cls` as the unretained ``ServerCore``. Returns the new ``Exchange``,
/// retained; libmicrohttpd stores it as the request's context.
func uriLogThunk(
    _ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls else { return nil }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let exchange = core.begin(rawURI: uri.map { String(cString: $0) } ?? "")
    return Unmanaged.passRetained(exchange).toOpaque()  // balanced by release() in requestCompletedThunk
}

/// The access handler: called by libmicrohttpd on a polling thread once the head is in, once per body chunk,
/// once when the body is complete, and again after the connection is resumed. Unwraps `cls` as the unretained
/// ``ServerCore`` and `*context` as the ``Exchange`` made by ``uriLogThunk``.
func accessHandlerThunk(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?, _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let uploadDataSize, let context, let stored = context.pointee else {
        return .NO
    }
    // Borrowed, not retained: libmicrohttpd holds both for the call (the core outlives the daemon, the exchange is
    // released only by `requestCompletedThunk`), and a retain and release of the core shared by every loop bounced
    // its reference count between the cores.
    let keep = Unmanaged<ServerCore>.fromOpaque(cls)._withUnsafeGuaranteedRef { core in
        Unmanaged<Exchange>.fromOpaque(stored)._withUnsafeGuaranteedRef { exchange in
            core.handle(exchange, connection: connection, method: method, upload: uploadData, uploadSize: uploadDataSize)
        }
    }
    return keep ? .YES : .NO
}

/// Called by libmicrohttpd on a polling thread when a request ends (sent, aborted, timed out or shut down).
/// Unwraps `cls` as the unretained ``ServerCore`` and releases the ``Exchange`` retained by ``uriLogThunk``.
func requestCompletedThunk(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ termination: MHD_RequestTerminationCode
) {
    guard let cls, let context, let stored = context.pointee else { return }
    context.pointee = nil
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let exchange = Unmanaged<Exchange>.fromOpaque(stored)
    core.end(exchange.takeUnretainedValue(), termination: termination)
    exchange.release()  // balances passRetained in uriLogThunk
}

/// Called by `MHD_get_connection_values` on the calling thread, once per header field. Unwraps `cls` as a
/// pointer to the ``HeaderCollector`` on the caller's stack frame.
func headerIteratorThunk(
    _ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?,
    _ value: UnsafePointer<CChar>?
) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let collector = cls.assumingMemoryBound(to: HeaderCollector.self)
    let name = String(cString: key)
    let text = value.map { String(cString: $0) } ?? ""
    collector.pointee.bytes += name.utf8.count + text.utf8.count + 4
    collector.pointee.headers.add(name, text)
    return .YES
}

/// libmicrohttpd's panic handler, installed once by ``Server`` (``LibraryPanic``): prints the place and aborts; it
/// must never return. Unwraps nothing.
func panicThunk(
    _ cls: UnsafeMutableRawPointer?, _ file: UnsafePointer<CChar>?, _ line: UInt32, _ reason: UnsafePointer<CChar>?
) {
    let text = reason.map { String(cString: $0) }
    let place = file.map { String(cString: $0) } ?? "?"
    FileHandle.standardError.write(Data("libmicrohttpd panic at \(place):\(line): \(text ?? "no detail")\n".utf8))
    abort()
}

/// Called by libmicrohttpd when it destroys a response made over a borrowed body. Unwraps `cls` as the
/// ``BodyOwner`` retained in ``ServerCore`` and releases it.
func releaseBodyThunk(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    Unmanaged<BodyOwner>.fromOpaque(cls).release()
}

/// The start routine of an event loop's thread (``EventLoop/start(stackSize:)``): takes over the loop retained for
/// it, runs it, and releases it when the loop ends.
func eventLoopThreadThunk(_ context: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let context else { return nil }
    Unmanaged<EventLoop>.fromOpaque(context).takeRetainedValue().run()
    return nil
}
