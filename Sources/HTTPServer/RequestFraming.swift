import Foundation

/// Request framing that libmicrohttpd 0.9.75 accepts but RFC 9112 forbids, and that lets a front proxy and this
/// server disagree about where a request ends (request smuggling). `tools/abuse/run` found each of these served
/// a second, smuggled request on the same connection:
///
/// - `Content-Length` together with `Transfer-Encoding` (libmicrohttpd follows the chunked body and keeps the
///   connection; a proxy that follows the length forwards the rest as a new request). RFC 9112 §6.1: reject, or
///   close after answering. Here: 400 and close.
/// - More than one `Content-Length` field (libmicrohttpd takes the first). RFC 9112 §6.3: an unrecoverable error.
/// - A field name that is not an RFC 9110 token, such as `Transfer-Encoding ` with whitespace before the colon
///   (libmicrohttpd keeps it as another header, so the request is framed by its `Content-Length` while a lenient
///   proxy sees it chunked). RFC 9112 §5.1: MUST reject with 400.
/// - A `Transfer-Encoding` other than exactly `chunked`, which libmicrohttpd otherwise waits on until the
///   connection timeout. RFC 9112 §6.1 suggests 501; this is 400 `invalid_request`, so that the API's closed
///   list of error codes stays as it is.
///
/// Each is refused before the body is read, with `Connection: close`, so nothing after it on the connection is
/// ever read as a request.
enum RequestFraming {
    /// The status and message for a request framed ambiguously, or nil when its framing is unambiguous.
    static func problem(_ headers: HTTPHeaders) -> (status: Int, message: String)? {
        for field in headers where !isToken(field.name) {
            return (400, "A header field name is not a token (no whitespace before the colon).")
        }
        let lengths = headers.values(for: "Content-Length")
        let encodings = headers.values(for: "Transfer-Encoding")
        if lengths.count > 1 {
            return (400, "Send one Content-Length.")
        }
        if !encodings.isEmpty {
            if !lengths.isEmpty {
                return (400, "Send Content-Length or Transfer-Encoding, not both.")
            }
            let joined = encodings.joined(separator: ",").split(separator: ",").map {
                $0.trimmingCharacters(in: [" ", "\t"]).lowercased()
            }
            if joined != ["chunked"] {
                return (400, "The only transfer coding accepted is chunked.")
            }
        }
        return nil
    }

    /// RFC 9110 `token`: one or more of `!#$%&'*+-.^_`|~`, digits and letters.
    static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    return true
                default:
                    return "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }
}
