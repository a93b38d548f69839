import FBSessionsCore
import Foundation
import HTTPServer
import Support

/// A session's profile picture through the service: bytes (with `ETag`, `Cache-Control`, `Age`, 304 on
/// `If-None-Match`, `Warning` when served stale) or Graph's description as JSON, at `.../picture/description` or
/// (as Graph's own parameter does) with `redirect=false` on the bytes path. The description has a path of its own
/// so that each operation has one answer type, which is what generated clients can decode.
enum PictureRoutes {
    static func routes(_ services: Services) -> [Route] {
        let pictures = services.pictures
        return [
            /// - Remark: HTTP GET /v1/sessions/{id}/picture (openapi.yaml operationId getSessionPicture)
            Route("GET", "/v1/sessions/{id}/picture", operationID: "getSessionPicture", scope: .sessions, handler: .waiting { context in
                let app = try context.app()
                let id = try Validation.pathSessionID(context)
                let query = try Answers.pictureQuery(context.query, readsRedirect: true)
                guard let pictures else { throw unconfigured() }
                guard query.wantsBytes else {
                    return try Answers.pictureDescription(await pictures.description(sessionID: id, app: app, size: query.size))
                }
                return Answers.picture(
                    try await pictures.picture(
                        sessionID: id, app: app, size: query.size, ifNoneMatch: context.request.headers["If-None-Match"]))
            }),
            /// - Remark: HTTP GET /v1/sessions/{id}/picture/description (openapi.yaml operationId getSessionPictureDescription)
            Route(
                "GET", "/v1/sessions/{id}/picture/description", operationID: "getSessionPictureDescription",
                scope: .sessions,
                handler: .waiting { context in
                    let app = try context.app()
                    let id = try Validation.pathSessionID(context)
                    let query = try Answers.pictureQuery(context.query, readsRedirect: false)
                    guard let pictures else { throw unconfigured() }
                    return try Answers.pictureDescription(await pictures.description(sessionID: id, app: app, size: query.size))
                }),
        ]
    }

    /// 503 `picture_unavailable` for a server built without pictures (route tests).
    static func unconfigured() -> APIError {
        var error = APIError(503, .pictureUnavailable, "Pictures are not set up on this server.")
        error.headers.add("Retry-After", "60")
        return error
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
