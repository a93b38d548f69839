import Foundation

/// Settings of a ``Server``. Every field has a documented default.
public struct ServerConfiguration: Sendable {
    /// The address to listen on: an IPv4 address, `localhost`, or a bracketed IPv6 address. Default `127.0.0.1`.
    public var host: String = "127.0.0.1"
    /// The port; 0 picks a free one (read it back from ``Server/port``). Default 8080.
    public var port: Int = 8080
    /// Largest request body accepted; more gives 413. Default 1 MiB.
    public var maxBodyBytes: Int = 1 << 20
    /// Largest request head (request line and header fields) answered normally; more gives 431 in the
    /// contract's error shape. Default 16 KiB, in up to ``maxHeaderFields`` fields. Heads that do not fit in
    /// ``connectionMemoryLimit`` get libmicrohttpd's own 431.
    public var maxHeaderBytes: Int = 16 << 10
    /// Memory libmicrohttpd may use per connection for the head, its parsed fields (64 bytes each) and the
    /// response head. Default 24 KiB: a head of ``maxHeaderBytes`` in ``maxHeaderFields`` fields fits, and a
    /// head a little over ``maxHeaderBytes`` still gets the contract's 431 (`ServerTests` checks both). Each open
    /// connection costs about this much resident memory, since libmicrohttpd clears the whole pool between
    /// requests; libmicrohttpd's own default, 32 KiB, made 2,000 idle keep-alive connections cost 62 MiB.
    public var connectionMemoryLimit: Int = 24 << 10
    /// The number of header fields a head of ``maxHeaderBytes`` may have and still fit the default
    /// ``connectionMemoryLimit`` (documentation and tests; the server does not count fields itself).
    public static let maxHeaderFields = 100
    /// Most connections open at once; more are refused at accept. Default 4096.
    public var connectionLimit: Int = 4096
    /// Seconds a connection may stay idle (keep-alive, or a slow client sending nothing) before it is closed.
    /// Default 30.
    public var connectionTimeout: Int = 30
    /// Seconds a suspended request may wait for its handler before the server answers 503 itself. Default 60.
    public var handlerTimeout: Double = 60
    /// Event loops: threads polling sockets, each with a libmicrohttpd daemon of its own. Default: the number of
    /// processors.
    public var threads: Int = 0
    /// The listen backlog. Default 1024.
    public var backlog: Int = 1024
    /// Stack size of the event loops' threads in bytes; 0 (the default) leaves the system's. Tests use a size no
    /// thread can get, to make a start fail.
    public var threadStackSize: Int = 0

    /// Where the server reports a problem that belongs to no request: an event loop late to stop accepting at
    /// shutdown, or a listening socket closed by something else in the process. Default: a line on standard error.
    public var reportProblem: @Sendable (String) -> Void = { problem in
        FileHandle.standardError.write(Data("HTTPServer: \(problem)\n".utf8))
    }

    /// Creates a configuration with the defaults.
    public init() {}
}
