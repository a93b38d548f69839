/// An error starting or running a ``Server``.
public struct ServerError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate let name: String
        /// The listen address could not be parsed.
        public static let invalidAddress = Code(name: "invalid address")
        /// The socket could not be bound (port in use, no permission).
        public static let bindFailed = Code(name: "bind failed")
        /// libmicrohttpd refused to start.
        public static let startFailed = Code(name: "start failed")
        /// The server was already started or stopped.
        public static let invalidState = Code(name: "invalid state")
        /// The name of the code.
        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// Detail safe to show: an address or an errno text, never request data.
    public let detail: String

    init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// A one-line description.
    public var description: String { "HTTP server \(code): \(detail)" }
}
