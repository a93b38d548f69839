import FBSessionsCore
import HTTPServer

/// The parsing and the bodies the routes answer with, public so that the fast path answers the same operations
/// with the same bytes: an answer from memory and one from the database differ in nothing but their source.
public enum Answers {
    // MARK: Status and owner lists

    /// `validate` of `GET /v1/sessions/{id}`: `auto` (the default), `always` or `never`.
    /// - Throws: ``APIError`` 400 naming the field for any other value.
    public static func validateMode(_ query: [(name: String, value: String)]) throws -> SessionService.ValidateMode {
        let text = query.last { $0.name == "validate" }?.value ?? "auto"
        guard let mode = SessionService.ValidateMode(rawValue: text) else {
            throw APIError.invalid("validate must be auto, always or never.", field: "validate")
        }
        return mode
    }

    /// A session's status as JSON (docs/api-contract.md, "Session JSON").
    public static func statusBody(_ session: Session, validation: SessionService.Validation) -> [UInt8] {
        SessionDTO(session: session, validation: validation).jsonBytes
    }

    /// An owner's list as JSON: the sessions (validation `cached`) and the active one.
    public static func listBody(_ list: OwnerList) -> [UInt8] {
        OwnerRoutes.ListDTO(
            sessions: list.sessions.map { SessionDTO(session: $0, validation: .cached) }, activeSessionID: list.activeID
        ).jsonBytes
    }

    // MARK: Pictures

    /// What a picture request asks beside the session: the size, and whether it wants the bytes (`redirect`).
    public struct PictureQuery: Sendable, Equatable {
        /// `type`, `width` and `height`.
        public var size: GraphPictureSize
        /// True for the bytes, false for Graph's JSON description.
        public var wantsBytes: Bool
    }

    /// Largest `width` or `height` accepted.
    public static let maxPictureEdge = 2048

    /// `type`, `width`, `height` and (when `readsRedirect`) `redirect`, checked: a known type, whole numbers 1 to
    /// ``maxPictureEdge``; `redirect` absent, `true` or `1` for the bytes, `false` or `0` for the description.
    /// - Throws: ``APIError`` 400 naming the field.
    public static func pictureQuery(_ query: [(name: String, value: String)], readsRedirect: Bool) throws -> PictureQuery {
        func value(_ name: String) -> String? { query.last { $0.name == name }?.value }
        var size = GraphPictureSize()
        if let type = value("type") {
            guard let kind = GraphPictureSize.Kind(rawValue: type) else {
                throw APIError.invalid("type must be square, small, normal, large or album.", field: "type")
            }
            size.kind = kind
        }
        for name in ["width", "height"] {
            guard let text = value(name) else { continue }
            guard (1...4).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let number = Int(text), (1...maxPictureEdge).contains(number)
            else {
                throw APIError.invalid("\(name) must be a whole number from 1 to \(maxPictureEdge).", field: name)
            }
            if name == "width" { size.width = number } else { size.height = number }
        }
        guard readsRedirect else { return PictureQuery(size: size, wantsBytes: false) }
        switch value("redirect") {
        case nil, "true", "1": return PictureQuery(size: size, wantsBytes: true)
        case "false", "0": return PictureQuery(size: size, wantsBytes: false)
        default: throw APIError.invalid("redirect must be true or false.", field: "redirect")
        }
    }

    /// The bytes with their cache headers (`ETag`, `Cache-Control`, `Age`, `Warning` when stale), or a 304 with the
    /// headers alone.
    public static func picture(_ reply: PictureReply) -> Response {
        var headers = pictureCacheHeaders(reply)
        headers.add("ETag", reply.picture.etag)
        guard reply.outcome != .notModified, let body = reply.picture.body else {
            return Response(status: 304, headers: headers)
        }
        headers.add("Content-Type", reply.picture.type.rawValue)
        headers.add("X-Content-Type-Options", "nosniff")
        headers.add("Content-Security-Policy", "default-src 'none'; sandbox")
        return Response(status: 200, headers: headers, body: body)
    }

    /// Graph's description of the picture as JSON (`{url, width, height, is_silhouette}`), with the cache headers.
    public static func pictureDescription(_ reply: PictureReply) throws -> Response {
        try JSONResponse.make(200, PictureRoutes.DescriptionDTO(reply.picture), headers: pictureCacheHeaders(reply))
    }

    /// `Cache-Control: private, max-age=<lifetime>` with `Age` (time since the fetch), and `Warning` when stale.
    /// The list has room for every field ``picture(_:)`` adds after these.
    static func pictureCacheHeaders(_ reply: PictureReply) -> HTTPHeaders {
        var headers = HTTPHeaders(capacity: 7)
        headers.add("Cache-Control", "private, max-age=" + String(reply.maxAge))
        headers.add("Age", String(reply.age))
        if reply.isStale { headers.add("Warning", #"110 fbsessiond "Response is Stale""#) }
        return headers
    }
}
