import FBSessionsCore
import Foundation
import HTTPServer
import Support

/// A session's profile picture through the service: bytes (with `ETag`, `Cache-Control`, `Age`, 304 on
/// `If-None-Match`, `Warning` when served stale) or Graph's description as JSON, at `.../picture/description` or
/// (as Graph's own parameter does) with `redirect=false` on the bytes path. The description has a path of its own
/// so that each operation has one answer type, which is what generated clients can decode.
enum PictureRoutes {
    /// Largest `width` or `height` accepted.
    static let maxEdge = 2048

    static func routes(_ services: Services) -> [Route] {
        let pictures = services.pictures
        // A picture is answered from the cache only when its session is held there.
        let cacheHint: @Sendable (RouteContext) -> CacheHint? = { context in
            context.parameters["id"].map(services.sessions.cacheHint) ?? .unknown
        }
        return [
            /// - Remark: HTTP GET /v1/sessions/{id}/picture (openapi.yaml operationId getSessionPicture)
            Route("GET", "/v1/sessions/{id}/picture", operationID: "getSessionPicture", scope: .sessions, cached: { context, pass, hint in
                guard let pictures else { return nil }
                let app = try context.app()
                let id = try Validation.pathSessionID(context)
                let size = try size(context)
                let redirect = try redirect(context)
                let ifNoneMatch = redirect ? context.request.headers["If-None-Match"] : nil
                return try pictures.cachedReply(
                    sessionID: id, app: app, size: size, ifNoneMatch: ifNoneMatch, needsBytes: redirect, pass: pass,
                    hint: hint
                ).map { redirect ? picture($0) : try description($0) }
            }, cacheHint: cacheHint, body: .waiting { context in
                let app = try context.app()
                let id = try Validation.pathSessionID(context)
                let size = try size(context)
                let redirect = try redirect(context)
                guard let pictures else { throw unconfigured() }
                if !redirect {
                    return try description(await pictures.description(sessionID: id, app: app, size: size))
                }
                return picture(
                    try await pictures.picture(
                        sessionID: id, app: app, size: size, ifNoneMatch: context.request.headers["If-None-Match"]))
            }),
            /// - Remark: HTTP GET /v1/sessions/{id}/picture/description (openapi.yaml operationId getSessionPictureDescription)
            Route(
                "GET", "/v1/sessions/{id}/picture/description", operationID: "getSessionPictureDescription",
                scope: .sessions,
                cached: { context, pass, hint in
                    guard let pictures else { return nil }
                    let app = try context.app()
                    let id = try Validation.pathSessionID(context)
                    return try pictures.cachedReply(
                        sessionID: id, app: app, size: try size(context), ifNoneMatch: nil, needsBytes: false, pass: pass,
                        hint: hint
                    ).map(description)
                },
                cacheHint: cacheHint,
                body: .waiting { context in
                    let app = try context.app()
                    let id = try Validation.pathSessionID(context)
                    let size = try size(context)
                    guard let pictures else { throw unconfigured() }
                    return try description(await pictures.description(sessionID: id, app: app, size: size))
                }),
        ]
    }

    /// The bytes with their cache headers, or a 304 with the headers alone.
    static func picture(_ reply: PictureReply) -> Response {
        guard reply.outcome == .notModified, !reply.isStale, let entry = reply.entry else { return render(reply) }
        return renderedNotModified.value.response(for: reply, from: entry)
    }

    /// The last 304 a thread rendered from an entry of the exact cache: a client that revalidates its copy gets the
    /// same headers until its `Age` moves, a second later. Such a 304 is made of its entry's picture (`ETag`,
    /// `Cache-Control`) and its age alone. Only its own thread reads or writes it.
    final class RenderedNotModified {
        private var entry: HeldPicture?
        private var age = -1
        private var response = Response(status: 304)

        func response(for reply: PictureReply, from entry: HeldPicture) -> Response {
            let age = reply.age
            if entry === self.entry, age == self.age { return response }
            response = render(reply)
            self.entry = entry
            self.age = age
            return response
        }
    }

    private static let renderedNotModified = PerThread { RenderedNotModified() }

    private static func render(_ reply: PictureReply) -> Response {
        var headers = cacheHeaders(reply)
        headers.add("ETag", reply.picture.etag)
        guard reply.outcome != .notModified, let body = reply.picture.body else {
            return Response(status: 304, headers: headers)
        }
        headers.add("Content-Type", reply.picture.type.rawValue)
        headers.add("X-Content-Type-Options", "nosniff")
        headers.add("Content-Security-Policy", "default-src 'none'; sandbox")
        return Response(status: 200, headers: headers, body: body)
    }

    /// 503 `picture_unavailable` for a server built without pictures (route tests).
    static func unconfigured() -> APIError {
        var error = APIError(503, .pictureUnavailable, "Pictures are not set up on this server.")
        error.headers.add("Retry-After", "60")
        return error
    }

    /// Graph's description of the picture as JSON, with the cache headers of the entry it comes from.
    static func description(_ reply: PictureReply) throws -> Response {
        try JSONResponse.make(200, DescriptionDTO(reply.picture), headers: cacheHeaders(reply))
    }

    private static let edgeNames = ["width", "height"]

    /// `type`, `width` and `height`, checked: a known type, whole numbers 1 to ``maxEdge``.
    static func size(_ context: RouteContext) throws -> GraphPictureSize {
        var size = GraphPictureSize()
        if let type = context.query("type") {
            guard let kind = GraphPictureSize.Kind(rawValue: type) else {
                throw APIError.invalid("type must be square, small, normal, large or album.", field: "type")
            }
            size.kind = kind
        }
        for name in edgeNames {
            guard let text = context.query(name) else { continue }
            guard (1...4).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Int(text), (1...maxEdge).contains(value)
            else {
                throw APIError.invalid("\(name) must be a whole number from 1 to \(maxEdge).", field: name)
            }
            if name == "width" { size.width = value } else { size.height = value }
        }
        return size
    }

    /// `redirect`: absent, `true` or `1` sends the bytes; `false` or `0` the JSON description.
    static func redirect(_ context: RouteContext) throws -> Bool {
        switch context.query("redirect") {
        case nil, "true", "1": return true
        case "false", "0": return false
        default: throw APIError.invalid("redirect must be true or false.", field: "redirect")
        }
    }

    /// `Cache-Control: private, max-age=<lifetime>` with `Age` (time since the fetch), and `Warning` when stale.
    /// The list has room for every field ``picture(_:)`` adds after these.
    static func cacheHeaders(_ reply: PictureReply) -> HTTPHeaders {
        var headers = HTTPHeaders(capacity: 7)
        headers.add("Cache-Control", "private, max-age=" + String(reply.maxAge))
        headers.add("Age", String(reply.age))
        if reply.isStale { headers.add("Warning", #"110 fbsessiond "Response is Stale""#) }
        return headers
    }

    /// `{url, width, height, is_silhouette}`, as Graph's `redirect=false` describes a picture.
    struct DescriptionDTO: Encodable {
        let url: String
        let width: Int?
        let height: Int?
        let isSilhouette: Bool

        init(_ picture: CachedPicture) {
            url = picture.url
            width = picture.width
            height = picture.height
            isSilhouette = picture.isSilhouette
        }

        enum CodingKeys: String, CodingKey {
            case url, width, height
            case isSilhouette = "is_silhouette"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(url, forKey: .url)
            try container.encode(width, forKey: .width)
            try container.encode(height, forKey: .height)
            try container.encode(isSilhouette, forKey: .isSilhouette)
        }
    }
}
